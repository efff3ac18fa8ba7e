"""Confirm-pass test module: a graph break that the selected rules do not flag (line 13)."""
import torch
from torch import nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        h = self.lin(x)
        torch._dynamo.graph_break()
        return h * h.mean().item()


def example_inputs():
    return (torch.randn(2, 4),)
