import torch
from torch import nn

from . import helpers as _helpers
from .helpers import anneal, least_squares

# Bound at run time: no static analysis follows this, so the break inside it is the confirm pass's
# to find (the project model does see `from .helpers import soft_limit`).
soft_limit = getattr(_helpers, "soft_limit")


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
