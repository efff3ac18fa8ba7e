"""Human output in the style of Ruff: location, message, the source line with a caret range, hints.

Colour comes from rich and only when ``options["color"]`` is true (the CLI decides: ``--color``,
``NO_COLOR``/``FORCE_COLOR``, else whether stdout is a terminal). Paths are shown relative to the
current directory (absolute outside it), so a terminal can open them; see ``report/paths.py``.
"""

from __future__ import annotations

import io
from collections import Counter
from pathlib import Path
from typing import Mapping, Optional

from rich.console import Console
from rich.text import Text

from fusionlint.lines import split_lines
from fusionlint.report.paths import CwdPaths
from fusionlint.rule import Applicability, Finding, RunResult

_SEVERITY_STYLE = {"error": "bold red", "warning": "bold yellow", "info": "bold blue"}


class _Sources:
    """Reads each reported file once, for the source excerpt; missing files just lose the excerpt."""

    def __init__(self, root: Path, given: Optional[Mapping[str, str]] = None) -> None:
        self.root = root
        self.cache: dict[str, Optional[list[str]]] = {}
        for path, text in (given or {}).items():  # texts not read from disk (stdin)
            self.cache[path] = split_lines(text)

    def line(self, path: str, number: int) -> Optional[str]:
        if path not in self.cache:
            candidate = Path(path)
            if not candidate.is_absolute():
                candidate = self.root / candidate
            try:
                self.cache[path] = split_lines(candidate.read_text(encoding="utf-8", errors="replace"))
            except OSError:
                self.cache[path] = None
        lines = self.cache[path]
        if lines is None or not 1 <= number <= len(lines):
            return None
        return lines[number - 1]


def _finding(f: Finding, sources: _Sources, show_source: bool, shown_path: str) -> Text:
    out = Text()
    out.append(f"{shown_path}:{f.line}:{f.column}: ", style="bold")
    out.append(f.code, style=_SEVERITY_STYLE.get(f.severity.value, "bold"))
    out.append(f" {f.message}\n")
    if not show_source:  # --quiet: one line per finding
        return out
    src = sources.line(f.path, f.line)
    if src is not None:
        gutter = " " * len(str(f.line))
        end = f.end_column if f.end_line == f.line else len(src) + 1
        width = max(1, end - f.column)
        out.append(f"{gutter} |\n", style="blue")
        out.append(f"{f.line} | ", style="blue")
        out.append(src + "\n")
        out.append(f"{gutter} | ", style="blue")
        # keep tabs so the carets line up under the same characters
        prefix = "".join(ch if ch == "\t" else " " for ch in src[: f.column - 1])
        out.append(prefix + "^" * width, style=_SEVERITY_STYLE.get(f.severity.value, "bold"))
        out.append(f" {f.code}\n")
        out.append(f"{gutter} |\n", style="blue")
    effects = ", ".join(e.value for e in f.effects)
    if effects:
        out.append(f"  = effect: {effects}\n", style="dim")
    if f.context:
        out.append(f"  = compiled via: {f.context}\n", style="dim")
    if f.fix is not None:
        how = "--fix" if f.fix.applicability is Applicability.SAFE else "--unsafe-fixes"
        title = f.fix.title or "fix available"
        out.append(f"  = help: {title} ({f.fix.applicability.value} fix, {how})\n", style="cyan")
    if f.confirmation:
        out.append(f"  = confirm: {_confirmation(f.confirmation)}\n", style="magenta")
    return out


def _confirmation(c: Mapping) -> str:
    status = c.get("status", "?")
    evidence = c.get("summary") or c.get("reason") or ""
    return f"{status}" + (f": {evidence}" if evidence else "")


def render(result: RunResult, *, rules: Mapping, root: Path, tool_version: str, options: Optional[Mapping] = None) -> str:
    options = options or {}
    color = bool(options.get("color"))
    quiet = bool(options.get("quiet"))
    statistics = bool(options.get("statistics"))
    buffer = io.StringIO()
    # The CLI has decided (--color, NO_COLOR, FORCE_COLOR, TTY): rich must neither guess from the
    # buffer nor from TERM (TERM=dumb in CI would drop an explicit --color always).
    console = Console(
        file=buffer,
        force_terminal=color,
        no_color=not color,
        color_system="standard" if color else None,
        highlight=False,
        soft_wrap=True,
        width=10_000,
    )
    sources = _Sources(root, options.get("sources"))
    shown = CwdPaths(root)
    for error in result.errors:
        where = (shown(error.path) if error.path else "") + (f":{error.line}:{error.column or 1}" if error.line else "")
        console.print(Text.assemble((f"{where}: ", "bold"), (error.code, "bold red"), f" {error.message}"))
    if statistics:
        counts = Counter(f.code for f in result.findings)
        fixable = Counter(f.code for f in result.findings if f.fix is not None)
        for code, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
            name = rules[code].name if code in rules else ""
            mark = "[*]" if fixable[code] else "   "
            console.print(f"{n:>5}  {code}  {mark} {name}")
    else:
        for f in result.findings:
            console.print(_finding(f, sources, show_source=not quiet, shown_path=shown(f.path)), end="")
            if not quiet:
                console.print()
    if not quiet:
        summary = _summary(result)
        if result.target_torch:  # findings depend on the torch version judged against (`target-torch`)
            summary.append(f" Target torch: {result.target_torch}.")
        console.print(summary)
    return buffer.getvalue()


def _files(n: int) -> str:
    return f"{n} file{'s' if n != 1 else ''}"


def _summary(result: RunResult) -> Text:
    """One line that says what happened: findings, files checked, files that could not be."""
    n = len(result.findings)
    safe = sum(1 for f in result.findings if f.fix is not None and f.fix.applicability is Applicability.SAFE)
    unsafe = sum(1 for f in result.findings if f.fix is not None and f.fix.applicability is Applicability.UNSAFE)
    checked = result.files_checked
    if result.files_found:
        # Errors about a fix (a file that was checked) do not count as unchecked files.
        unchecked = max(result.files_found - checked, 0)
    else:  # a result not made by the runner
        unchecked = len({e.path for e in result.errors})
    parts = []
    if result.fixed:
        parts.append(f"Fixed {result.fixed} finding{'s' if result.fixed != 1 else ''}.")
    if n:
        extras = []
        if safe:
            extras.append(f"{safe} fixable with --fix")
        if unsafe:
            extras.append(f"{unsafe} more with --unsafe-fixes")
        line = f"Found {n} finding{'s' if n != 1 else ''} in {_files(checked)}"
        line += f" ({', '.join(extras)})" if extras else ""
    elif checked and not unchecked:
        line = f"All checks passed ({_files(checked)})"
    elif checked:
        line = f"No findings in {_files(checked)}"
    elif unchecked:
        line = "No files checked"
    else:
        line = "No Python files found"
    if unchecked:
        line += f"; {_files(unchecked)} could not be checked"
    parts.append(line + ".")
    return Text(" ".join(parts), style="bold")
