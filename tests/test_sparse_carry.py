"""A sparse tensor that a breaking call hands back cannot enter the frame Dynamo resumes in (FL112).

Measured with torch 2.13 CPU (PyG 2.8's ASAPooling in the recall bench, and the module below): after
``A = to_coo(...)`` breaks, the resumed frame holds ``A``; at its next graph break (``S = to_coo(...)``,
which breaks too) Dynamo must wrap every live local and fails on the sparse one (GB0015 "Attempted to wrap
sparse Tensor"), then runs the rest of the function eagerly: ``A.to_sparse_csr()`` records no break there.
A function called from that eager code is still compiled as a frame of its own.
"""

from __future__ import annotations

from pathlib import Path

from tests.helpers import need
from tests.test_semantic_patterns import lint

MODULE = '''import torch
from torch import nn


def to_coo(idx, v, n):
    return torch.sparse_coo_tensor(idx, v, (n, n))


def first(a):
    if a.layout == torch.sparse_coo:
        return a._values()
    return a.values()


class Model(nn.Module):
    def forward(self, x, idx):
        v = x.relu()
        A = to_coo(idx, v, 4)
        y = x * 2
        z = y + 1
        S = to_coo(idx, v, 4)
        w = A.to_sparse_csr()
        q = first(S)
        return y, z, w, q


def example_inputs():
    return (torch.arange(4.0), torch.tensor([[0, 1, 2, 3], [1, 2, 3, 0]]))
'''


def _line(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def test_the_next_break_after_a_returned_sparse_tensor_is_reported_and_what_follows_runs_eagerly(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (tmp_path / "model.py").write_text(MODULE)  # as written: project() would drop its blank lines
    found = {}
    for f in lint(tmp_path, select="FL112"):
        found.setdefault(f.line, []).append(f.message)
    ctor, second, convert, read = (
        _line(MODULE, s) for s in ("torch.sparse_coo_tensor", "S = to_coo", "A.to_sparse_csr()", "q = first(S)")
    )
    assert set(found) == {ctor, second, convert, read}
    assert "`A` holds the sparse tensor that `to_coo(...)` returns at line 18" in found[second][0]
    assert "not today" not in found[second][0]
    for line in (convert, read):  # after the frame ends: they break only once line `second` no longer does
        assert all(f"the graph break at line {second} before it leaves a sparse tensor" in m for m in found[line])
    # the statements between the two calls neither read `A` nor break: nothing there
    assert _line(MODULE, "y = x * 2") not in found


def test_torch_records_the_wrap_failure_at_the_next_break_and_none_after_it(tmp_path):
    need("torch", "compiles the module to measure the fact the rule rests on")
    from tests.test_fixture_effects import load_module, measure_module

    path = tmp_path / "sparse_carry.py"
    path.write_text(MODULE, encoding="utf-8")
    measured = measure_module(load_module(path), path)
    assert measured.eager_ok, measured.eager_error
    sites = {(s.line, s.reason) for s in measured.break_sites if s.file and Path(s.file).resolve() == path.resolve()}
    lines = {line for line, _ in sites}
    assert (_line(MODULE, "S = to_coo"), "Attempted to wrap sparse Tensor") in sites
    assert _line(MODULE, "torch.sparse_coo_tensor") in lines
    assert _line(MODULE, "y = x * 2") not in lines and _line(MODULE, "z = y + 1") not in lines
    assert _line(MODULE, "A.to_sparse_csr()") not in lines  # run eagerly
    assert _line(MODULE, "q = first(S)") not in lines
    assert any(line in (_line(MODULE, "if a.layout"), _line(MODULE, "return a._values()")) for line in lines)  # its own frame
