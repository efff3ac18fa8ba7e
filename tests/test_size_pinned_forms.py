"""FL210's forms beyond `.is_integer()`: a Python int that torch.compile must know, computed from a size.

From the recall bench (2026-12-05 sets): mambapy's parallel scan loops `range(int(math.log2(L)) - 2)`,
vit-pytorch's RvT asks `torch.linspace(..., steps=int(sqrt(n)))`, ring-attention-pytorch splits into
buckets of `min(seq_len, bucket_size)`, and TabNet (the mix set) chunks a batch into
`int(np.ceil(batch / virtual_batch_size))` ghost batches. The static test asserts where FL210 reports; the torch test
compiles the same models, calls each with four sequence lengths (batch sizes for the ghost batches), and asserts that the failed guards
name exactly those lines (every other recompile is an input's shape, which names no line).
"""

from __future__ import annotations

from tests.test_frame_split import _guard_lines, _recompiles
from tests.test_semantic_patterns import HEAD, at, lint, project

MODELS = HEAD + """
import math
from math import sqrt

import numpy as np


class LogSteps(nn.Module):
    def forward(self, x):
        L = x.size(1)
        num_steps = int(math.log2(L))
        for _ in range(num_steps - 2):
            x = x * 2
        for _ in range(num_steps - 3):
            x = x + 1
        return x


class SqrtGrid(nn.Module):
    def forward(self, x):
        n = int(sqrt(x.shape[1]))
        return x + torch.linspace(-1.0, 1.0, steps=n).sum()


class Buckets(nn.Module):
    def forward(self, x, bucket_size: int = 8):
        bucket_size = min(x.shape[1], bucket_size)
        pieces = [c.sum(1) for c in x.split(bucket_size, dim=1)]
        again = [c.sum(1) for c in x.split(bucket_size, dim=1)]
        return torch.stack(pieces).sum(0) + torch.stack(again).sum(0)


class GhostBatches(nn.Module):
    def forward(self, x):
        chunks = x.chunk(int(np.ceil(x.shape[0] / 4)), 0)
        return torch.stack([c.sum(0) for c in chunks]).sum(0)


class Halves(nn.Module):
    def forward(self, x):
        a, b = x.split(x.shape[1] // 2, dim=1)
        n = x.shape[1] // 4
        return a + b + n
"""

# `range(num_steps - 2)`, `torch.linspace(...)`, the first split by the capped bucket size and the chunk count
# from numpy's ceil of the batch size; not the
# second loop over `num_steps` nor the second split by the bucket size (the first ones' guards decide
# them), nor half of a size (the count stays 2) or plain int arithmetic
EXPECTED = [("models.py", 13), ("models.py", 23), ("models.py", 29), ("models.py", 36)]
LENGTHS = (16, 32, 64, 128)


def test_fl210_lines(tmp_path):
    root = project(tmp_path, {"models.py": MODELS})
    assert sorted(at(lint(root), "FL210")) == EXPECTED


def test_fl210_lines_are_the_guards_torch_recompiles_on(tmp_path):
    path = project(tmp_path, {"models.py": MODELS}) / "models.py"
    inputs = {name: [(2, n) for n in LENGTHS] for name in ("LogSteps", "SqrtGrid", "Buckets", "Halves")}
    inputs["GhostBatches"] = [(n, 4) for n in (8, 12, 16, 20)]  # TabNet's ghost batches: the batch size varies
    records = _recompiles(path, inputs)
    assert _guard_lines(records) == EXPECTED, records


def test_a_method_called_on_its_class_is_in_the_call_graph(tmp_path):
    # mambapy's `PScan.forward` (an autograd.Function) calls `PScan.pscan(A, X)`, a staticmethod: its
    # parameters are the forward's tensors, and its loop is FL210's (and its `.item()` FL108's)
    root = project(tmp_path, {"scan.py": HEAD + """
        import math


        class PScan(torch.autograd.Function):
            @staticmethod
            def pscan(A, X):
                B, D, L, _ = A.size()
                for _ in range(int(math.log2(L)) - 2):
                    X = X * 2
                return X.sum().item()

            @staticmethod
            def forward(ctx, A_in, X_in):
                return PScan.pscan(A_in.clone(), X_in.clone())
        """})
    findings = lint(root)
    assert at(findings, "FL210") == [("scan.py", 10)]
    assert at(findings, "FL108") == [("scan.py", 12)]
    chain = next(f for f in findings if f.code == "FL210").context
    assert chain == "PScan.forward → PScan.pscan", chain
