"""Human output in the style of Ruff: location, message, the source line with a caret range, hints.

Colour only when ``options["color"]`` is true (the CLI decides: ``--color``, ``NO_COLOR``/
``FORCE_COLOR``, else whether stdout is a terminal), as the ANSI SGR codes of eight fixed styles.
Paths are shown relative to the current directory (absolute outside it), so a terminal can open
them; see ``report/paths.py``.

The text is joined here rather than printed through rich's ``Console``: rich measured, wrapped and
styled every segment of every finding, 1.8 of the 2.4 CPU s of a warm run over timm + transformers
(1,636 findings; the run itself 0.4 s). A control character in the text (a source line or a message
quoting one) is shown as U+FFFD, one for one so that the carets stay under their characters: rich
dropped bell, backspace, vertical tab, form feed and carriage return (moving the carets) and let an
escape sequence from a file reach the terminal.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Mapping, Optional

from fusionlint.lines import split_lines
from fusionlint.report.paths import CwdPaths
from fusionlint.rule import Applicability, Finding, RunResult

_SEVERITY_STYLE = {"error": "bold red", "warning": "bold yellow", "info": "bold blue"}
# SGR parameters of each style used below (what rich's "standard" colour system writes for them)
_SGR = {"bold": "1", "bold red": "1;31", "bold yellow": "1;33", "bold blue": "1;34", "blue": "34", "dim": "2",
        "cyan": "36", "magenta": "35"}
# C0 controls but tab and line feed, DEL, C1 controls (a pattern: str.translate took 0.18 s on 1,636 findings)
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


class _Text:
    """Segments of output, each with a style or none, written as plain text or with SGR codes."""

    def __init__(self, color: bool) -> None:
        self.color = color
        self.parts: list[str] = []

    def add(self, text: str, style: Optional[str] = None) -> None:
        if _CONTROL.search(text):
            text = _CONTROL.sub("\ufffd", text)
        if style is None or not self.color or not text:
            self.parts.append(text)
            return
        body, end = (text[:-1], "\n") if text.endswith("\n") else (text, "")
        self.parts.append(f"\x1b[{_SGR[style]}m{body}\x1b[0m{end}" if body else end)

    def line(self, *segments: tuple[str, Optional[str]]) -> None:
        for text, style in segments:
            self.add(text, style)
        self.parts.append("\n")

    def text(self) -> str:
        return "".join(self.parts)


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


def _finding(out: _Text, f: Finding, sources: _Sources, show_source: bool, shown_path: str) -> None:
    out.add(f"{shown_path}:{f.line}:{f.column}: ", "bold")
    out.add(f.code, _SEVERITY_STYLE.get(f.severity.value, "bold"))
    out.add(f" {f.message}\n")
    if not show_source:  # --quiet: one line per finding
        return
    src = sources.line(f.path, f.line)
    if src is not None:
        gutter = " " * len(str(f.line))
        end = f.end_column if f.end_line == f.line else len(src) + 1
        width = max(1, end - f.column)
        out.add(f"{gutter} |\n", "blue")
        out.add(f"{f.line} | ", "blue")
        out.add(src + "\n")
        out.add(f"{gutter} | ", "blue")
        # keep tabs so the carets line up under the same characters
        prefix = "".join(ch if ch == "\t" else " " for ch in src[: f.column - 1])
        out.add(prefix + "^" * width, _SEVERITY_STYLE.get(f.severity.value, "bold"))
        out.add(f" {f.code}\n")
        out.add(f"{gutter} |\n", "blue")
    effects = ", ".join(e.value for e in f.effects)
    if effects:
        out.add(f"  = effect: {effects}\n", "dim")
    if f.context:
        out.add(f"  = compiled via: {f.context}\n", "dim")
    if f.fix is not None:
        how = "--fix" if f.fix.applicability is Applicability.SAFE else "--unsafe-fixes"
        title = f.fix.title or "fix available"
        out.add(f"  = help: {title} ({f.fix.applicability.value} fix, {how})\n", "cyan")
    if f.confirmation:
        out.add(f"  = confirm: {_confirmation(f.confirmation)}\n", "magenta")


def _confirmation(c: Mapping) -> str:
    status = c.get("status", "?")
    evidence = c.get("summary") or c.get("reason") or ""
    return f"{status}" + (f": {evidence}" if evidence else "")


def render(result: RunResult, *, rules: Mapping, root: Path, tool_version: str, options: Optional[Mapping] = None) -> str:
    options = options or {}
    quiet = bool(options.get("quiet"))
    statistics = bool(options.get("statistics"))
    out = _Text(bool(options.get("color")))
    sources = _Sources(root, options.get("sources"))
    shown = CwdPaths(root)
    for error in result.errors:
        where = (shown(error.path) if error.path else "") + (f":{error.line}:{error.column or 1}" if error.line else "")
        out.line((f"{where}: ", "bold"), (error.code, "bold red"), (f" {error.message}", None))
    if statistics:
        counts = Counter(f.code for f in result.findings)
        fixable = Counter(f.code for f in result.findings if f.fix is not None)
        # each finding carries its rule's name: asking ``rules`` imported every rule (and libcst) in a warm run
        names = {f.code: f.name for f in result.findings if f.name}
        for code, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
            name = names.get(code) or (rules[code].name if code in rules else "")
            mark = "[*]" if fixable[code] else "   "
            out.line((f"{n:>5}  {code}  {mark} {name}", None))
    else:
        for f in result.findings:
            _finding(out, f, sources, show_source=not quiet, shown_path=shown(f.path))
            if not quiet:
                out.add("\n")
    if not quiet:
        summary = _summary(result)
        if result.target_torch:  # findings depend on the torch version judged against (`target-torch`)
            summary += f" Target torch: {result.target_torch}."
        out.line((summary, "bold"))
    return out.text()


def _files(n: int) -> str:
    return f"{n} file{'s' if n != 1 else ''}"


def _summary(result: RunResult) -> str:
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
    return " ".join(parts)
