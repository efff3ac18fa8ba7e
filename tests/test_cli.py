"""End-to-end behaviour of `fusionlint check/rule/rules`: exit codes, formats, fixes, bad input."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner

from fusionlint.cli import main

REPO = Path(__file__).resolve().parent.parent

BAD_VIEW = (
    "import torch\nfrom torch import nn\n\n\n"
    "class Model(nn.Module):\n"
    "    def forward(self, x):\n"
    "        y = x.permute(0, 2, 1).view(x.shape[0], -1)\n"
    "        return y * x.sum().item()\n"
)
CLEAN = "import torch\nfrom torch import nn\n\n\nclass Model(nn.Module):\n    def forward(self, x):\n        return x * 2\n"


def run_cli(args: list[str], cwd: Path) -> "click.testing.Result":  # noqa: F821
    old = os.getcwd()
    os.chdir(cwd)
    try:
        return CliRunner().invoke(main, args, catch_exceptions=False)
    finally:
        os.chdir(old)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text("[tool.fusionlint]\n")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "model.py").write_text(BAD_VIEW)
    (tmp_path / "src" / "clean.py").write_text(CLEAN)
    return tmp_path


def test_findings_exit_1_with_ruff_style_text(project):
    result = run_cli(["check", "src"], project)
    assert result.exit_code == 1
    out = result.output
    assert "src/model.py:7:13: FL301" in out
    assert "src/model.py:8:20: FL101" in out
    assert "y = x.permute(0, 2, 1).view(x.shape[0], -1)" in out  # the source line
    assert "^^^^" in out and "compiled via: Model.forward" in out
    assert "Found 2 findings in 2 files (1 fixable with --fix)." in out
    assert "\x1b[" not in out  # no colour when not a TTY


def test_clean_exit_0_and_exit_zero(project):
    assert run_cli(["check", "src/clean.py"], project).exit_code == 0
    assert run_cli(["check", "src", "--exit-zero"], project).exit_code == 0


def test_select_and_ignore(project):
    result = run_cli(["check", "src", "--select", "FL301", "-q"], project)
    assert result.exit_code == 1 and "FL301" in result.output and "FL101" not in result.output
    result = run_cli(["check", "src", "--ignore", "FL3,FL101"], project)
    assert result.exit_code == 0


def test_unknown_selector_is_a_usage_error(project):
    result = run_cli(["check", "src", "--select", "FL999"], project)
    assert result.exit_code == 2 and "FL999" in result.output


def test_config_file_select_and_per_file_ignores(project):
    (project / "pyproject.toml").write_text('[tool.fusionlint]\nselect = ["FL1"]\nper-file-ignores = {"src/clean.py" = ["FL1"]}\n')
    result = run_cli(["check", "src", "-q"], project)
    assert "FL101" in result.output and "FL301" not in result.output
    # the CLI overrides the file
    result = run_cli(["check", "src", "-q", "--select", "FL301"], project)
    assert "FL301" in result.output and "FL101" not in result.output
    (project / "pyproject.toml").write_text('[tool.fusionlint]\nper-file-ignores = {"src/*.py" = ["FL"]}\n')
    assert run_cli(["check", "src"], project).exit_code == 0


@pytest.mark.parametrize("option", ["--select", "--extend-select", "--ignore"])
@pytest.mark.parametrize("value", ["", " , "])
def test_an_empty_code_list_on_the_command_line_is_a_usage_error(project, option, value):
    # `--select "$CODES"` with an unset variable used to run no rule and report "All checks passed".
    result = run_cli(["check", "src", option, value], project)
    assert result.exit_code == 2
    assert result.output == f"fusionlint: error: {option} got no rule codes\n"


def test_a_code_of_another_linter_is_named_as_unknown(project):
    result = run_cli(["check", "src", "--select", "E501"], project)
    assert result.exit_code == 2
    assert "unknown rule code or prefix: E501" in result.output
    assert "must be a list" not in result.output


@pytest.mark.parametrize(
    "table, key",
    [('select = ["FL999"]', "'select'"), ('per-file-ignores = {"a.py" = ["FL999"]}', "'per-file-ignores.a.py'")],
)
def test_unknown_codes_in_select_and_per_file_ignores_fail_alike(project, table, key):
    (project / "pyproject.toml").write_text(f"[tool.fusionlint]\n{table}\n")
    result = run_cli(["check", "src"], project)
    assert result.exit_code == 2
    assert result.output == f"fusionlint: error: {key}: unknown rule code or prefix: FL999 (see `fusionlint rules`)\n"


@pytest.mark.parametrize(
    "body, key",
    [
        ('[tool.fusionlint.confirm]\nmemory-mb = "abc"\n', "'confirm.memory-mb'"),
        ("[tool.fusionlint.confirm]\ntimeout = 1e308\n", "'confirm.timeout'"),
        ("[tool.fusionlint.confirm]\ntimeout = -1\n", "'confirm.timeout'"),
        ("[tool.fusionlint]\nselect = " + "[" * 3000 + "]" * 3000 + "\n", "nested too deeply"),
    ],
)
def test_bad_configuration_exits_2_naming_the_key(project, body, key):
    (project / "pyproject.toml").write_text(body)
    result = run_cli(["check", "src", "--confirm"], project)
    assert result.exit_code == 2 and key in result.output
    assert result.output.startswith("fusionlint: error: ") and result.output.count("\n") == 1


@pytest.mark.parametrize("value", ["1e308", "-1", "nan", "inf"])
def test_bad_confirm_timeout_option_exits_2(project, value):
    result = run_cli(["check", "src/clean.py", "--confirm", f"--confirm-timeout={value}"], project)
    assert result.exit_code == 2
    assert "--confirm-timeout must be a number of seconds > 0 and <= 86400" in result.output


def test_invalid_config_exit_2_names_the_key(project):
    (project / "pyproject.toml").write_text('[tool.fusionlint]\nselct = ["FL101"]\n')
    result = run_cli(["check", "src"], project)
    assert result.exit_code == 2 and "selct" in result.output


def test_json_output_matches_documented_schema(project):
    result = run_cli(["check", "src", "--format", "json"], project)
    assert result.exit_code == 1
    doc = json.loads(result.output)
    schema = json.loads((REPO / "docs" / "json-output.schema.json").read_text())
    jsonschema.validate(doc, schema)
    by_code = {f["code"]: f for f in doc["findings"]}
    view = by_code["FL301"]
    assert view["path"] == "src/model.py"
    assert (view["line"], view["column"], view["end_line"], view["end_column"]) == (7, 13, 7, 52)
    assert view["fix"]["applicability"] == "safe"
    assert view["fix"]["edits"] == [{"line": 7, "column": 32, "end_line": 7, "end_column": 36, "content": "reshape"}]
    assert by_code["FL101"]["effects"] == ["graph-break", "host-sync"]
    assert by_code["FL101"]["context"] == "Model.forward"


def test_output_file(project):
    result = run_cli(["check", "src", "--format", "json", "--output", "report.json"], project)
    assert result.exit_code == 1 and result.output == ""
    assert json.loads((project / "report.json").read_text())["findings"]


def test_fix_rewrites_keeps_mode_and_reports_remaining(project):
    target = project / "src" / "model.py"
    target.chmod(0o640)
    result = run_cli(["check", "src", "--fix"], project)
    assert result.exit_code == 1  # FL101 has no fix: still there
    text = target.read_text()
    assert ".reshape(x.shape[0], -1)" in text and ".view(" not in text
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert "Fixed 1 finding." in result.output
    # idempotent: a second run changes nothing
    before = target.read_text()
    run_cli(["check", "src", "--fix"], project)
    assert target.read_text() == before


def test_fix_everything_exits_0(project):
    result = run_cli(["check", "src", "--fix", "--select", "FL301"], project)
    assert result.exit_code == 0, result.output


def test_diff_does_not_write(project):
    target = project / "src" / "model.py"
    result = run_cli(["check", "src", "--diff"], project)
    assert result.exit_code == 1
    assert "-        y = x.permute(0, 2, 1).view(x.shape[0], -1)" in result.output
    assert "+        y = x.permute(0, 2, 1).reshape(x.shape[0], -1)" in result.output
    assert target.read_text() == BAD_VIEW


def test_statistics(project):
    result = run_cli(["check", "src", "--statistics"], project)
    assert "1  FL101" in result.output and "1  FL301  [*] view-after-permute" in result.output


def test_suppressions_end_to_end(project):
    (project / "src" / "model.py").write_text(BAD_VIEW.replace("-1)\n", "-1)  # noqa: FL301\n"))
    result = run_cli(["check", "src", "-q"], project)
    assert "FL301" not in result.output and "FL101" in result.output
    (project / "src" / "model.py").write_text("# fusionlint: skip-file\n" + BAD_VIEW)
    assert run_cli(["check", "src"], project).exit_code == 0


# ---- bad input ---------------------------------------------------------------------------------


def test_nonexistent_path_exit_2(project):
    result = run_cli(["check", "nope/"], project)
    assert result.exit_code == 2 and "path does not exist: nope" in result.output


def test_syntax_error_reported_and_other_files_linted(project):
    (project / "src" / "broken.py").write_text("class M(:\n    pass\n")
    result = run_cli(["check", "src"], project)
    assert result.exit_code == 1
    assert "src/broken.py:1:9: FL000 syntax error" in result.output
    assert "FL301" in result.output  # model.py still linted
    doc = json.loads(run_cli(["check", "src", "--format", "json"], project).output)
    assert doc["errors"] == [{"path": "src/broken.py", "message": doc["errors"][0]["message"], "line": 1, "column": 9}]
    # a syntax error alone still exits 1: the file could not be checked
    assert run_cli(["check", "src/broken.py"], project).exit_code == 1


@pytest.mark.parametrize(
    "name,content,needle",
    [
        ("latin.py", b"x = '\xe9'\n", "cannot decode"),
        ("nul.py", b"x = 1\x00\n", "NUL"),
    ],
)
def test_unreadable_content_is_an_error_entry(project, name, content, needle):
    (project / "src" / name).write_bytes(content)
    result = run_cli(["check", "src", "--format", "json"], project)
    assert result.exit_code == 1
    errors = json.loads(result.output)["errors"]
    assert any(e["path"] == f"src/{name}" and needle.lower() in e["message"].lower() for e in errors), errors


def test_empty_file_is_clean(project):
    (project / "empty.py").write_text("")
    result = run_cli(["check", "empty.py"], project)
    assert result.exit_code == 0 and "All checks passed (1 file)." in result.output


def test_unreadable_file(project):
    target = project / "src" / "secret.py"
    target.write_text(CLEAN)
    target.chmod(0)
    try:
        readable = os.access(target, os.R_OK)  # root can read anything
        result = run_cli(["check", "src", "--format", "json"], project)
        errors = json.loads(result.output)["errors"]
        if readable:
            assert not any(e["path"] == "src/secret.py" for e in errors)
        else:
            assert any(e["path"] == "src/secret.py" and "cannot read" in e["message"] for e in errors)
    finally:
        target.chmod(0o644)


def test_unreadable_file_via_oserror(project, monkeypatch):
    """Simulate EACCES even as root, so the error path is exercised in CI."""
    import fusionlint.files as files

    real_open = open

    def fake_open(path, *args, **kwargs):
        if str(path).endswith("model.py"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr("builtins.open", fake_open)
    monkeypatch.setattr(files.Path, "read_bytes", lambda self: (_ for _ in ()).throw(PermissionError(13, "Permission denied")) if self.name == "model.py" else real_open(self, "rb").read())
    result = run_cli(["check", "src", "--format", "json"], project)
    assert result.exit_code == 1
    errors = json.loads(result.output)["errors"]
    assert any(e["path"] == "src/model.py" and "permission denied" in e["message"].lower() for e in errors), errors


def test_symlink_loop_does_not_hang(project):
    os.symlink(project / "src", project / "src" / "loop")
    result = run_cli(["check", "src", "-q"], project)
    assert result.exit_code == 1
    assert result.output.count("FL301") == 1  # the file is linted once, not once per loop turn


@pytest.mark.slow
def test_large_generated_file(project):
    # 2 MB, 120,000 lines of definitions: a generated file the run must finish (under the 10 MB cap)
    body = "".join(f"def f{i}(x):\n    return x + {i}\n" for i in range(60_000))
    (project / "big.py").write_text(body)
    assert (project / "big.py").stat().st_size > 2_000_000
    result = run_cli(["check", "big.py"], project)
    assert result.exit_code == 0


def test_no_traceback_from_real_process(project):
    proc = subprocess.run(
        [sys.executable, "-m", "fusionlint.cli", "check", "missing.py"],
        cwd=project,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and "path does not exist" in proc.stderr


# ---- other commands ------------------------------------------------------------------------------


def test_rule_docs_command():
    result = CliRunner().invoke(main, ["rule", "fl301"])
    assert result.exit_code == 0
    assert result.output.startswith("# FL301 view-after-permute")
    assert "## Why is this bad?" in result.output and "Fix: safe" in result.output


def test_unknown_rule_exit_2():
    result = CliRunner().invoke(main, ["rule", "FL999"])
    assert result.exit_code == 2 and "unknown rule" in result.output


def test_rules_listing():
    result = CliRunner().invoke(main, ["rules", "--format", "json"])
    doc = json.loads(result.output)
    rows = {r["code"]: r for r in doc["rules"]}
    assert any("aliasing" in f["family"] for f in doc["checked_without_effect"])
    assert rows["FL301"]["fix"] == "safe" and rows["FL101"]["effects"] == ["graph-break", "host-sync"]
    text = CliRunner().invoke(main, ["rules"]).output
    assert "FL101" in text and "tensor-to-python" in text
    assert "Checked, no effect" in text and "docs/aliasing-evidence.md" in text


def test_version():
    result = CliRunner().invoke(main, ["--version"])
    assert result.exit_code == 0 and "fusionlint" in result.output


def test_python_dash_m_runs_the_same_cli(tmp_path):
    """`python -m fusionlint` is the same command line as the script (exit code and output)."""
    import subprocess
    import sys

    bad = tmp_path / "m.py"
    bad.write_text("import torch\n\n@torch.compile\ndef f(x):\n    return x.item()\n")
    proc = subprocess.run([sys.executable, "-m", "fusionlint", "check", str(bad)], capture_output=True, text=True)
    assert proc.returncode == 1, proc.stderr
    assert "FL101" in proc.stdout
