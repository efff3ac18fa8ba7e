"""The attention block shared by the four threshold variants in this folder.

Each variant differs only in where the clamp threshold of the attention scores comes from; the
confirm pass measures what that choice costs (``fusionlint check examples/threshold --confirm``).
Small on purpose (4 layers, 2 × 16 tokens × 32) so that it runs in seconds on a CPU; the issue's
reference numbers were measured on an H200 with 32 layers, batch 8 × 128 tokens × 512.
"""

import torch
from torch import nn

LAYERS, BATCH, TOKENS, DIM = 4, 2, 16, 32


class Block(nn.Module):
    def __init__(self, threshold):
        super().__init__()
        self.qkv = nn.Linear(DIM, DIM * 3)
        self.proj = nn.Linear(DIM, DIM)
        self.threshold_of = threshold  # (block, scores) -> the clamp bound

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        scores = q @ k.transpose(-2, -1) / DIM**0.5
        t = self.threshold_of(self, scores)
        scores = scores.clamp(-t, t)
        return x + self.proj(scores.softmax(-1) @ v)


def inputs():
    return (torch.randn(BATCH, TOKENS, DIM),)
