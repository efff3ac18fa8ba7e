"""Confirm-pass test module: no example; inputs are inferred from the first Linear layer."""
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(6, 3)

    def forward(self, x):
        h = self.proj(x)
        return h * h.mean().item()


class NeedsArgs(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        h = self.proj(x)
        return h * h.mean().item()
