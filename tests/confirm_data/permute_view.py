"""Confirm-pass test module: FL301 raises in eager, which hides the FL101 break below it."""
import torch
from torch import nn


class Model(nn.Module):
    def forward(self, x):
        h = x.permute(0, 2, 1).view(2, 12)
        return h * h.mean().item()


def example_inputs():
    return (torch.randn(2, 3, 4),)
