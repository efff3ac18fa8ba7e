"""The static pass streams files: no text is kept from reading to linting, so memory stays flat in the
corpus size; a file that changes in between is that file's error, never a mixed-up result."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

from fusionlint import runner
from fusionlint.config import load_settings
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
    build_model = runner._semantic_model

    def edit_then_build(model, settings, paths=()):  # between the reading pass and the linting pass
        (root / "pkg" / "a.py").write_text(BAD.replace("x.sum()", "x.mean()"))
        return build_model(model, settings, paths)

    monkeypatch.setattr(runner, "_semantic_model", edit_then_build)
    outcome = run([str(root / "pkg")], load_settings(root), RunOptions(jobs=1))
    assert [(e.path, e.message) for e in outcome.result.errors] == [
        ("pkg/a.py", "changed while fusionlint was checking it: not checked (run again)")
    ]
    assert {f.path for f in outcome.result.findings} == {"pkg/b.py"}
    assert outcome.result.files_checked == 1


def test_a_file_deleted_after_it_was_read_is_its_error(tmp_path, monkeypatch):
    root = _project(tmp_path)
    (root / "pkg" / "a.py").write_text(BAD)
    build_model = runner._semantic_model

    def delete_then_build(model, settings, paths=()):
        (root / "pkg" / "a.py").unlink()
        return build_model(model, settings, paths)

    monkeypatch.setattr(runner, "_semantic_model", delete_then_build)
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
