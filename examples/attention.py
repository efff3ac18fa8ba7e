"""A small attention block with the patterns fusionlint finds. Run: fusionlint check examples/

Every flagged line costs something measurable under torch.compile (see `fusionlint rule CODE`).
"""

import torch
import torch.nn.functional as F
from torch import nn


class Attention(nn.Module):
    def __init__(self, dim: int = 32, heads: int = 2):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)
        self.threshold = 5.0  # annealed by the training loop below

    def anneal(self):
        self.threshold *= 0.99  # a new Python float each step: recompiles every call

    def forward(self, x):
        b, n, c = x.shape
        qkv = self.qkv(x).view(b, n, 3, self.heads, c // self.heads)
        q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)
        scores = q @ k.transpose(-2, -1).contiguous()
        scores = scores.clamp(-self.threshold, self.threshold)
        if scores.max() > 100:
            print("scores exploded")
        out = F.softmax(scores, dim=-1) @ v
        out = out.transpose(1, 2).view(b, n, c)
        scale = out.abs().mean().item()
        return self.proj(out / scale)


def example_inputs():
    return (torch.randn(4, 16, 32),)


if __name__ == "__main__":
    model = torch.compile(Attention())
    for step in range(3):
        model(*example_inputs())
        model.anneal()
