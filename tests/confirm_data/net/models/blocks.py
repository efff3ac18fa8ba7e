import torch
from torch import nn

from .helpers import anneal, least_squares, soft_limit


class Gate(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        h = self.proj(x)
        h = soft_limit(h)
        return torch.relu(h)


class Solver(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, a, b):
        h = self.proj(a)
        return least_squares(h, b) * 2


class Annealed(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.temperature = 4.0

    def forward(self, x):
        t = anneal(self)
        return self.proj(x) / t
