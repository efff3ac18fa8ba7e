"""What users see: run summaries, paths they can open, symlinked files, colour, SARIF doc links."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from fusionlint.cli import main, use_color

BAD = (
    "import torch\nfrom torch import nn\n\n\n"
    "class Model(nn.Module):\n"
    "    def forward(self, x):\n"
    "        return x * x.sum().item()\n"
)
CLEAN = "def f(x):\n    return x\n"
ESC = "\x1b["


def run_cli(args: list[str], cwd: Path, env: dict | None = None):
    old = os.getcwd()
    os.chdir(cwd)
    try:
        return CliRunner(env=env).invoke(main, args, catch_exceptions=False)
    finally:
        os.chdir(old)


def run_process(args: list[str], cwd: Path, **kw) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    env.update(kw.pop("env", {}))
    return subprocess.run(
        [sys.executable, "-m", "fusionlint.cli", *args], cwd=cwd, env=env, capture_output=True, text=True,
        timeout=120, **kw,
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "src").mkdir(parents=True)
    (root / "pyproject.toml").write_text("[tool.fusionlint]\n")
    (root / "src" / "model.py").write_text(BAD)
    return root


# ---- summaries ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "content",
    [b"def f(:\n", b"x = 1\x00\n", b"x = '\xff'\n"],
    ids=["syntax-error", "nul-bytes", "undecodable"],
)
def test_a_file_that_cannot_be_checked_is_not_a_pass(tmp_path, content):
    (tmp_path / "broken.py").write_bytes(content)
    (tmp_path / "ok.py").write_text(CLEAN)
    result = run_cli(["check", "ok.py", "broken.py"], tmp_path)
    assert result.exit_code == 1
    assert "All checks passed" not in result.output
    assert result.output.splitlines()[-1].startswith("No findings in 1 file; 1 file could not be checked.")
    alone = run_cli(["check", "broken.py"], tmp_path)
    assert alone.exit_code == 1
    assert alone.output.splitlines()[-1].startswith("No files checked; 1 file could not be checked.")


def test_findings_and_unchecked_files_are_both_counted(project):
    (project / "src" / "broken.py").write_text("def f(:\n")
    result = run_cli(["check", "src"], project)
    assert result.exit_code == 1
    assert "Found 1 finding in 1 file; 1 file could not be checked." in result.output


def test_clean_run_counts_checked_files(project):
    (project / "src" / "model.py").write_text(CLEAN)
    (project / "src" / "other.py").write_text(CLEAN)
    result = run_cli(["check", "src"], project)
    assert result.exit_code == 0 and "All checks passed (2 files)." in result.output


def test_no_python_files_warns(tmp_path):
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "notes.txt").write_text("not python\n")
    result = run_cli(["check", "empty"], tmp_path)
    assert result.exit_code == 0  # as Ruff: nothing to check is not an error
    assert "warning: no Python files found in empty" in result.stderr
    assert "All checks passed" not in result.output
    assert "No Python files found." in result.stdout


# ---- paths -------------------------------------------------------------------------------------


def test_text_paths_are_relative_to_the_current_directory(project, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    # Run from outside the project: the path must be one the terminal can open from here.
    proc = run_process(["check", "-q", str(project / "src")], elsewhere)
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.startswith(f"{(project / 'src' / 'model.py').as_posix()}:7:20: FL101")
    assert Path(proc.stdout.split(":")[0]).is_file()
    # From a subdirectory of the project.
    proc = run_process(["check", "-q", "."], project / "src")
    assert proc.stdout.startswith("model.py:7:20: FL101"), proc.stdout
    # From above the project.
    proc = run_process(["check", "-q", "proj/src"], tmp_path)
    assert proc.stdout.startswith("proj/src/model.py:7:20: FL101"), proc.stdout
    # File errors too.
    (project / "src" / "broken.py").write_text("def f(:\n")
    proc = run_process(["check", "-q", "."], project / "src")
    assert "broken.py:1:7: FL000" in proc.stdout.splitlines()[0]


def test_json_and_sarif_keep_root_relative_paths(project):
    src = project / "src"
    proc = run_process(["check", "--format", "json", "."], src)
    assert [f["path"] for f in json.loads(proc.stdout)["findings"]] == ["src/model.py"]
    proc = run_process(["check", "--format", "sarif", "."], src)
    (result,) = json.loads(proc.stdout)["runs"][0]["results"]
    location = result["locations"][0]["physicalLocation"]["artifactLocation"]
    assert location == {"uri": "src/model.py", "uriBaseId": "%SRCROOT%"}


def test_a_file_outside_the_root_is_shown_absolute_in_json(project, tmp_path):
    outside = tmp_path / "outside.py"
    outside.write_text(BAD)
    proc = run_process(["check", "--format", "json", "src", "../outside.py"], project)
    paths = [f["path"] for f in json.loads(proc.stdout)["findings"]]
    assert paths == sorted([outside.as_posix(), "src/model.py"])


def test_symlinked_file_is_reported_once(project, tmp_path):
    # A link to a file outside the project: reported under the link's name, the only one here.
    (tmp_path / "real.py").write_text(BAD)
    os.symlink(tmp_path / "real.py", project / "src" / "link.py")
    # A link to a file that is itself linted: reported once, under the file's own name,
    # whichever order the paths come in.
    (project / "alias").mkdir()
    os.symlink(project / "src" / "model.py", project / "alias" / "model_alias.py")
    for args in (["alias", "src"], ["src", "alias"], ["."]):
        proc = run_process(["check", "-q", *args], project)
        lines = sorted(line.split(":")[0] for line in proc.stdout.splitlines())
        assert lines == ["src/link.py", "src/model.py"], (args, proc.stdout)


# ---- colour ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "choice, isatty, env, expected",
    [
        ("auto", True, {}, True),
        ("auto", False, {}, False),
        ("auto", True, {"NO_COLOR": "1"}, False),
        ("auto", True, {"NO_COLOR": ""}, True),  # empty means unset (no-color.org)
        ("auto", False, {"FORCE_COLOR": "1"}, True),
        ("auto", False, {"NO_COLOR": "1", "FORCE_COLOR": "1"}, False),
        ("always", False, {"NO_COLOR": "1"}, True),
        ("never", True, {"FORCE_COLOR": "1"}, False),
    ],
)
def test_color_decision(choice, isatty, env, expected):
    assert use_color(choice, isatty, env) is expected


@pytest.mark.parametrize(
    "args, env, colored",
    [
        ([], {}, False),
        (["--color", "always"], {}, True),
        (["--color", "always"], {"NO_COLOR": "1"}, True),
        ([], {"FORCE_COLOR": "1"}, True),
        (["--color", "never"], {"FORCE_COLOR": "1"}, False),
        ([], {"FORCE_COLOR": "1", "NO_COLOR": "1"}, False),
    ],
)
def test_color_when_piped(project, args, env, colored):
    proc = run_process(["check", "src", *args], project, env={"TERM": "dumb", **env})
    assert proc.returncode == 1, proc.stderr
    assert (ESC in proc.stdout) is colored
    assert "src/model.py" in proc.stdout


def _on_a_terminal(args: list[str], cwd: Path, env: dict) -> str:
    main_fd, child_fd = pty.openpty()
    full_env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    full_env.update(env)
    proc = subprocess.Popen(
        [sys.executable, "-m", "fusionlint.cli", *args], cwd=cwd, env=full_env,
        stdout=child_fd, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
    )
    os.close(child_fd)
    chunks = []
    while True:
        try:
            data = os.read(main_fd, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=120)
    os.close(main_fd)
    return b"".join(chunks).decode("utf-8", "replace")


def test_color_on_a_terminal_and_no_color(project):
    assert ESC in _on_a_terminal(["check", "src"], project, {})
    assert ESC not in _on_a_terminal(["check", "src"], project, {"NO_COLOR": "1"})
    assert ESC not in _on_a_terminal(["check", "src", "--color", "never"], project, {})


def test_bad_color_value_is_a_usage_error(project):
    result = run_cli(["check", "src", "--color", "sometimes"], project)
    assert result.exit_code == 2 and "sometimes" in result.output


# ---- SARIF links and rule docs -----------------------------------------------------------------


def test_docs_url_setting_drives_sarif_links(project):
    proc = run_process(["check", "--format", "sarif", "src"], project)
    driver = json.loads(proc.stdout)["runs"][0]["tool"]["driver"]
    assert "informationUri" not in driver and "helpUri" not in driver["rules"][0]
    (project / "pyproject.toml").write_text('[tool.fusionlint]\ndocs-url = "https://lint.example.com/rules/{code}"\n')
    proc = run_process(["check", "--format", "sarif", "src"], project)
    driver = json.loads(proc.stdout)["runs"][0]["tool"]["driver"]
    (rule,) = driver["rules"]
    assert rule["id"] == "FL101" and rule["helpUri"] == "https://lint.example.com/rules/FL101"
    assert driver["informationUri"] == "https://lint.example.com/rules/"
    # The alert's headline is the rule's first sentence, the full docs are the help.
    assert rule["shortDescription"]["text"].startswith("Flags code traced by `torch.compile`")
    assert "## Why is this bad?" in rule["help"]["markdown"]


@pytest.mark.parametrize("value", ['"docs.example.com/{code}"', '"https://x.org/{id}"', "3"])
def test_bad_docs_url_exits_2_naming_the_key(project, value):
    (project / "pyproject.toml").write_text(f"[tool.fusionlint]\ndocs-url = {value}\n")
    result = run_cli(["check", "src"], project)
    assert result.exit_code == 2 and "docs-url" in result.output and "Traceback" not in result.output


def test_rule_and_rules_print_no_made_up_link():
    for args in (["rule", "FL101"], ["rules"], ["rules", "--format", "json"]):
        out = CliRunner().invoke(main, args).output
        assert "github.com/fusionlint" not in out and "docs/rules.md" not in out


# ---- the text report's own rendering --------------------------------------------------------------

_RENDER = (
    "import sys\nfrom pathlib import Path\nfrom fusionlint.report import text\n"
    "from fusionlint.rule import Effect, Finding, RunResult, Severity\n"
    "f = Finding(path='m.py', line=1, column=5, end_line=1, end_column=13, code='FL101', name='n', message='m',\n"
    "            effects=(Effect.GRAPH_BREAK,), severity=Severity.WARNING, context='Net.forward')\n"
    "out = text.render(RunResult(findings=[f], files_checked=1), rules={}, root=Path(sys.argv[1]), tool_version='0',\n"
    "                  options={'color': sys.argv[2] == '1'})\n"
    "sys.stdout.write(repr(out) + '\\n' + str('rich' in sys.modules))\n"
)


@pytest.mark.parametrize("color", ["0", "1"], ids=["plain", "colour"])
def test_the_text_report_shows_control_characters_harmlessly_and_needs_no_rich(tmp_path, color):
    # bell, backspace, vertical tab, form feed and an escape sequence before the finding's column
    (tmp_path / "m.py").write_bytes(b"\x07\x08\x0b\x1b[2Jy = x.item() # odd\r\n")
    done = subprocess.run([sys.executable, "-c", _RENDER, str(tmp_path), color], capture_output=True, text=True, check=True)
    shown, imported = done.stdout.rsplit("\n", 1)
    out = eval(shown)  # noqa: S307 (our own repr)
    assert imported == "False"  # 1,636 findings took rich 1.8 CPU s to print
    plain = re.sub("\x1b\\[[0-9;]*m", "", out)  # the report's own colours
    # one U+FFFD per control character: the carets stay under `.item()` (columns 5-12 of the source)
    assert "1 | \ufffd\ufffd\ufffd\ufffd[2Jy = x.item() # odd\n  |     ^^^^^^^^ FL101\n" in plain
    assert ESC not in plain and (ESC in out) is (color == "1")
    assert not any(ch in out for ch in "\x07\x08\x0b\r")


_STATISTICS = (
    "import sys\nfrom fusionlint.cli import main\n"
    "try:\n    main(['check', sys.argv[1], '--statistics', '--exit-zero'])\nexcept SystemExit:\n    pass\n"
    "print('RULES', any(m.startswith('fusionlint.rules.') for m in sys.modules), 'libcst' in sys.modules)\n"
)


def test_statistics_of_a_warm_run_name_the_rules_without_importing_them(project):
    runs = [subprocess.run([sys.executable, "-c", _STATISTICS, "src"], cwd=project, capture_output=True, text=True,
                           check=True).stdout for _ in range(2)]
    assert runs[0].splitlines()[-1] == "RULES True True"  # the cold run lints
    assert runs[1].splitlines()[-1] == "RULES False False"  # the warm one takes the names from its findings
    assert "FL101      tensor-to-python" in runs[1] and runs[0].splitlines()[:-1] == runs[1].splitlines()[:-1]
