"""Compiled context, tensor inference, screening and cross-file base resolution."""

from __future__ import annotations

import libcst as cst

from fusionlint.analysis.compiled import mark_compiled
from fusionlint.analysis.index import Collector
from fusionlint.analysis.project import ProjectIndex
from fusionlint.semantic.tensors import TensorFacts
from fusionlint.engine import Engine
from fusionlint.registry import all_rules

from tests.helpers import lint

FL101 = all_rules()["FL101"]


def index_of(source: str, project: ProjectIndex | None = None):
    module = cst.parse_module(source)
    index = Collector(frozenset()).collect(module)
    mark_compiled(index, project)
    return index


def test_chain_follows_self_calls_and_module_functions():
    idx = index_of(
        "import torch.nn as nn\n"
        "def norm(x):\n    return x\n"
        "def unused(x):\n    return x\n"
        "class M(nn.Module):\n"
        "    def forward(self, x):\n        return self._mask(x)\n"
        "    def _mask(self, x):\n        return norm(x)\n"
        "    def train_step(self, x):\n        return x\n"
    )
    fns = idx.functions
    assert fns["M.forward"].chain == "M.forward"
    assert fns["M._mask"].chain == "M.forward → self._mask"
    assert fns["norm"].chain == "M.forward → self._mask → norm"
    assert fns["unused"].chain is None
    assert fns["M.train_step"].chain is None


def test_compile_decorator_call_and_autograd_function_are_entry_points():
    idx = index_of(
        "import torch\nfrom torch.autograd import Function\n"
        "@torch.compile(dynamic=True)\ndef a(x):\n    return x\n"
        "def b(x):\n    return x\n"
        "fast_b = torch.compile(b)\n"
        "class Fn(torch.autograd.Function):\n"
        "    @staticmethod\n    def forward(ctx, x):\n        return x\n"
        "    @staticmethod\n    def backward(ctx, g):\n        return g\n"
    )
    assert idx.functions["a"].chain == "a"
    assert idx.functions["b"].chain == "b"
    assert idx.functions["Fn.forward"].kind == "autograd_forward"
    assert idx.functions["Fn.backward"].chain == "Fn.backward"


def test_compiler_disable_stops_the_chain():
    idx = index_of(
        "import torch\nfrom torch import nn\n"
        "@torch.compiler.disable\ndef dbg(x):\n    return x.item()\n"
        "class M(nn.Module):\n    def forward(self, x):\n        return dbg(x)\n"
    )
    assert idx.functions["dbg"].chain is None


def test_base_class_from_another_file_of_the_run():
    project = ProjectIndex()
    project.add_file("base.py", "import torch.nn as nn\nclass MyBase(nn.Module):\n    pass\n")
    source = (
        "from base import MyBase\n"
        "class Block(MyBase):\n    def forward(self, x):\n        return x * x.sum().item()\n"
    )
    project.add_file("block.py", source)
    findings = lint(source, [FL101], path="block.py", project=project)
    assert [(f.line, f.context) for f in findings] == [(4, "Block.forward")]
    # without the other file, Block is not known to be a module: no finding
    alone = ProjectIndex()
    alone.add_file("block.py", source)
    assert lint(source, [FL101], path="block.py", project=alone) == []


def test_base_chain_within_one_file_and_inherited_forward_helpers():
    source = (
        "import torch\nfrom torch import nn\n"
        "class Base(nn.Module):\n    pass\n"
        "class Child(Base):\n    def forward(self, x):\n        return int(x.sum())\n"
    )
    assert [f.line for f in lint(source, [FL101])] == [7]


def test_item_in_training_loop_is_not_a_finding():
    source = (
        "import torch\nfrom torch import nn\n"
        "class M(nn.Module):\n    def forward(self, x):\n        return x * 2\n"
        "def train(model, loader):\n    for batch in loader:\n        loss = model(batch).sum()\n        print(loss.item())\n"
    )
    assert lint(source, [FL101]) == []


def _facts(source: str, qual: str) -> TensorFacts:
    idx = index_of(source)
    return TensorFacts(idx.functions[qual], idx)


def test_tensor_inference():
    source = (
        "import torch\nimport torch.nn.functional as F\nfrom torch import nn\n"
        "class M(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n"
        "        self.lin = nn.Linear(4, 4)\n        self.eps = 1e-5\n"
        "        self.register_buffer('scale', torch.ones(1))\n"
        "        self.w = nn.Parameter(torch.zeros(4))\n"
        "    def forward(self, x, mask=None, dim: int = 1, causal=False):\n"
        "        h = self.lin(x)\n        a = F.relu(h)\n        n = x.shape[0]\n        s = x.size(1)\n"
        "        q, k = h.chunk(2, dim=-1)\n        B, C = x.shape\n        m = h.mean().item()\n"
        "        z = torch.zeros(3)\n        return h\n"
    )
    facts = _facts(source, "M.forward")
    for name in ("x", "mask", "h", "a", "q", "k", "z"):
        assert name in facts.names, name
    for name in ("dim", "causal", "n", "s", "B", "C", "m", "self"):
        assert name not in facts.names, name
    expr = lambda code: cst.parse_expression(code)  # noqa: E731
    assert facts.is_tensor(expr("self.scale")) and facts.is_tensor(expr("self.w"))
    assert not facts.is_tensor(expr("self.eps"))
    assert facts.is_tensor(expr("x > 0")) and not facts.is_tensor(expr("mask is None"))
    assert facts.is_tensor(expr("x.T")) and not facts.is_tensor(expr("x.shape[0]"))
    assert facts.is_tensor(expr("self.lin.weight"))


def test_helper_parameters_need_an_annotation_to_count_as_tensors():
    source = (
        "import torch\nfrom torch import nn\n"
        "class M(nn.Module):\n    def forward(self, x):\n        return self.f(x, 3)\n"
        "    def f(self, x, n):\n        return x\n"
        "    def g(self, x: torch.Tensor, n: int):\n        return x\n"
    )
    assert _facts(source, "M.f").names == set()
    assert _facts(source, "M.g").names == {"x"}


def test_screen_skips_files_without_triggers_or_compiled_code():
    engine = Engine([FL101], ProjectIndex())
    assert engine._screen("x = 1\n") == []  # nothing compiled could live here
    assert engine._screen("def forward(self, x):\n    return x\n") == []  # no trigger substring
    assert engine._screen("def forward(self, x):\n    return x.item()\n") == [FL101]


def test_syntax_error_is_reported_with_line():
    findings, error = Engine([FL101]).lint_source("def forward(:\n    x.item()\n", "bad.py")
    assert findings == [] and error is not None
    assert error.line == 1 and error.path == "bad.py" and "syntax" in error.message


def test_forward_parameters_named_like_configuration_are_not_tensors():
    source = (
        "import torch\nfrom torch import nn\n"
        "class M(nn.Module):\n"
        "    def forward(self, hidden_states, inputs_shape, device, num_heads, cache_position, past_key_values):\n"
        "        return hidden_states\n"
    )
    facts = _facts(source, "M.forward")
    assert facts.names == {"hidden_states", "cache_position"}
    findings = lint(
        "import torch\nfrom torch import nn\nclass M(nn.Module):\n"
        "    def forward(self, x, inputs_shape):\n        return x * int(inputs_shape[1] + 1)\n",
        [FL101],
    )
    assert findings == []


def test_annotations_decide_helper_parameters():
    source = (
        "import torch\nfrom typing import Optional\nfrom torch import nn\n"
        "class M(nn.Module):\n    def forward(self, x):\n        return self.f(x, [x], x, x)\n"
        "    def f(self, a: torch.Tensor, b: list[torch.Tensor], c: Optional[torch.Tensor], d: 'Tensor | None'):\n"
        "        return a\n"
    )
    assert _facts(source, "M.f").names == {"a", "c", "d"}


def test_project_index_knows_disabled_functions_across_files():
    project = ProjectIndex()
    project.add_file(
        "util.py",
        "import torch\n@torch.compiler.disable\ndef log_stats(x):\n    pass\n"
        "def slow(x):\n    return x\nfast = torch._dynamo.disable(slow)\n",
    )
    assert project.disabled_functions == {"log_stats", "fast"}


def test_bindings_record_plain_values_and_mark_the_rest():
    from fusionlint.semantic.bindings import bindings, sole_value

    fn = cst.parse_module(
        "def f(x, *rest):\n    y = x.t()\n    for i in x:\n        pass\n    a, b = 1, 2\n    z: int = 3\n    z += 1\n"
    ).body[0]
    table = bindings(fn)
    code = lambda v: None if v is None else cst.Module([]).code_for_node(v)  # noqa: E731
    assert {k: [code(v) for v in vs] for k, vs in table.items()} == {
        "x": [None], "rest": [None], "y": ["x.t()"], "i": [None], "a": [None], "b": [None], "z": ["3", None],
    }
    assert code(sole_value(table, "y")) == "x.t()"
    assert sole_value(table, "z") is None and sole_value(table, "x") is None
