"""The library API that every front end uses: the CLI's stdin mode, the language server, scripts, tests.

    >>> from fusionlint.api import lint_text
    >>> [f.code for f in lint_text(source, "model.py").findings]
    ['FL101']

``lint_text`` and ``fix_text`` work on a text in memory (nothing is read or written); ``lint_paths``
is ``fusionlint check PATHS`` without the printing. A ``Linter`` keeps one set of settings and one
project index across calls, which is what an editor needs: the language server holds one per
workspace and feeds it each changed buffer. Nothing here imports torch or user code.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence

from fusionlint import config as config_mod
from fusionlint.analysis.project import ProjectIndex
from fusionlint.project.model import Project
from fusionlint.config import ConfigError, Settings, load_settings
from fusionlint.engine import Engine
from fusionlint.files import display_path
from fusionlint.fixes import fix_source
from fusionlint.rule import FileError, Finding, RunResult

__all__ = [
    "ConfigError",
    "FixResult",
    "Linter",
    "Settings",
    "TextResult",
    "fix_text",
    "lint_paths",
    "lint_text",
    "load_settings",
]

STDIN_PATH = "-"  # how a text without a name is shown (Ruff's convention)


@dataclass
class TextResult:
    """The findings for one text, or the error that stopped it (then ``findings`` is empty)."""

    findings: list[Finding] = field(default_factory=list)
    error: Optional[FileError] = None  # a syntax error, a file that cannot be parsed


@dataclass
class FixResult:
    """A text after fixing: ``text`` is the input when nothing applied (or a fix was refused)."""

    text: str
    findings: list[Finding] = field(default_factory=list)  # what is left after fixing
    applied: int = 0
    error: Optional[FileError] = None  # why fixing stopped (nothing of the failing round is kept)

    def __iter__(self):  # ``new_text, left = fix_text(...)``
        return iter((self.text, self.findings))


class _Unlintable(Exception):
    def __init__(self, error: FileError) -> None:
        super().__init__(error.message)
        self.error = error


class Linter:
    """Lints texts with one ``Settings`` against one project index, reused from call to call.

    Each text is (re-)indexed under its path before it is linted, so a text's own classes count
    as cross-file facts exactly as in ``fusionlint check``; other files are added with
    ``project.update_file`` by whoever owns the project (the CLI's runner, the language server).
    """

    def __init__(
        self, settings: Settings, project: Optional[ProjectIndex] = None, model: Optional[Project] = None, *, memo: bool = False
    ) -> None:
        from fusionlint.runner import enabled_rules  # raises ConfigError for unknown codes

        self.settings = settings
        self.project = project if project is not None else ProjectIndex()
        # the semantic model (cross-file classes, calls, tensor arguments); whoever owns the project
        # adds the other files to it as to ``project``
        # memo: keep findings per group of definitions between calls, so that linting the same
        # file again after a small edit re-lints only what the edit can change (fusionlint.incremental)
        if model is None:
            model = Project(keep_units=memo)
        self.engine = Engine(enabled_rules(settings), self.project, model, memo=memo)

    def shown_path(self, path: Optional[str | Path]) -> str:
        """The root-relative POSIX path that findings, messages and per-file-ignores use."""
        if path is None or str(path) == STDIN_PATH:
            return STDIN_PATH
        return display_path(Path(path), self.settings.root)

    def lint(self, text: str, path: Optional[str | Path] = None) -> TextResult:
        shown = self.shown_path(path)
        try:
            return TextResult(self._lint(text, shown))
        except _Unlintable as failed:
            return TextResult([], failed.error)

    def fix(self, text: str, path: Optional[str | Path] = None, *, unsafe: Optional[bool] = None) -> FixResult:
        """Apply safe fixes (and unsafe ones with ``unsafe``; default: the ``unsafe-fixes`` setting)."""
        shown = self.shown_path(path)
        unsafe = self.settings.unsafe_fixes if unsafe is None else unsafe
        try:
            found = self._lint(text, shown)
        except _Unlintable as failed:
            return FixResult(text, [], 0, failed.error)
        try:
            outcome = fix_source(text, lambda source: self._lint(source, shown), unsafe=unsafe, findings=found)
        except _Unlintable as failed:  # a fix produced something our own parser rejects
            return FixResult(text, found, 0, FileError(shown, f"fix not applied: {failed.error.message}", failed.error.line))
        finally:
            self.project.update_file(shown, text)  # the index describes the text as given, not a draft
        error = FileError(shown, outcome.error) if outcome.error else None
        return FixResult(outcome.source, outcome.findings, outcome.applied, error)

    def _lint(self, text: str, shown: str) -> list[Finding]:
        _check_encodable(text, shown)
        self.project.update_file(shown, text)
        found, error = self.engine.lint_source(text, shown)
        if error is not None:
            raise _Unlintable(error)
        settings = self.settings
        return [f for f in found if config_mod.is_selected(f.code, settings, default_enabled=True, path=shown)]


def _check_encodable(text: str, shown: str) -> None:
    """A str from an editor or a surrogateescape decode can hold lone surrogates, which no parser takes."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        line = text.count("\n", 0, exc.start) + 1
        raise _Unlintable(FileError(shown, f"text is not valid Unicode (lone surrogate on line {line})", line)) from None


def _settings(settings: Optional[Settings], path: Optional[str | Path]) -> Settings:
    if settings is not None:
        return settings
    # The config search walks up from the path's directory; the file itself need not exist
    # (an unsaved buffer, stdin named after a new file).
    return load_settings(Path(path) if path is not None and str(path) != STDIN_PATH else Path.cwd())


def lint_text(text: str, path: Optional[str | Path] = None, settings: Optional[Settings] = None) -> TextResult:
    """Lint ``text`` as if it were the file ``path`` (its config, per-file-ignores and messages).

    ``settings`` default to the ``[tool.fusionlint]`` found from ``path`` (else the current
    directory). Raises ``ConfigError`` for an invalid configuration.
    """
    return Linter(_settings(settings, path)).lint(text, path)


def fix_text(
    text: str, path: Optional[str | Path] = None, settings: Optional[Settings] = None, *, unsafe: bool = False
) -> FixResult:
    """Fix ``text`` in memory; ``new_text, left = fix_text(...)`` also works."""
    return Linter(_settings(settings, path)).fix(text, path, unsafe=unsafe)


def lint_paths(
    paths: Sequence[str | Path],
    settings: Optional[Settings] = None,
    *,
    fix: bool = False,
    unsafe: bool = False,
) -> RunResult:
    """``fusionlint check PATHS`` (``fix=True``: ``--fix``, which writes files) without printing.

    Files that could not be linted are in ``errors``; an internal error (a bug in a rule) is an
    error with ``code == "internal"``.
    """
    from fusionlint.runner import RunOptions, run

    targets = [str(p) for p in paths] or ["."]
    settings = _settings(settings, targets[0])
    outcome = run(targets, settings, RunOptions(fix=fix, unsafe_fixes=unsafe or settings.unsafe_fixes))
    outcome.result.errors.extend(outcome.internal_errors)
    return outcome.result
