"""A module built in compiled code: the call graph follows ``Cls(...)`` to its ``__init__`` (same file and
across files) and methods of ``nn.ModuleList`` elements, and FL112 reports the lines where Dynamo breaks
inside that ``__init__`` (transformers' big_bird: ``set_attention_type`` called from forward on each layer
builds a new ``BigBirdSelfAttention``).

The static tests lint small projects as the CLI does. The measured test runs the same project under
``torch.compile`` (backend "eager", torch 2.13 CPU) and asserts that the flagged lines are exactly the
break sites Dynamo records in the file that defines the module.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

from tests.helpers import need
from tests.test_semantic_patterns import HEAD, lint, project

ATTN = HEAD + """
class SelfAttention(nn.Module):
    def __init__(self, d, layer_idx=None):
        super().__init__()
        self.heads = 2
        self.query = nn.Linear(d, d)
        self.key = nn.Linear(d, d)
        self.layer_idx = layer_idx

    def forward(self, x):
        return self.query(x) + self.key(x)
"""

# big_bird's shape: forward -> for layer in self.layers: layer.set_type(...) -> Attention.set_type -> SelfAttention(...)
MODEL = HEAD + """
from .attn import SelfAttention


class Layer(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.attn = SelfAttention(d)
        self.kind = "sparse"

    def set_type(self, value, layer_idx=None):
        if value == self.kind:
            return
        self.kind = value
        fresh = SelfAttention(8, layer_idx=layer_idx)
        fresh.query = self.attn.query
        fresh.key = self.attn.key
        self.attn = fresh

    def forward(self, x):
        return self.attn(x)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([Layer(8) for _ in range(2)])

    def forward(self, x):
        if x.shape[1] < 100:
            for i, layer in enumerate(self.layers):
                layer.set_type("full", layer_idx=i)
        for layer in self.layers:
            x = layer(x)
        return x


def example_inputs():
    return (torch.randn(2, 8),)
"""

# lines of models/attn.py where Dynamo breaks (measured, see the test below)
SUPER_INIT_LINE, FIRST_LINEAR_LINE = 5, 7


def _files() -> dict[str, str]:
    return {"models/__init__.py": "", "models/attn.py": ATTN, "models/net.py": MODEL}


def test_cross_file_constructor_through_modulelist_elements(tmp_path):
    root = project(tmp_path, _files())
    found = [f for f in lint(root) if f.code == "FL112"]
    assert [(f.path, f.line) for f in found] == [("models/attn.py", SUPER_INIT_LINE), ("models/attn.py", FIRST_LINEAR_LINE)]
    assert found[0].context == "Net.forward → Layer.set_type → models.attn.SelfAttention.__init__"
    assert "GB0119" in found[0].message and "GB0264" in found[1].message
    # the construction site is not a break line of its own: no finding there
    assert not [f for f in found if f.path == "models/net.py"]


def test_init_built_only_in_init_is_not_compiled(tmp_path):
    """The same modules, but nothing compiled builds one: ``__init__`` stays out of compiled context."""
    files = _files()
    files["models/net.py"] = files["models/net.py"].replace(
        'layer.set_type("full", layer_idx=i)', "x = x + i"
    )
    root = project(tmp_path, files)
    assert not [f for f in lint(root) if f.path == "models/attn.py"]


def test_subscripted_element_method_is_followed(tmp_path):
    files = _files()
    files["models/net.py"] = files["models/net.py"].replace(
        'for i, layer in enumerate(self.layers):\n                layer.set_type("full", layer_idx=i)',
        'self.layers[0].set_type("full", layer_idx=0)',
    )
    assert 'self.layers[0].set_type' in files["models/net.py"]
    root = project(tmp_path, files)
    found = [f for f in lint(root) if f.code == "FL112"]
    assert [(f.path, f.line) for f in found] == [("models/attn.py", SUPER_INIT_LINE), ("models/attn.py", FIRST_LINEAR_LINE)]


def test_same_file_constructor_in_forward(tmp_path):
    text = ATTN + """

class Net(nn.Module):
    def forward(self, x):
        return SelfAttention(8)(x)
"""
    root = project(tmp_path, {"m.py": text})
    found = [f for f in lint(root) if f.code == "FL112"]
    assert [(f.path, f.line) for f in found] == [("m.py", SUPER_INIT_LINE), ("m.py", FIRST_LINEAR_LINE)]
    assert found[0].context == "Net.forward → SelfAttention.__init__"


@pytest.mark.slow
def test_flagged_lines_are_the_measured_break_sites(tmp_path):
    need("torch", "the break sites are measured under torch.compile")
    import torch

    from fusionlint.confirm.measure import isolated_torch_config, measure

    root = project(tmp_path, _files())
    flagged = {(f.path, f.line) for f in lint(root) if "graph-break" in f.effects}
    sys.path.insert(0, str(root))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        net = importlib.import_module("models.net")
        attn = root / "models/attn.py"
        with isolated_torch_config():
            result = measure(net.Net, net.example_inputs, device="cpu", user_files=[str(attn), str(root / "models/net.py")],
                             compile_kwargs={"backend": "eager"})
    finally:
        torch.set_num_threads(threads)
        sys.path.remove(str(root))
        for name in [n for n in sys.modules if n == "models" or n.startswith("models.")]:
            del sys.modules[name]
    assert result.eager_ok and result.compiled_ok, (result.eager_error, result.compiled_error)
    measured = {(s.gb, s.line) for s in result.break_sites if s.file and Path(s.file).resolve() == attn.resolve()}
    assert measured == {("GB0119", SUPER_INIT_LINE), ("GB0264", FIRST_LINEAR_LINE)}, measured
    assert {line for _, line in measured} == {line for path, line in flagged if path == "models/attn.py"}
    # nothing breaks in net.py at a line of its own (the innermost frame of every break is in attn.py)
    assert not {(s.gb, s.line) for s in result.break_sites if s.file and Path(s.file).resolve() == (root / "models/net.py").resolve()}
