"""An __init__ left out of libcst's text (fusionlint.sparse) tells the per-file pass exactly what the
parsed __init__ would: the class facts the collector builds from libcst's tree equal the ones the
sparse plan describes from CPython's tree (fusionlint.analysis.init_facts)."""

from __future__ import annotations

import ast

import libcst as cst

from fusionlint import outline, sparse
from fusionlint.analysis.index import Collector
from fusionlint.project.model import Project
from tests.test_sparse import _lint_all_ways

SOURCE = '''\
import torch
from torch import nn
import torch.jit as tj


class Net(nn.Module):
    def __init__(self, eps=1e-6, k: int = 3, *, neg=-2, flag=True, n: "int" = 4, scale: float = 1, cfg=None):
        super().__init__()
        self.eps = eps
        self.k = k
        self.neg = neg
        self.flag = flag
        self.n = n
        self.scale = scale
        self.t = 5.0
        self.i = -3
        self.plus = +3
        self.b = True
        self.none = None
        self.items = []
        self.table = {}
        self.w = nn.Parameter(torch.ones(2))
        self.lin = nn.Linear(2, 2)
        self.lin = nn.Conv1d(2, 2, 1)
        self.buf = torch.zeros(3)
        self.dev = torch.device("cpu")
        self.scripted = tj.script(nn.Linear(2, 2))
        self.gen = torch.Generator().manual_seed(0)
        self.wrapped = torch.compiler.disable(nn.Linear(2, 2))
        self.a = self.c = 2
        self.i += 1
        self.ann: int = 7
        x, self.tup = 1, 2
        cfg.depth = 3
        self.register_buffer("mask", torch.ones(2))
        self.register_buffer("con" "cat", torch.ones(2))
        self.register_parameter(name="p", param=None)
        self.register_buffer(*("s",))
        if eps > 0:
            self.cond = Helper()

        def inner():
            self.inner_attr = 3

        inner()

    def reset(self):
        self.t = 0.5
        self.register_buffer("late", torch.ones(1))

    def forward(self, x):
        return x


class Helper:
    pass
'''

FIELDS = ("scalar_attrs", "int_attrs", "container_attrs", "params", "buffers", "tensor_attrs", "submodules",
          "init_writes", "init_params")


def _facts(index, name: str) -> dict:
    cls = index.classes[name]
    out = {f: getattr(cls, f) for f in FIELDS}
    out["write_methods"] = cls.write_methods()
    return out


def _plan(source: str):
    model = Project()
    model.add("m.py", None, source)
    return sparse.plan(source, outline.outline_of(ast.parse(source), source, 10_000), model, "m.py", ())


def test_a_left_out_init_gives_the_class_the_facts_libcst_would():
    full = Collector(frozenset()).collect(cst.parse_module(SOURCE))
    plan = _plan(SOURCE)
    assert {"Net.__init__", "Net.reset"} <= {u.name for u in plan.blanked}  # the described path is taken
    index = Collector(frozenset()).collect(cst.parse_module(plan.parsed_text()))
    inexact = sparse.apply_facts(index, plan)
    assert not inexact.reasons
    expected, got = _facts(full, "Net"), _facts(index, "Net")
    for name in expected:
        assert got[name] == expected[name], name
    # a few of them spelled out, so that the comparison cannot pass on two empty tables
    assert expected["scalar_attrs"] == {"t": "float", "i": "int", "a": "int", "c": "int", "ann": "int"}
    assert expected["submodules"] == {"lin": "torch.nn.Conv1d", "cond": "Helper"}  # the last constructor counts
    assert expected["tensor_attrs"] == {"buf"} and expected["container_attrs"] == {"items": "list", "table": "dict"}
    assert expected["buffers"] == {"mask", "late"} and expected["params"] == {"w", "p"}
    assert expected["init_params"]["k"] == ("int", "int") and expected["init_params"]["n"] == ("other", "int") and expected["init_params"]["neg"] == (None, "int")
    assert expected["write_methods"]["t"] == ["__init__", "reset"]


def test_asking_for_the_statements_of_a_left_out_write_makes_the_sparse_parse_inexact():
    plan = _plan(SOURCE)
    index = Collector(frozenset()).collect(cst.parse_module(plan.parsed_text()))
    inexact = sparse.apply_facts(index, plan)
    net = index.classes["Net"]
    assert net.self_attr_writes.get("forward_only") is None and not inexact.reasons  # nothing left out writes it
    net.writes_outside_init("eps")  # only __init__ writes eps: nothing missing
    assert not inexact.reasons
    net.writes_outside_init("t")  # reset, left out, writes t: its statement is not in the parsed tree
    assert inexact.reasons
    inexact.reasons.clear()
    net.self_attr_writes.get("eps")  # the left-out __init__'s statements
    assert inexact.reasons


RULES_READ_INIT = '''\
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self, threshold=5.0, heads: int = 2):
        super().__init__()
        self.threshold = threshold
        self.heads = heads
        self.proj = nn.Linear(2, 2)
        self.gen = torch.Generator().manual_seed(0)

    def forward(self, x):
        self.threshold = max(1.0, self.threshold * 0.99)
        noise = torch.randn(x.shape, generator=self.gen)
        y = self.proj(x).clamp(max=self.threshold) + noise
        return y.view(-1, self.heads)


class Scripted(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.jit.script(nn.Linear(2, 2))

    def forward(self, x):
        return self.proj(x)
'''


# FL203: threshold is a float (__init__'s default) that forward changes; FL112: proj is torch.jit.script'd
EXPECTED_CODES = ["FL112", "FL203"]


def test_findings_that_read_init_are_the_same_with_init_left_out(tmp_path, monkeypatch):
    (tmp_path / "model.py").write_text(RULES_READ_INIT)
    runs = _lint_all_ways(tmp_path, monkeypatch)
    assert runs["sparse"] == runs["full"]
    codes = sorted({row[5] for row in runs["full"][0][0]})
    assert codes == EXPECTED_CODES, codes
