"""`target-torch`: the torch version static findings are judged against is a setting, not whatever torch
happens to be installed where the linter runs; its default is read from package metadata without
importing torch, else the newest version the rules were measured on; it is printed in every format."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib.metadata import PackageNotFoundError
from pathlib import Path

import pytest
from click.testing import CliRunner

from fusionlint import torch_target
from fusionlint.cli import main
from fusionlint.registry import all_rules

# FL201's one version-gated form (its docs): a mutated float through Python arithmetic before a tensor op
# recompiled on every new value with torch 2.11 (CPU and H200) and only once with torch 2.13.
VERSION_GATED = """import torch
from torch import nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.temperature = 1.0

    def cool(self):
        self.temperature *= 0.9

    def forward(self, x):
        return x * (1.0 / self.temperature)
"""


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "model.py").write_text(VERSION_GATED)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _json(*args: str) -> dict:
    result = CliRunner().invoke(main, ["check", "model.py", "--select", "FL201", "--format", "json", *args])
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.output)


def _no_torch_metadata(monkeypatch):
    def missing(name):
        raise PackageNotFoundError(name)

    monkeypatch.setattr("importlib.metadata.version", missing)


def test_same_file_gives_the_documented_difference_per_target(project):
    old, new = _json("--target-torch", "2.11"), _json("--target-torch", "2.13")
    assert [(f["code"], f["line"]) for f in old["findings"]] == [("FL201", 14)]
    assert "Python arithmetic" in old["findings"][0]["message"]
    assert new["findings"] == []
    assert (old["target_torch"], new["target_torch"]) == ("2.11", "2.13")


def test_setting_in_pyproject_and_command_line_override(project):
    (project / "pyproject.toml").write_text('[tool.fusionlint]\ntarget-torch = "2.11"\n')
    assert _json()["target_torch"] == "2.11" and len(_json()["findings"]) == 1
    assert _json("--target-torch", "2.13.0")["findings"] == []


def test_default_without_torch_is_the_newest_measured_version(project, monkeypatch):
    _no_torch_metadata(monkeypatch)
    newest = max(
        torch_target.parse_version(entry.split()[1])
        for rule in all_rules().values()
        for entry in rule.measured_on
    )
    assert torch_target.default_target() == newest == torch_target.NEWEST_MEASURED == (2, 13)
    doc = _json()
    assert doc["target_torch"] == "2.13" and doc["findings"] == []


def test_default_follows_the_installed_metadata(project, monkeypatch):
    monkeypatch.setattr("importlib.metadata.version", lambda name: "2.11.0+cu130")
    assert torch_target.default_target() == (2, 11)
    doc = _json()
    assert doc["target_torch"] == "2.11" and len(doc["findings"]) == 1


def test_default_is_read_without_importing_torch(project):
    code = (
        "import sys\nfrom click.testing import CliRunner\nfrom fusionlint.cli import main\n"
        "r = CliRunner().invoke(main, ['check', 'model.py', '--select', 'FL201'])\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\nprint(r.output)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=project, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "Target torch: " in out.stdout


@pytest.mark.parametrize(
    "toml_value, shown",
    [('"abc"', "'abc'"), ("2.13", "2.13"), ('"2"', "'2'"), ('"2.13.x"', "'2.13.x'"), ("[]", "[]")],
)
def test_bad_setting_exits_2_naming_the_key(project, toml_value, shown):
    (project / "pyproject.toml").write_text(f"[tool.fusionlint]\ntarget-torch = {toml_value}\n")
    result = CliRunner().invoke(main, ["check", "model.py"])
    assert result.exit_code == 2, result.output
    assert "'target-torch' must be a torch version string" in result.output and shown in result.output
    assert "Traceback" not in result.output


def test_bad_command_line_value_exits_2(project):
    result = CliRunner().invoke(main, ["check", "model.py", "--target-torch", "latest"])
    assert result.exit_code == 2 and "'--target-torch'" in result.output and "'latest'" in result.output


def test_version_in_text_and_sarif(project):
    text = CliRunner().invoke(main, ["check", "model.py", "--select", "FL201", "--target-torch", "2.11"]).output
    assert text.rstrip().endswith("Target torch: 2.11.")
    sarif = CliRunner().invoke(main, ["check", "model.py", "--format", "sarif", "--target-torch", "2.13"]).output
    assert json.loads(sarif)["runs"][0]["properties"]["targetTorch"] == "2.13"


@pytest.mark.parametrize(
    "text, expected",
    [("2.13", (2, 13)), ("2.13.0+cpu", (2, 13)), ("2.14.0a0+git1234", (2, 14)), ("2.11.0rc1", (2, 11)),
     (" 2.9 ", (2, 9)), ("2", None), ("two.13", None), ("2.13.0.1", None), ("", None)],
)
def test_parse_version(text, expected):
    assert torch_target.parse_version(text) == expected
