"""Confirm-pass test module: runs, and breaks the graph at the flagged line."""
import torch
from torch import nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        h = self.lin(x)
        return h * h.mean().item()


def example_inputs():
    return (torch.randn(2, 4),)
