"""Code under ``if not torch.compiler.is_compiling():`` is never traced (Dynamo takes the other
branch), so no rule about traced code reports it. Found on MONAI 1.6.1: RetinaNet's heads check
``torch.isnan(...).any()`` only in eager mode, and FL102 reported the check as a graph break.
"""

from __future__ import annotations

import textwrap

from fusionlint.config import Settings
from fusionlint.runner import run

BODY = """\
    y = torch.relu(x)
    if torch.isnan(y).any():
        raise ValueError("nan")
    n = int(y.sum())
    idx = torch.nonzero(y)
    t = y.is_inference()
    z = y.permute(0, 2, 1).view(-1)
"""

SOURCE = """\
import torch
from torch import nn


class Guarded(nn.Module):
    def forward(self, x):
        if not torch.compiler.is_compiling():
{guarded}
        return x


class Otherwise(nn.Module):
    def forward(self, x):
        if torch.compiler.is_compiling():
            pass
        else:
{guarded}
        return x


def is_torchdynamo_compiling():
    return torch.compiler.is_compiling()


class EarlyExit(nn.Module):
    def forward(self, x):
        if is_torchdynamo_compiling():
            return x
{plain}
        return x


class LibraryGuard(nn.Module):
    def forward(self, x):
        if not is_torchdynamo_compiling() and x.dim() > 1:
{guarded}
        return x


class Unguarded(nn.Module):
    def forward(self, x):
{plain}
        return x
"""


def _findings(tmp_path):
    text = SOURCE.format(guarded=textwrap.indent(BODY, "        "), plain=textwrap.indent(BODY, "    "))
    path = tmp_path / "m.py"
    path.write_text(text)
    outcome = run([str(path)], Settings(root=tmp_path, select=["ALL"]))
    assert not outcome.internal_errors and not outcome.result.errors
    lines = text.splitlines()
    owner = {}
    cls = None
    for number, line in enumerate(lines, 1):
        if line.startswith("class "):
            cls = line.split()[1].split("(")[0]
        owner[number] = cls
    by_class: dict[str, set[str]] = {"Guarded": set(), "Otherwise": set(), "Unguarded": set(), "EarlyExit": set(),
                                     "LibraryGuard": set(), None: set()}
    for f in outcome.result.findings:
        by_class[owner[f.line]].add(f.code)
    return by_class


def test_eager_only_branch_is_not_reported_as_traced_code(tmp_path):
    found = _findings(tmp_path)
    # the same statements outside the guard: every traced-code rule fires
    assert {"FL101", "FL102", "FL103", "FL112", "FL301"} <= found["Unguarded"]
    # ... also after `if is_compiling(): return` and under a library's wrapper of the test (transformers'
    # `is_torchdynamo_compiling()`) as one operand of `and`
    for cls in ("Guarded", "Otherwise", "EarlyExit", "LibraryGuard"):
        assert not found[cls] & {"FL101", "FL102", "FL103", "FL112"}, (cls, found[cls])


def test_a_runtime_error_in_the_eager_only_branch_is_still_reported(tmp_path):
    # `permute(...).view(...)` raises in eager mode too, so the guard does not make it harmless
    found = _findings(tmp_path)
    assert "FL301" in found["Guarded"] and "FL301" in found["Otherwise"]


# Found on transformers 5.24 (`masking_utils.find_packed_sequence_indices`): the operands after one
# that decides the `and`/`or` under compile are never evaluated by Dynamo (measured, torch 2.13 CPU:
# `if not is_tracing(m) and (m[:, -1] == 0).all():` gave 0 graph breaks).
SHORT_CIRCUIT = """\
import torch
from torch import nn
from transformers.utils.import_utils import is_tracing


class M(nn.Module):
    def forward(self, x, mask):
        if not is_tracing(mask) and (mask[:, -1] == 0).all():
            return None
        y = x.sum().item() if not torch.compiler.is_compiling() else 0.0
        ok = torch.compiler.is_compiling() or bool(mask.any())
        if mask.any() and not torch.compiler.is_compiling():
            x = x * 3
        return x * y * ok
"""


def test_operands_after_one_that_decides_under_compile_are_not_traced(tmp_path):
    path = tmp_path / "m.py"
    path.write_text(SHORT_CIRCUIT)
    outcome = run([str(path)], Settings(root=tmp_path, select=["ALL"]))
    assert not outcome.internal_errors and not outcome.result.errors
    # only the `if` whose tensor operand comes first is evaluated under compile
    assert [(f.code, f.line) for f in outcome.result.findings] == [("FL102", 12)]
