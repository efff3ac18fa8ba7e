"""Run fusionlint over paths: discover, read, index the project, lint each file, optionally fix."""

from __future__ import annotations

import difflib
import gc
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

from fusionlint import config as config_mod
from fusionlint.analysis.project import ProjectIndex
from fusionlint.config import Settings
from fusionlint.engine import Engine
from fusionlint.project.model import Project
from fusionlint.files import SourceError, UsageError, atomic_write, discover, display_path, read_source_encoded
from fusionlint.fixes import fix_source
from fusionlint.registry import all_rules, unknown_selectors
from fusionlint.rule import FileError, Finding, Rule, RunResult


@dataclass
class RunOptions:
    fix: bool = False
    unsafe_fixes: bool = False
    diff: bool = False  # with fix: do not write, collect unified diffs instead
    # Called before a fixed text is written; returns False to veto it (the confirm pass's --verify).
    verify_fix: Optional[Callable[[Path, str, str, list[Finding]], bool]] = None


@dataclass
class Run:
    result: RunResult
    diffs: list[str] = field(default_factory=list)
    internal_errors: list[FileError] = field(default_factory=list)


def enabled_rules(settings: Settings) -> list[type[Rule]]:
    """Rules on for at least some file (per-file-ignores are applied per finding later)."""
    rules = all_rules()
    bad = unknown_selectors([*(settings.select or []), *settings.extend_select, *settings.ignore], rules)
    if bad:
        raise config_mod.ConfigError(f"unknown rule code or prefix: {', '.join(bad)} (see `fusionlint rules`)")
    return [
        r
        for code, r in rules.items()
        if config_mod.is_selected(code, settings, default_enabled=r.default_enabled, path="\x00")
    ]


def run(paths: list[str], settings: Settings, options: RunOptions = RunOptions()) -> Run:
    rules = enabled_rules(settings)
    files, errors = discover(
        paths,
        root=settings.root,
        exclude=settings.exclude,
        extend_exclude=settings.extend_exclude,
        respect_gitignore=settings.respect_gitignore,
    )
    out = Run(RunResult(errors=list(errors)))
    sources: list[tuple[Path, str, str, str]] = []
    project = ProjectIndex()
    for path in files:
        shown = display_path(path, settings.root)
        try:
            text, encoding = read_source_encoded(path)
        except SourceError as exc:
            out.result.errors.append(FileError(shown, str(exc), exc.line))
            continue
        project.add_file(shown, text)
        sources.append((path, shown, text, encoding))
    engine = Engine(rules, project, _semantic_model(sources, settings))
    # The model's many small objects live for the whole run and hold no cycles: keep the cyclic
    # collector from re-scanning them at every collection of the libcst trees (measured on timm:
    # the lint phase took 16 instead of 14 CPU seconds with them scanned). Unfrozen below.
    gc.freeze()

    for path, shown, text, encoding in sources:
        out.result.files_checked += 1

        def lint(source: str, shown: str = shown) -> list[Finding]:
            found, error = engine.lint_source(source, shown)
            if error is not None:
                raise _LintFailed(error)
            return [f for f in found if config_mod.is_selected(f.code, settings, default_enabled=True, path=shown)]

        try:
            findings = lint(text)
        except _LintFailed as failed:
            out.result.errors.append(failed.error)
            continue
        except Exception as exc:  # a bug in fusionlint or a rule: report it, keep going, exit 2
            out.internal_errors.append(FileError(shown, f"internal error: {type(exc).__name__}: {exc}", code="internal"))
            continue
        if options.fix and findings:
            findings = _fix_file(path, shown, text, encoding, findings, lint, options, out)
        out.result.findings.extend(findings)
    gc.unfreeze()
    out.result.findings.sort(key=lambda f: f.sort_key)
    return out


def _semantic_model(sources: list[tuple[Path, str, str, str]], settings: Settings) -> Project:
    """The project model over every Python file under the root, not only the linted ones: a linted
    file's answers must not depend on which other files were named (pre-commit names staged files)."""
    model = Project()
    for path, shown, text, _ in sources:
        model.add(shown, path, text)
    try:
        everything, _ = discover(
            [settings.root], root=settings.root, exclude=settings.exclude,
            extend_exclude=settings.extend_exclude, respect_gitignore=settings.respect_gitignore,
        )
    except (OSError, ValueError, UsageError):  # an unreadable root: the linted files alone
        return model
    for path in everything:
        shown = display_path(path, settings.root)
        if model.has(shown) or path.suffix != ".py":
            continue
        try:
            text, _ = read_source_encoded(path)
        except SourceError:
            continue  # not linted, so not this run's error
        model.add(shown, path, text)
    return model


class _LintFailed(Exception):
    def __init__(self, error: FileError) -> None:
        super().__init__(error.message)
        self.error = error


def _fix_file(path: Path, shown: str, text: str, encoding: str, findings: list[Finding], lint, options: RunOptions, out: Run) -> list[Finding]:
    try:
        outcome = fix_source(text, lint, unsafe=options.unsafe_fixes, findings=findings)
    except _LintFailed as failed:  # a fix produced something our own parser rejects
        out.result.errors.append(FileError(shown, f"fix not applied: {failed.error.message}", failed.error.line))
        return findings
    if outcome.error:
        out.result.errors.append(FileError(shown, outcome.error))
    if outcome.applied == 0 or outcome.source == text:
        return outcome.findings
    if options.verify_fix is not None and not options.verify_fix(path, text, outcome.source, findings):
        return findings
    if options.diff:
        out.diffs.append(
            "".join(
                difflib.unified_diff(
                    text.splitlines(keepends=True),
                    outcome.source.splitlines(keepends=True),
                    fromfile=f"a/{shown}",
                    tofile=f"b/{shown}",
                )
            )
        )
        return findings  # nothing written: what was found is still there
    try:
        atomic_write(path, outcome.source, encoding=encoding)  # same bytes back: cookie, BOM kept
    except OSError as exc:
        out.result.errors.append(FileError(shown, f"cannot write fixed file: {exc.strerror or exc}"))
        return findings
    out.result.fixed += outcome.applied
    return outcome.findings
