import torch

from .blocks import Annealed, Gate, Solver


def make_gate():
    return Gate(4), (torch.randn(2, 4),)


def make_solver():
    return Solver(4), (torch.randn(6, 4), torch.randn(6, 2))


def make_annealed():
    return Annealed(4), (torch.randn(2, 4),)
