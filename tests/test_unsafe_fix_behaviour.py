"""The unsafe fixes of FL201/FL203 (buffer) and FL402/FL405 (`.data` write under no_grad) on the programs
whose behaviour they used to change: the fixed code is run with the installed torch, or the fix is
withheld and the finding says why.

- FL402/FL405: a module that runs two forwards and then one backward (a siamese network). A write to
  the parameter itself under `torch.no_grad()` bumps its version counter and eager backward raises; the
  fix keeps `.data`, and the fixed code must run (eager and compiled) with the original's gradients.
- FL201/FL203: a buffer accepts only tensors and is no Python number, so code elsewhere in the run that
  assigns the attribute or needs a number (`round(`, `json.dumps(`, f-strings) withholds the fix.
- The documented precision changes of the buffer (float32, and bfloat16 after `.to()`) are measured.
"""

from __future__ import annotations

import importlib.util
import shutil
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from fusionlint.cli import main

from tests.helpers import need

torch = need("torch", "the fixed code is run with the installed torch (pip install -r requirements-dev.txt)")

REPO = Path(__file__).resolve().parent.parent
FL201_BAD = REPO / "fixtures" / "FL201_mutated_scalar_attribute" / "bad.py"
FL203_BAD = REPO / "fixtures" / "FL203_python_state_mutation_in_forward" / "bad.py"


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _check(*args: str):
    return CliRunner().invoke(main, ["check", *args])


# --------------------------------------------------------------------------- FL402 / FL405

_SIAMESE = '''
import torch
from torch import nn


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(8, 8)

    def forward(self, x):
        {write}
        return self.a(x).tanh()


class Siamese(nn.Module):
    """One encoder used twice, one loss: two forwards before one backward."""

    def __init__(self):
        super().__init__()
        self.enc = Encoder()

    def forward(self, x1, x2):
        return (self.enc(x1) - self.enc(x2)).pow(2).sum()
'''

_WRITES = {
    "FL402": ("self.a.weight.data.clamp_(-0.1, 0.1)", "self.a.weight.clamp_(-0.1, 0.1)"),
    "FL405": ("self.a.weight.data *= 0.5", "self.a.weight.mul_(0.5)"),
}


def _siamese_step(module, backend):
    """Gradients and weight after two forwards and one backward, inputs requiring grad."""
    torch.manual_seed(0)
    model = module.Siamese()
    run = model if backend is None else torch.compile(model, backend=backend)
    torch.manual_seed(1)
    x1 = torch.randn(2, 8, requires_grad=True)
    x2 = torch.randn(2, 8, requires_grad=True)
    run(x1, x2).backward()
    weight = model.enc.a.weight
    return weight.grad.detach().clone(), weight.detach().clone(), x1.grad.detach().clone()


@pytest.mark.parametrize("code", sorted(_WRITES))
def test_data_fix_keeps_two_forwards_one_backward_working(code, tmp_path):
    bad_write, _ = _WRITES[code]
    target = tmp_path / "siamese.py"
    target.write_text(_SIAMESE.format(write=bad_write))
    reference = _siamese_step(_load(target, f"siamese_bad_{code}"), None)  # the original, eager

    result = _check(str(target), "--select", code, "--fix", "--unsafe-fixes")
    fixed = target.read_text()
    assert result.exit_code == 0, result.output
    assert "with torch.no_grad():" in fixed and ".data" in fixed, fixed
    module = _load(target, f"siamese_fixed_{code}")
    torch._dynamo.reset()
    for backend in (None, "aot_eager"):
        got = _siamese_step(module, backend)
        for g, r in zip(got, reference):
            torch.testing.assert_close(g, r)


@pytest.mark.parametrize("code", sorted(_WRITES))
def test_no_grad_write_without_data_raises_after_two_forwards(code, tmp_path):
    """Why the fix keeps `.data` (the claim in the docs): the write to the parameter itself raises."""
    _, plain_write = _WRITES[code]
    target = tmp_path / "plain.py"
    target.write_text(_SIAMESE.format(write=f"with torch.no_grad():\n            {plain_write}"))
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        _siamese_step(_load(target, f"siamese_plain_{code}"), None)


# --------------------------------------------------------------------------- FL201 / FL203

def _project(tmp_path: Path, bad: Path, script: str, extra_model: str = "") -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "pyproject.toml").write_text("[tool.fusionlint]\n")
    (root / "model.py").write_text(bad.read_text() + extra_model)
    (root / "train.py").write_text(textwrap.dedent(script))
    return root


def _run_script(root: Path, monkeypatch) -> None:
    monkeypatch.syspath_prepend(str(root))
    for name in ("model", "train"):
        sys.modules.pop(name, None)
    try:
        _load(root / "train.py", "train")
    finally:
        for name in ("model", "train"):
            sys.modules.pop(name, None)


_FL201_USES = {
    "assigned": ("m.threshold = 3.0\n", "is also assigned at train.py:"),
    "round": ("print(round(m.threshold, 2))\n", "`round(` at train.py:"),
    "fstring": ('print(f"threshold={m.threshold}")\n', "an f-string at train.py:"),
    "json": ('import json\nprint(json.dumps({"t": m.threshold}))\n', "`json.dumps(` at train.py:"),
}


@pytest.mark.parametrize("case", sorted(_FL201_USES))
def test_buffer_fix_withheld_when_another_file_needs_a_number(case, tmp_path, monkeypatch):
    use, reason = _FL201_USES[case]
    script = "import torch\nfrom model import Model\nm = Model()\nm(torch.randn(2, 4, 16))\nm.anneal()\n" + use
    root = _project(tmp_path, FL201_BAD, script)
    before = (root / "model.py").read_text()
    monkeypatch.chdir(root)
    result = _check(".", "--select", "FL201", "--fix", "--unsafe-fixes")
    assert result.exit_code == 1, result.output  # the finding stays
    assert "no automatic fix" in result.output and reason in result.output, result.output
    assert (root / "model.py").read_text() == before
    _run_script(root, monkeypatch)  # the program still runs as written


def test_buffer_fix_would_break_a_file_outside_the_run(tmp_path, monkeypatch):
    """The check is needed: with train.py outside the run the fix is applied, and train.py breaks."""
    script = "import torch\nfrom model import Model\nm = Model()\nprint(round(m.threshold, 2))\nm.threshold = 3.0\n"
    root = _project(tmp_path, FL201_BAD, script)
    monkeypatch.chdir(root)
    result = _check("model.py", "--select", "FL201", "--fix", "--unsafe-fixes")
    assert result.exit_code == 0, result.output
    assert "register_buffer" in (root / "model.py").read_text()
    with pytest.raises(TypeError, match="__round__"):
        _run_script(root, monkeypatch)


def test_buffer_fix_withheld_for_a_subclass_assignment(tmp_path, monkeypatch):
    subclass = "\n\nclass Strict(Model):\n    def __init__(self):\n        super().__init__()\n        self.threshold = 3.0\n"
    root = _project(tmp_path, FL201_BAD, "from model import Strict\nStrict()\n", extra_model=subclass)
    monkeypatch.chdir(root)
    result = _check(".", "--select", "FL201", "--fix", "--unsafe-fixes")
    assert "no automatic fix: `threshold` is also assigned by `self.threshold = 3.0` in another class" in result.output
    assert "register_buffer" not in (root / "model.py").read_text()
    _run_script(root, monkeypatch)


def test_counter_fix_withheld_for_json_dumps(tmp_path, monkeypatch):
    script = (
        "import json, torch\nfrom model import Model\nm = Model()\nm(torch.randn(4, 16))\n"
        "print(json.dumps(m.num_calls))\n"
    )
    root = _project(tmp_path, FL203_BAD, script)
    monkeypatch.chdir(root)
    result = _check(".", "--select", "FL203", "--fix", "--unsafe-fixes")
    assert "no automatic fix: `json.dumps(` at train.py:5 needs `num_calls` as a Python number" in result.output
    assert "register_buffer" not in (root / "model.py").read_text()
    _run_script(root, monkeypatch)


def test_counter_fix_still_offered_when_nothing_else_uses_it(tmp_path, monkeypatch):
    root = _project(tmp_path, FL203_BAD, "import torch\nfrom model import Model\nm = Model()\nm(torch.randn(4, 16))\n")
    monkeypatch.chdir(root)
    result = _check(".", "--select", "FL203", "--fix", "--unsafe-fixes")
    assert result.exit_code == 0, result.output
    assert "self.num_calls.add_(1)" in (root / "model.py").read_text()
    _run_script(root, monkeypatch)


# --------------------------------------------------------------------------- precision (documented)

def _annealed_outputs(module, dtype):
    torch.manual_seed(0)
    model = module.Model().to(dtype)
    outs = []
    for _ in range(10):
        with torch.no_grad():
            outs.append(model(module.example_inputs()[0].to(dtype)).float())
        model.anneal()
    return outs


def test_buffer_fix_precision_is_what_the_docs_say(tmp_path):
    target = tmp_path / "fixed201.py"
    shutil.copy(FL201_BAD, target)
    assert _check(str(target), "--select", "FL201", "--fix", "--unsafe-fixes").exit_code == 0
    bad, fixed = _load(FL201_BAD, "fl201_bad_precision"), _load(target, "fl201_fixed_precision")

    def worst(dtype):
        pairs = zip(_annealed_outputs(bad, dtype), _annealed_outputs(fixed, dtype))
        return max((a - b).abs().max().item() for a, b in pairs)

    # FL201's fix safety: float32 buffer vs Python float: up to 3.6e-7; after .to(bfloat16): up to 2.9e-3
    assert worst(torch.float32) < 1e-6
    assert 1e-3 < worst(torch.bfloat16) < 5e-3
