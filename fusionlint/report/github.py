"""GitHub Actions annotations (``--format github``): one workflow command per finding.

Each line looks like::

    ::warning file=models/net.py,line=12,col=9,endLine=12,endColumn=30,title=FL301::message

A finding of severity error becomes ``::error``, warning ``::warning`` and info ``::notice``.
Files that could not be linted become ``::error`` lines titled with their error code. Paths are
relative to the git repository root (GitHub's view), even when fusionlint's project root (where
its pyproject.toml is) is a subdirectory.

Escaping follows the rules of GitHub's runner (actions/toolkit ``command.ts``): in the message
``%``, CR and LF become ``%25``, ``%0D`` and ``%0A``; in property values ``:`` and ``,`` are
escaped too (``%3A``, ``%2C``), since they separate the properties. Columns are given only when
the finding starts and ends on the same line: GitHub does not accept ``col``/``endColumn`` on an
annotation that spans several lines.
"""

from __future__ import annotations

import os
import posixpath
from pathlib import Path, PurePosixPath
from typing import Mapping, Optional

from fusionlint.rule import FileError, Finding, Rule, RunResult, Severity

_COMMAND = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}


def repository_root(root: Path) -> Path:
    """The git work tree holding ``root`` (nearest ancestor with a ``.git``), else ``root``.

    GitHub resolves annotation and SARIF paths against the repository root, while finding
    paths are relative to fusionlint's project root (the directory of the pyproject.toml it
    used), which in a monorepo can be a subdirectory.
    """
    root = Path(os.path.abspath(root))
    for candidate in (root, *root.parents):
        if (candidate / ".git").exists():
            return candidate
    return root


def repository_path(path: str, root: Path, repo: Path) -> Optional[str]:
    """A finding's path relative to ``repo`` (POSIX), or None when it lies outside ``repo``."""
    posix = path.replace("\\", "/")
    if PurePosixPath(posix).is_absolute() or (len(posix) > 1 and posix[1] == ":"):
        try:
            return Path(os.path.abspath(path)).relative_to(repo).as_posix()
        except ValueError:
            return None
    prefix = Path(os.path.abspath(root)).relative_to(repo).as_posix() if root != repo else ""
    joined = posixpath.normpath(posixpath.join(prefix, posix)) if prefix else posixpath.normpath(posix)
    if joined == ".." or joined.startswith("../"):
        return None
    return joined


def escape_data(text: str) -> str:
    """Escape the message part of a workflow command."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """Escape a property value (file, title...) of a workflow command."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _command(name: str, properties: list[tuple[str, object]], message: str) -> str:
    props = ",".join(f"{key}={escape_property(str(value))}" for key, value in properties)
    return f"::{name} {props}::{escape_data(message)}" if props else f"::{name}::{escape_data(message)}"


def finding_line(finding: Finding, path: Optional[str] = None) -> str:
    properties: list[tuple[str, object]] = [
        ("file", path or finding.path),
        ("line", finding.line),
    ]
    if finding.end_line == finding.line:
        properties += [
            ("col", finding.column),
            ("endLine", finding.end_line),
            ("endColumn", finding.end_column),
        ]
    else:
        properties.append(("endLine", finding.end_line))
    properties.append(("title", finding.code))
    return _command(_COMMAND[Severity(finding.severity)], properties, finding.message)


def error_line(error: FileError, path: Optional[str] = None) -> str:
    properties: list[tuple[str, object]] = [("file", path or error.path)]
    if error.line:
        properties.append(("line", error.line))
        if error.column:
            properties.append(("col", error.column))
    properties.append(("title", error.code))
    return _command("error", properties, error.message)


def render(
    result: RunResult,
    *,
    rules: Mapping[str, type[Rule]],
    root: Path,
    tool_version: str,
    options: Optional[Mapping[str, object]] = None,
) -> str:
    """One workflow command per line: file errors first, then findings in path/line order.

    Paths are made relative to the git repository root, as GitHub expects, when fusionlint's
    project root is a subdirectory of it.
    """
    repo = repository_root(root)
    root = Path(os.path.abspath(root))

    def shown(path: str) -> str:
        return repository_path(path, root, repo) or path

    lines = [
        error_line(e, shown(e.path))
        for e in sorted(result.errors, key=lambda e: (e.path, e.line or 0))
    ]
    lines += [
        finding_line(f, shown(f.path)) for f in sorted(result.findings, key=lambda f: f.sort_key)
    ]
    return "".join(line + "\n" for line in lines)
