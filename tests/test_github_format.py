"""`--format github`: workflow-command annotations, escaped the way the Actions runner expects."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from fusionlint.report import github
from fusionlint.report.github import escape_data, escape_property
from fusionlint.rule import Effect, FileError, Finding, RunResult, Severity

REPO = Path(__file__).resolve().parent.parent


def finding(**overrides) -> Finding:
    values = dict(
        path="models/net.py", line=12, column=9, end_line=12, end_column=30, code="FL301",
        name="view-after-permute", message="`.view()` after `.permute()` raises",
        effects=(Effect.RUNTIME_ERROR,), severity=Severity.WARNING,
    )
    values.update(overrides)
    return Finding(**values)


def render(result: RunResult) -> str:
    return github.render(result, rules={}, root=Path("."), tool_version="0.1.0", options={})


def unescape(text: str) -> str:
    """What the runner does on its side (actions/runner ActionCommand unescaping)."""
    for escaped, raw in (("%0D", "\r"), ("%0A", "\n"), ("%3A", ":"), ("%2C", ","), ("%25", "%")):
        text = text.replace(escaped, raw)
    return text


def parse(line: str) -> tuple[str, dict[str, str], str]:
    """Split one workflow command into (command, properties, message), unescaping like the runner."""
    match = re.fullmatch(r"::(\w+)(?: ([^:]*))?::(.*)", line)
    assert match, line
    command, props, message = match.groups()
    properties = {}
    for pair in (props or "").split(","):
        key, _, value = pair.partition("=")
        properties[key] = unescape(value)
    return command, properties, unescape(message)


def test_exact_line_for_a_one_line_finding():
    out = render(RunResult(findings=[finding()]))
    assert out == (
        "::warning file=models/net.py,line=12,col=9,endLine=12,endColumn=30,title=FL301"
        "::`.view()` after `.permute()` raises\n"
    )


@pytest.mark.parametrize(
    "severity, command",
    [(Severity.ERROR, "error"), (Severity.WARNING, "warning"), (Severity.INFO, "notice")],
)
def test_severity_picks_the_command(severity, command):
    (line,) = render(RunResult(findings=[finding(severity=severity)])).splitlines()
    assert line.startswith(f"::{command} ")


def test_multi_line_finding_has_no_columns():
    """GitHub rejects col/endColumn when line and endLine differ."""
    (line,) = render(RunResult(findings=[finding(line=3, end_line=5)])).splitlines()
    _, props, _ = parse(line)
    assert props == {"file": "models/net.py", "line": "3", "endLine": "5", "title": "FL301"}


def test_escape_data():
    assert escape_data("100% done\r\nnext\nline") == "100%25 done%0D%0Anext%0Aline"
    assert escape_data("a: b, c") == "a: b, c"  # ':' and ',' are fine in the message
    assert escape_data("%0A") == "%250A"  # an escape-looking text stays literal


def test_escape_property():
    assert escape_property("dir,with:odd%\nname.py") == "dir%2Cwith%3Aodd%25%0Aname.py"


def test_awkward_path_and_message_round_trip():
    path = "src/a,b:c%d/ü ñ.py"
    message = "50% slower:\nline two, with comma\r\n::error::not a command"
    (line,) = render(RunResult(findings=[finding(path=path, message=message)])).splitlines()
    # One line (a raw newline would end the command and let the rest start a new one), and no
    # ':' in the properties (the runner ends the properties at the first "::").
    assert "\n" not in line and "\r" not in line
    header = line[2:].split("::", 1)[0]
    assert ":" not in header and header.count(",") == 5  # six properties, commas only between
    command, props, text = parse(line)
    assert command == "warning"
    assert props["file"] == path
    assert text == message


def test_file_errors_are_error_annotations():
    errors = [
        FileError(path="pkg/broken.py", message="syntax error: invalid syntax", line=4, column=9),
        FileError(path="pkg/bin.py", message="cannot decode, not UTF-8"),
    ]
    lines = render(RunResult(errors=errors)).splitlines()
    assert lines == [
        "::error file=pkg/bin.py,title=FL000::cannot decode, not UTF-8",
        "::error file=pkg/broken.py,line=4,col=9,title=FL000::syntax error: invalid syntax",
    ]


def test_paths_are_relative_to_the_git_repository(tmp_path):
    """GitHub annotates repository paths; fusionlint's root may be a monorepo subdirectory."""
    (tmp_path / ".git").mkdir()
    project = tmp_path / "packages" / "model"
    project.mkdir(parents=True)
    outside = tmp_path.parent / "elsewhere.py"
    result = RunResult(
        findings=[finding(path="pkg/net.py"), finding(path="../shared/util.py"),
                  finding(path=outside.as_posix())],
        errors=[FileError(path="pkg/broken.py", message="syntax error", line=2)],
    )
    lines = github.render(result, rules={}, root=project, tool_version="0.1.0").splitlines()
    files = [parse(line)[1]["file"] for line in lines]
    assert files == [
        "packages/model/pkg/broken.py",  # file errors first
        "packages/shared/util.py",  # then findings, in fusionlint's own path order
        outside.as_posix(),  # outside the repository: left as it was
        "packages/model/pkg/net.py",
    ]


def test_empty_run_prints_nothing():
    assert render(RunResult()) == ""


def test_findings_are_sorted_by_location():
    findings = [finding(path="b.py"), finding(path="a.py", line=20), finding(path="a.py", line=3)]
    lines = render(RunResult(findings=findings)).splitlines()
    assert [parse(line)[1]["file"] + ":" + parse(line)[1]["line"] for line in lines] == [
        "a.py:3", "a.py:20", "b.py:12",
    ]


def test_cli_github_format_on_fixtures():
    proc = subprocess.run(
        [sys.executable, "-m", "fusionlint.cli", "check", "fixtures", "--format", "github"],
        cwd=REPO, capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 1, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines, "the bad.py fixtures should produce annotations"
    seen = set()
    for line in lines:
        command, props, message = parse(line)
        assert command in ("error", "warning", "notice")
        assert props["file"].startswith("fixtures/") and props["file"].endswith("/bad.py")
        assert (REPO / props["file"]).is_file()  # repo-relative, as GitHub needs
        assert int(props["line"]) >= 1
        assert message
        seen.add(props["title"])
    assert {"FL101", "FL301"} <= seen
    fl301 = [parse(line) for line in lines if "title=FL301" in line]
    assert all(command == "error" for command, _, _ in fl301)  # FL301 is severity error
