"""The attention block shared by the four threshold variants in this folder.

Each variant differs only in where the clamp threshold of the attention scores comes from; the
confirm pass measures what that choice costs (``fusionlint check examples/threshold --confirm``).
Two sizes: ``SMALL`` (4 layers, 2 × 16 tokens × 32) runs in seconds on a CPU, for CI; ``REFERENCE``
(32 layers, batch 8 × 128 tokens × 512) is the size of the issue's H200 measurements, used by the
variants in ``examples/threshold_reference/`` (run those on a GPU).
"""

from typing import NamedTuple

import torch
from torch import nn


class Size(NamedTuple):
    layers: int
    batch: int
    tokens: int
    dim: int


SMALL = Size(layers=4, batch=2, tokens=16, dim=32)
REFERENCE = Size(layers=32, batch=8, tokens=128, dim=512)


class Block(nn.Module):
    def __init__(self, threshold, dim=SMALL.dim):
        super().__init__()
        self.dim = dim
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)
        self.threshold_of = threshold  # (block, scores) -> the clamp bound

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        scores = q @ k.transpose(-2, -1) / self.dim**0.5
        t = self.threshold_of(self, scores)
        scores = scores.clamp(-t, t)
        return x + self.proj(scores.softmax(-1) @ v)


def inputs(size=SMALL):
    return (torch.randn(size.batch, size.tokens, size.dim),)
