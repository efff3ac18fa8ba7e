"""fusionlint.api: the library API the CLI's stdin mode and the language server are built on."""

from __future__ import annotations

from pathlib import Path

import pytest

from fusionlint.analysis.project import ProjectIndex
from fusionlint.api import ConfigError, Linter, fix_text, lint_paths, lint_text, load_settings

BREAK = """\
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return self._scale(x)

    def _scale(self, x: torch.Tensor):
        s = x.mean().item()
        return x * s
"""

VIEW = """\
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x.permute(0, 2, 1).view(-1)
"""


def _project(tmp_path: Path, table: str = "") -> Path:
    (tmp_path / "pyproject.toml").write_text(f"[tool.fusionlint]\n{table}")
    return tmp_path


def test_lint_text_reports_the_compiled_chain_as_frames(tmp_path):
    _project(tmp_path)
    result = lint_text(BREAK, tmp_path / "m.py")
    assert result.error is None
    (finding,) = [f for f in result.findings if f.code == "FL101"]
    assert (finding.path, finding.line, finding.column) == ("m.py", 10, 13)
    assert finding.chain == ("Model.forward", "self._scale")
    assert finding.context == "Model.forward → self._scale"  # the display form is kept


def test_lint_text_uses_the_config_and_per_file_ignores_of_its_path(tmp_path):
    _project(tmp_path, 'per-file-ignores = { "tests/*" = ["FL101"] }\n')
    assert [f.code for f in lint_text(BREAK, tmp_path / "src" / "m.py").findings] == ["FL101"]
    assert lint_text(BREAK, tmp_path / "tests" / "m.py").findings == []


def test_lint_text_reports_syntax_errors_empty_and_surrogates_without_raising(tmp_path):
    _project(tmp_path)
    broken = lint_text("def f(:\n", tmp_path / "b.py")
    assert broken.findings == [] and broken.error is not None and broken.error.line == 1
    assert lint_text("", tmp_path / "e.py").findings == []
    odd = lint_text('x = "\udcff"\n' + BREAK, tmp_path / "s.py")
    assert odd.error is not None and "surrogate" in odd.error.message


def test_fix_text_returns_the_fixed_text_and_what_is_left(tmp_path):
    _project(tmp_path)
    new_text, left = fix_text(VIEW, tmp_path / "m.py")
    assert ".reshape(-1)" in new_text and ".view(" not in new_text
    assert left == []
    result = fix_text(BREAK, tmp_path / "m.py")
    assert result.applied == 0 and result.text == BREAK


def test_fix_text_leaves_unsafe_fixes_unless_asked(tmp_path):
    _project(tmp_path, 'select = ["FL101"]\n')
    safe = fix_text(BREAK, tmp_path / "m.py")
    assert [f.code for f in safe.findings] == ["FL101"]


def test_lint_paths_matches_the_cli_result(tmp_path):
    _project(tmp_path)
    (tmp_path / "m.py").write_text(BREAK)
    (tmp_path / "bad.py").write_text("def f(:\n")
    result = lint_paths([tmp_path])
    assert [f.code for f in result.findings] == ["FL101"]
    assert [e.path for e in result.errors] == ["bad.py"]
    # as in the CLI's summary: 2 files found, 1 checked (the other could not be)
    assert (result.files_found, result.files_checked) == (2, 1)


def test_invalid_config_raises_config_error(tmp_path):
    _project(tmp_path, 'select = ["NOPE"]\n')
    with pytest.raises(ConfigError):
        lint_text(BREAK, tmp_path / "m.py")


def test_linter_sees_bases_from_other_files_and_forgets_removed_ones(tmp_path):
    settings = load_settings(_project(tmp_path))
    project = ProjectIndex()
    project.update_file("base.py", "import torch.nn as nn\nclass MyBase(nn.Module):\n    pass\n")
    linter = Linter(settings, project)
    source = BREAK.replace("nn.Module", "MyBase")
    assert [f.code for f in linter.lint(source, tmp_path / "m.py").findings] == ["FL101"]
    project.update_file("base.py", "class MyBase:\n    pass\n")  # the base is no longer a module
    assert linter.lint(source, tmp_path / "m.py").findings == []
    project.remove_file("base.py")
    assert "MyBase" not in project.class_bases


def test_project_index_update_replaces_a_files_facts_exactly():
    project = ProjectIndex()
    project.update_file("a.py", "import torch\n@torch.compiler.disable\ndef slow(x):\n    pass\nm.thr = 1\n")
    project.update_file("b.py", "import torch\n@torch.compiler.disable\ndef slow(x):\n    pass\n")
    project.update_file("a.py", "\n\nm.thr = 2\n")
    assert project.disabled_functions == {"slow"}  # b.py still declares it
    assert project.attribute_writes["thr"] == [("a.py", 3)]
    project.remove_file("b.py")
    assert project.disabled_functions == set()
