"""Confirm-pass test module: the model allocates more than the worker's memory cap (3 GiB buffer)."""
import torch
from torch import nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("huge", torch.ones(3 * 1024**3 // 4))

    def forward(self, x):
        return x * x.mean().item()


def example_inputs():
    return (torch.randn(2, 4),)
