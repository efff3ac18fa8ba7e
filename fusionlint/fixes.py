"""Apply fixes to a source text: non-overlapping per round, re-lint, repeat until stable.

Black's rule applies: a change to user code is checked before it is written. Every round's result
must parse; if it does not, the round is discarded and the fixing stops with an error, so the caller
never writes invalid Python.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable

import libcst as cst

from fusionlint.rule import Applicability, Edit, Finding

MAX_ROUNDS = 10


@dataclass
class FixOutcome:
    source: str  # the fixed text (the original when nothing applied)
    applied: int = 0  # number of fixes applied over all rounds
    findings: list[Finding] = field(default_factory=list)  # what remains after fixing
    error: str | None = None  # set when a round produced invalid Python (nothing of it kept)


def allowed(finding: Finding, unsafe: bool) -> bool:
    fix = finding.fix
    return fix is not None and (fix.applicability is Applicability.SAFE or unsafe)


def _line_starts(text: str) -> list[int]:
    starts = [0]
    for i, ch in enumerate(text):
        if ch == "\n":
            starts.append(i + 1)
    return starts


def _offset(starts: list[int], line: int, column: int) -> int:
    return starts[line - 1] + column - 1


def apply_edits(text: str, fixes: Iterable[tuple[Edit, ...]]) -> tuple[str, int]:
    """Apply whole fixes whose edits overlap no edit of an earlier-accepted fix; return (text, count)."""
    starts = _line_starts(text)
    taken: list[tuple[int, int]] = []
    accepted: list[tuple[int, int, str]] = []
    count = 0
    for edits in fixes:
        spans = [(_offset(starts, e.line, e.column), _offset(starts, e.end_line, e.end_column), e.content) for e in edits]
        if any(_overlaps(a, b, taken) for a, b, _ in spans):
            continue  # retried next round, against the updated text
        taken.extend((a, b) for a, b, _ in spans)
        accepted.extend(spans)
        count += 1
    for start, end, content in sorted(accepted, key=lambda s: (s[0], s[1]), reverse=True):
        text = text[:start] + content + text[end:]
    return text, count


def _overlaps(start: int, end: int, taken: list[tuple[int, int]]) -> bool:
    for a, b in taken:
        if start < b and a < end:
            return True
        if start == end == a == b:  # two insertions at one point: order would be ambiguous
            return True
    return False


def fix_source(
    source: str,
    lint: Callable[[str], list[Finding]],
    *,
    unsafe: bool = False,
    findings: list[Finding] | None = None,
) -> FixOutcome:
    """Fix ``source`` until no applicable fix is left (at most MAX_ROUNDS rounds)."""
    current = source
    remaining = findings if findings is not None else lint(current)
    applied = 0
    seen = {current}
    for _ in range(MAX_ROUNDS):
        todo = [f for f in sorted(remaining, key=lambda f: f.sort_key) if allowed(f, unsafe)]
        if not todo:
            break
        new, count = apply_edits(current, (f.fix.edits for f in todo))  # type: ignore[union-attr]
        if count == 0 or new in seen:
            break  # nothing applicable or a fix that undoes itself: stop rather than loop
        try:
            cst.parse_module(new)
        except (cst.ParserSyntaxError, RecursionError) as exc:
            codes = sorted({f.code for f in todo})
            return FixOutcome(current, applied, remaining, f"a fix by {', '.join(codes)} produced invalid Python ({exc}); not applied")
        seen.add(new)
        current, applied = new, applied + count
        remaining = lint(current)
    return FixOutcome(current, applied, remaining)
