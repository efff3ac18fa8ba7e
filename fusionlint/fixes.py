"""Apply fixes to a source text: non-overlapping per round, re-lint, repeat until stable.

Black's rule applies: a change to user code is checked before it is written. Each edit is checked
against the text it was computed for (the range must still hold the node's source, so a position that
points anywhere else is caught instead of written), and every round's result must parse with libcst
and with CPython; if anything fails, the fixing stops with an error and the caller writes nothing.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Callable, Iterable

import libcst as cst

from fusionlint.lines import PositionError, line_starts, offset
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


class EditMismatch(ValueError):
    """An edit whose range does not exist, or no longer holds the source it was computed for."""


def _span(text: str, starts: list[int], edit: Edit) -> tuple[int, int, str]:
    try:
        start = offset(starts, len(text), edit.line, edit.column)
        end = offset(starts, len(text), edit.end_line, edit.end_column)
    except PositionError as exc:
        raise EditMismatch(str(exc)) from None
    found = text[start:end]
    if end < start or edit.original is not None and not _holds(found, edit.original):
        raise EditMismatch(
            f"the text at {edit.line}:{edit.column}-{edit.end_line}:{edit.end_column} is {found[:40]!r}, "
            f"not the code the fix was computed for ({edit.original[:40]!r})"
        )
    return start, end, edit.content


def _holds(found: str, original: str) -> bool:
    """Whether a range's text is its node's source.

    libcst renders a statement with the comment lines above it, the newline after it, and the lines
    of a block without the indentation its parent gives them, none of which its position range
    covers; so beyond an exact match, the range must hold the node's code up to whitespace.
    """
    if found == original:
        return True
    squeezed = "".join(found.split())
    return bool(squeezed) and squeezed in "".join(original.split())


def apply_edits(text: str, fixes: Iterable[tuple[Edit, ...]]) -> tuple[str, int]:
    """Apply whole fixes whose edits overlap no edit of an earlier-accepted fix; return (text, count).

    Raises EditMismatch when an edit's range is not in ``text`` or does not hold its node's source.
    """
    starts = line_starts(text)
    taken: list[tuple[int, int]] = []
    accepted: list[tuple[int, int, str]] = []
    count = 0
    for edits in fixes:
        spans = [_span(text, starts, e) for e in edits]
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
        codes = ", ".join(sorted({f.code for f in todo}))
        try:
            new, count = apply_edits(current, (f.fix.edits for f in todo))  # type: ignore[union-attr]
        except EditMismatch as exc:
            # A position that does not match is a fusionlint bug: write nothing of this file at all.
            return FixOutcome(source, 0, findings if findings is not None else lint(source), f"fixes by {codes} not applied: {exc}")
        if count == 0 or new in seen:
            break  # nothing applicable or a fix that undoes itself: stop rather than loop
        problem = _invalid_python(new)
        if problem:
            return FixOutcome(current, applied, remaining, f"a fix by {codes} produced invalid Python ({problem}); not applied")
        seen.add(new)
        current, applied = new, applied + count
        remaining = lint(current)
    return FixOutcome(current, applied, remaining)


def _invalid_python(text: str) -> str | None:
    """Why ``text`` is not valid Python for libcst or for CPython itself; None when it is."""
    try:
        cst.parse_module(text)
        compile(text, "<fixed>", "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except (cst.ParserSyntaxError, SyntaxError, ValueError) as exc:
        return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    except (RecursionError, MemoryError) as exc:
        return type(exc).__name__
    return None
