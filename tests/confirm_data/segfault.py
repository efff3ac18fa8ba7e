"""Confirm-pass test module: the process dies of SIGSEGV while the model is built."""
import ctypes

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        ctypes.string_at(0)  # reads address 0: SIGSEGV

    def forward(self, x):
        return x + 1


def example_inputs():
    return (torch.randn(2, 4),)
