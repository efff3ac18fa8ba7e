import torch


def soft_limit(x):
    if x.abs().max() > 10:
        return x / 10
    return x


def least_squares(a, b):
    return torch.linalg.lstsq(a, b).solution


def anneal(module):
    module.temperature = max(0.5, module.temperature * 0.9)
    return module.temperature
