"""The static pass streams files: no text is kept from reading to linting, so memory stays flat in the
corpus size; a file that changes in between is that file's error, never a mixed-up result."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest

from fusionlint import runner
from fusionlint.config import load_settings
from fusionlint.project.model import Project
from fusionlint.runner import RunOptions, run

BAD = "import torch\nfrom torch import nn\n\n\nclass M(nn.Module):\n    def forward(self, x):\n        return x.sum().item()\n"


def _project(root: Path) -> Path:
    root.mkdir(exist_ok=True)
    (root / "pyproject.toml").write_text("[tool.fusionlint]\n")
    (root / "pkg").mkdir()
    return root


def test_a_file_changed_after_it_was_read_is_its_error_and_the_others_are_checked(tmp_path, monkeypatch):
    root = _project(tmp_path)
    (root / "pkg" / "a.py").write_text(BAD)
    (root / "pkg" / "b.py").write_text(BAD)
    build_model = runner._add_others

    def edit_then_build(*args, **kwargs):  # between the reading pass and the linting pass
        (root / "pkg" / "a.py").write_text(BAD.replace("x.sum()", "x.mean()"))
        return build_model(*args, **kwargs)

    monkeypatch.setattr(runner, "_add_others", edit_then_build)
    outcome = run([str(root / "pkg")], load_settings(root), RunOptions(jobs=1))
    assert [(e.path, e.message) for e in outcome.result.errors] == [
        ("pkg/a.py", "changed while fusionlint was checking it: not checked (run again)")
    ]
    assert {f.path for f in outcome.result.findings} == {"pkg/b.py"}
    assert outcome.result.files_checked == 1


def test_a_file_deleted_after_it_was_read_is_its_error(tmp_path, monkeypatch):
    root = _project(tmp_path)
    (root / "pkg" / "a.py").write_text(BAD)
    build_model = runner._add_others

    def delete_then_build(*args, **kwargs):
        (root / "pkg" / "a.py").unlink()
        return build_model(*args, **kwargs)

    monkeypatch.setattr(runner, "_add_others", delete_then_build)
    outcome = run([str(root / "pkg")], load_settings(root), RunOptions(jobs=1))
    assert [e.path for e in outcome.result.errors] == ["pkg/a.py"]
    assert outcome.result.errors[0].message.startswith("cannot read file:")
    assert outcome.result.findings == []


def _peak(root: Path, files: int) -> int:
    filler = 'TEXT = """\n' + ("x" * 1023 + "\n") * 512 + '"""\n'  # 512 KiB in one token: cheap to parse
    pkg = root / "pkg"
    for n in range(files):
        (pkg / f"m{n:02d}.py").write_text(BAD.replace("M(", f"M{n}(") + filler)
    tracemalloc.start()
    try:
        outcome = run([str(pkg)], load_settings(root), RunOptions(jobs=1))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(outcome.result.findings) == files and not outcome.result.errors
    return peak


def test_peak_memory_is_flat_in_the_number_of_files(tmp_path):
    # 24 more files of 512 KiB (12 MiB more text): a run that kept the texts until the end peaks that
    # much higher; streamed, only their small facts are added.
    small = _peak(_project(tmp_path / "small"), 8)
    large = _peak(_project(tmp_path / "large"), 32)
    assert large - small < 3 * 2**20, f"peak {small / 2**20:.1f} MiB with 8 files, {large / 2**20:.1f} MiB with 32"


# A compiled forward in one file calls a helper of another with a tensor: the helper is compiled and
# its parameter a tensor only through the project model's propagation, which reads the call sites.
FORWARD = (
    "import torch\nfrom torch import nn\nfrom pkg.helpers import scale\n\n\n"
    "class M(nn.Module):\n    def forward(self, x):\n        return scale(x)\n"
)
HELPER = "def scale(t):\n    n = t.sum().item()\n    return t * n\n"


def _cross_file_project(root: Path) -> Path:
    root = _project(root)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "model.py").write_text(FORWARD)
    (root / "pkg" / "helpers.py").write_text(HELPER)
    return root


def _facts(outcome) -> list[tuple]:
    return [(f.path, f.line, f.column, f.code, f.message, f.chain) for f in outcome.result.findings]


def test_a_read_only_run_frees_the_function_bodies_once_propagated_and_finds_the_same(tmp_path, monkeypatch):
    root = _cross_file_project(tmp_path)
    models = []
    drop = Project.drop_bodies

    def recording(self):
        models.append(self)
        drop(self)

    monkeypatch.setattr(Project, "drop_bodies", recording)
    freed = run([str(root / "pkg")], load_settings(root), RunOptions(jobs=1))
    assert len(models) == 1
    functions = [fn for summary in models[0].files.values() for fn in summary.functions.values()]
    assert functions and all(not fn.calls and not fn.returns and not fn.tensor_uses for fn in functions)
    monkeypatch.setattr(Project, "drop_bodies", lambda self: None)  # the same run keeping them
    kept = run([str(root / "pkg")], load_settings(root), RunOptions(jobs=1))
    assert _facts(freed) == _facts(kept)
    assert any(f.path == "pkg/helpers.py" and f.code == "FL101" for f in freed.result.findings)


def test_a_fix_run_keeps_the_bodies(tmp_path, monkeypatch):
    # a fixed text is summarised again, and the propagation then runs again over every file
    root = _cross_file_project(tmp_path)

    def refuse(self):
        raise AssertionError("dropped in a --fix run")

    monkeypatch.setattr(Project, "drop_bodies", refuse)
    outcome = run([str(root / "pkg")], load_settings(root), RunOptions(jobs=1, fix=True, diff=True))
    assert not outcome.result.errors


def test_a_model_without_bodies_refuses_to_propagate_again(tmp_path):
    root = _cross_file_project(tmp_path)
    model = Project()
    for name, text in (("model.py", FORWARD), ("helpers.py", HELPER)):
        model.add(f"pkg/{name}", root / "pkg" / name, text)
    assert model.function_facts("pkg/helpers.py", "scale") is not None
    model.drop_bodies()
    assert model.function_facts("pkg/helpers.py", "scale") is not None  # the facts stay
    model.add("pkg/helpers.py", root / "pkg" / "helpers.py", HELPER + "\n\ndef other():\n    pass\n")
    with pytest.raises(RuntimeError, match="bodies were dropped"):
        model.function_facts("pkg/helpers.py", "scale")
