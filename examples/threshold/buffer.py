"""Threshold: a registered buffer (a tensor). One graph, no break, no recompile."""

import torch
from torch import nn

from examples.threshold._block import SMALL, Block, inputs


class Model(nn.Module):
    def __init__(self, size=SMALL):
        super().__init__()
        self.register_buffer("threshold", torch.tensor(5.0))
        self.blocks = nn.ModuleList(Block(lambda blk, s: self.threshold, size.dim) for _ in range(size.layers))

    def forward(self, x):
        for blk in self.blocks:
            x = blk(x)
        return x


def example_inputs():
    return inputs()
