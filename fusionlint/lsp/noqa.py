"""The "Suppress FLxxx on this line" edit: add ``# noqa: FLxxx``, or merge into an existing one.

The comment goes on the finding's first line, unless that line ends inside a multi-line string
(a ``#`` there would be part of the string): then on the line where the string ends. Any line of a
statement works (see fusionlint.suppress).
"""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass
from typing import Optional

from fusionlint.lines import split_lines

_NOQA_CODES = re.compile(r"#\s*noqa\s*:\s*[A-Za-z]+[0-9]+(?:(?:\s*,\s*|\s+)[A-Za-z]+[0-9]+)*", re.IGNORECASE)


# f-strings are split into several tokens from Python 3.12 on; their middle and end can span lines.
_STRING_PARTS = frozenset(
    getattr(tokenize, name) for name in ("STRING", "FSTRING_MIDDLE", "FSTRING_END") if hasattr(tokenize, name)
)


@dataclass(frozen=True)
class LineEdit:
    """Replace code points [start, end) of 1-based ``line`` with ``text``."""

    line: int
    start: int
    end: int
    text: str


def _tokens(source: str) -> list[tokenize.TokenInfo]:
    try:
        return list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return []


def _target_line(tokens: list[tokenize.TokenInfo], line: int) -> int:
    """Move past multi-line strings whose text covers the end of ``line``."""
    moved = True
    while moved:
        moved = False
        for tok in tokens:
            if tok.type in _STRING_PARTS and tok.start[0] <= line < tok.end[0]:
                line, moved = tok.end[0], True
    return line


def _comment_on(tokens: list[tokenize.TokenInfo], line: int) -> Optional[tokenize.TokenInfo]:
    for tok in tokens:
        if tok.type == tokenize.COMMENT and tok.start[0] == line:
            return tok
    return None


def suppress_edit(source: str, line: int, code: str) -> Optional[LineEdit]:
    """The edit that suppresses ``code`` on the statement starting at 1-based ``line``; None if impossible."""
    lines = split_lines(source)
    tokens = _tokens(source)
    target = _target_line(tokens, line) if tokens else line
    if not 1 <= target <= len(lines):
        return None
    text = lines[target - 1]
    comment = _comment_on(tokens, target) if tokens else None
    if comment is not None and comment.line.rstrip("\r\n") == text:
        merged = _NOQA_CODES.search(comment.string)
        if merged is not None:
            at = comment.start[1] + merged.end()
            return LineEdit(target, at, at, f", {code}")
    body = text.rstrip()
    return LineEdit(target, len(body), len(text), f"  # noqa: {code}")
