"""``fusionlint check -``: lint (or fix) source read from standard input, as Ruff does.

``--stdin-filename PATH`` names the text: its configuration is found from PATH, per-file-ignores
match PATH and messages show it; the file need not exist. Without ``--fix`` the report goes to
stdout as usual. With ``--fix`` stdout receives the whole source (fixed, or unchanged when nothing
could be fixed) in its own encoding, so an editor can replace its buffer with it, and what is left
is reported on stderr. ``--diff`` prints the fixes as a unified diff instead.
"""

from __future__ import annotations

import difflib
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import click

from fusionlint import __version__
from fusionlint.config import ConfigError, load_settings
from fusionlint.files import SourceError, atomic_write, decode_source
from fusionlint.lines import split_lines
from fusionlint.registry import RuleDefinitionError, all_rules
from fusionlint.report import renderer
from fusionlint.rule import FileError, RunResult

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
STDIN = "-"


@dataclass
class StdinRequest:
    paths: tuple[str, ...]
    stdin_filename: Optional[str]
    overrides: dict
    config_file: Optional[Path]
    fmt: str
    output: Optional[Path]
    fix: bool
    diff: bool
    exit_zero: bool
    statistics: bool
    quiet: bool
    category: Optional[str]
    confirm: bool  # --confirm/--confirm-on-gpu/--verify were given: they need files


def wants_stdin(paths: tuple[str, ...], stdin_filename: Optional[str]) -> bool:
    """``-`` among the paths, or ``--stdin-filename`` with no paths at all."""
    return STDIN in paths or (stdin_filename is not None and not paths)


def _error(message: str) -> int:
    click.echo(f"fusionlint: error: {message}", err=True)
    return EXIT_ERROR


def check_stdin(req: StdinRequest) -> int:
    """Run the whole stdin check and return the exit code."""
    from fusionlint.api import Linter

    if any(p != STDIN for p in req.paths):
        return _error("`-` (standard input) cannot be combined with other paths")
    if req.confirm:
        return _error("--confirm and --verify import and run modules from files; they cannot read standard input")
    name = req.stdin_filename or STDIN
    start = Path(req.stdin_filename) if req.stdin_filename else Path.cwd()
    try:
        settings = load_settings(start, config_file=req.config_file, overrides=req.overrides)
        linter = Linter(settings)
        rules = all_rules()
    except ConfigError as exc:
        return _error(str(exc))
    except RuleDefinitionError as exc:
        return _error(f"broken rule definition: {exc}")
    shown = linter.shown_path(name)

    data = sys.stdin.buffer.read()
    try:
        text, encoding = decode_source(data)
    except SourceError as exc:
        if req.fix and not req.diff:
            _write_stdout_bytes(data)  # an editor replacing its buffer must get it back untouched
        return _report(req, RunResult(errors=[FileError(shown, str(exc), exc.line)], files_checked=1), settings.root, rules)

    try:
        if req.fix or req.diff:
            outcome = linter.fix(text, name)
            result = RunResult(findings=outcome.findings, files_checked=1, fixed=outcome.applied)
            error, fixed = outcome.error, outcome.text
        else:
            linted = linter.lint(text, name)
            result = RunResult(findings=linted.findings, files_checked=1)
            error, fixed = linted.error, text
    except Exception as exc:  # a bug in fusionlint or a rule: say so, exit 2, never a traceback
        if req.fix and not req.diff:
            _write_stdout_bytes(data)
        return _error(f"{shown}: internal error: {type(exc).__name__}: {exc}")
    if error is not None:
        result.errors.append(error)

    if req.diff:
        patch = "".join(
            difflib.unified_diff(
                split_lines(text, keepends=True),
                split_lines(fixed, keepends=True),
                fromfile=f"a/{shown}",
                tofile=f"b/{shown}",
            )
        )
        click.echo(patch, nl=False)
        for err in result.errors:
            click.echo(f"{err.path}: {err.message}", err=True)
        return EXIT_FINDINGS if patch else EXIT_CLEAN
    if req.fix:
        _write_stdout_bytes(fixed.encode(encoding))  # cookie's codec or utf-8-sig: the bytes round-trip
        return _report(req, result, settings.root, rules, to_stderr=True, text=fixed)
    return _report(req, result, settings.root, rules, text=text)


def _write_stdout_bytes(data: bytes) -> None:
    out = sys.stdout.buffer
    out.write(data)
    out.flush()


def _report(
    req: StdinRequest, result: RunResult, root: Path, rules, *, to_stderr: bool = False, text: Optional[str] = None
) -> int:
    stream = sys.stderr if to_stderr else sys.stdout
    rendered = renderer(req.fmt)(
        result,
        rules=rules,
        root=root,
        tool_version=__version__,
        options={
            "color": req.fmt == "text" and req.output is None and stream.isatty(),
            "quiet": req.quiet,
            "statistics": req.statistics,
            "category": req.category,
            "internal_errors": [],
            # the excerpt must come from the text that was linted, not from a file of that name
            "sources": {} if text is None else {p: text for p in {f.path for f in result.findings}},
        },
    )
    if req.output is not None:
        try:
            atomic_write(req.output, rendered)
        except OSError as exc:
            return _error(f"cannot write {req.output}: {exc.strerror or exc}")
    elif not (to_stderr and not result.findings and not result.errors):
        click.echo(rendered, nl=False, err=to_stderr)
    if req.exit_zero:
        return EXIT_CLEAN
    return EXIT_FINDINGS if result.findings or result.errors else EXIT_CLEAN
