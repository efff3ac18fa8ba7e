"""`fusionlint check -` / `--stdin-filename`: the editor and pipe entry point (Ruff's behaviour)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

BAD_VIEW = (
    "import torch\nfrom torch import nn\n\n\n"
    "class Model(nn.Module):\n"
    "    def forward(self, x):\n"
    "        return x.permute(0, 2, 1).view(x.shape[0], -1)\n"
)


def check(args: list[str], data: bytes, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "fusionlint.cli", "check", *args],
        input=data,
        capture_output=True,
        cwd=cwd,
        timeout=60,
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text('[tool.fusionlint]\nper-file-ignores = { "gen/*" = ["FL301"] }\n')
    return tmp_path


def test_reports_findings_under_the_stdin_filename(project):
    done = check(["--stdin-filename", "src/m.py", "-"], BAD_VIEW.encode(), project)
    assert done.returncode == 1
    out = done.stdout.decode()
    assert "src/m.py:7:16: FL301" in out
    assert "x.permute(0, 2, 1).view(x.shape[0], -1)" in out  # the excerpt comes from stdin


def test_stdin_filename_alone_reads_stdin_and_applies_per_file_ignores(project):
    done = check(["--stdin-filename", "gen/m.py"], BAD_VIEW.encode(), project)
    assert done.returncode == 0, done.stderr
    assert not list(project.rglob("m.py"))  # nothing was written


def test_fix_prints_the_fixed_source_and_nothing_else_on_stdout(project):
    (project / "m.py").write_text(BAD_VIEW)
    done = check(["--fix", "--stdin-filename", "m.py", "-"], BAD_VIEW.encode(), project)
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode() == BAD_VIEW.replace(".view(", ".reshape(")
    assert (project / "m.py").read_text() == BAD_VIEW  # the file on disk is not touched


def test_fix_keeps_the_encoding_and_reports_what_is_left_on_stderr(project):
    source = "# -*- coding: latin-1 -*-\n# caf\xe9\n" + BAD_VIEW + "        s = x.sum().item()\n"
    done = check(["--fix", "--stdin-filename", "m.py", "-"], source.encode("latin-1"), project)
    assert done.returncode == 1  # FL101 has no fix and is left
    assert done.stdout == source.replace(".view(", ".reshape(").encode("latin-1")
    assert "FL101" in done.stderr.decode()


def test_fix_on_a_syntax_error_echoes_the_source_unchanged(project):
    done = check(["--fix", "-"], b"def f(:\n", project)
    assert done.returncode == 1
    assert done.stdout == b"def f(:\n"
    assert "FL000" in done.stderr.decode() and "syntax error" in done.stderr.decode()


def test_diff_and_json(project):
    done = check(["--diff", "--stdin-filename", "m.py", "-"], BAD_VIEW.encode(), project)
    assert done.returncode == 1
    assert "-        return x.permute(0, 2, 1).view(x.shape[0], -1)" in done.stdout.decode()
    done = check(["--format", "json", "-"], BAD_VIEW.encode(), project)
    doc = json.loads(done.stdout)
    assert [(f["path"], f["code"]) for f in doc["findings"]] == [("-", "FL301")]


def test_undecodable_stdin_is_that_texts_error(project):
    done = check(["-"], b"x = '\xff'\n", project)
    assert done.returncode == 1
    assert "cannot decode" in done.stdout.decode()
    assert "Traceback" not in done.stderr.decode()


@pytest.mark.parametrize(
    "args, message",
    [
        (["-", "other.py"], "cannot be combined"),
        (["--confirm", "-"], "cannot read standard input"),
        (["--select", "FL999", "-"], "unknown rule code"),
    ],
)
def test_usage_errors_exit_2(project, args, message):
    done = check(args, BAD_VIEW.encode(), project)
    assert done.returncode == 2
    assert message in done.stderr.decode()
    assert "Traceback" not in done.stderr.decode()
