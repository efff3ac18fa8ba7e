"""Where a long Python text may be cut into pieces that parse on their own (``fusionlint.cst_parse``
and ``fusionlint.pyast.parse`` parse a long text piece by piece: a parser's peak memory is that of
its largest piece, not of the file).

A cut is before a top-level ``def``/``class``/decorator line that follows a blank or comment line
(not a decorated ``def``: its decorators come first), or before an indented ``def``/decorator line
that follows a blank line, where no line of spaces alone comes between it and the code before: a method of a long class (transformers' ``PreTrainedModel`` is 3,014 of
the 4,001 lines its file's sparse text has), whose piece the parsers read as the body of a class
and add to the class the piece before ends with. Such a line may still be inside a string or
brackets, or the indented one in a function or another block, or deeper than the class's
statements; the parsers find that out from the piece before it (it does not parse, or does not end
with a class whose statements have that indentation), and join the two pieces.
"""

from __future__ import annotations

import re
from typing import Optional

# Texts of more than this many lines are parsed in pieces of about PIECE_LINES lines.
SPLIT_LINES = 1200
PIECE_LINES = 300
_DEFINITION = re.compile(r"^([ \t]*)(?:def |class |async def |@)", re.M)


def cuts(text: str, piece_lines: Optional[int] = None, split_lines: Optional[int] = None) -> list[tuple[int, str]]:
    """(offset, indentation) where a piece of ``text`` may start, about ``piece_lines`` lines apart
    (indentation "": a top-level statement; else a class's method); none for a text of
    ``split_lines`` lines or fewer, or one with a carriage return (the parsers count its line ends
    differently from a piece's)."""
    piece_lines = PIECE_LINES if piece_lines is None else piece_lines
    split_lines = SPLIT_LINES if split_lines is None else split_lines
    if "\r" in text or text.count("\n") <= split_lines:
        return []
    found: list[tuple[int, str]] = []
    start = 0
    for match in _DEFINITION.finditer(text):
        at, indent = match.start(), match.group(1)
        before = text[text.rfind("\n", 0, at - 1) + 1 : at - 1] if at else "#"
        if before.strip() and (indent or not before.startswith("#")):
            continue  # a decorator (of one line or more) or the file's first line before it
        if _spaces_only_line_before(text, at):
            continue
        if text.count("\n", start, at) >= piece_lines:
            found.append((at, indent))
            start = at
    return found


def _spaces_only_line_before(text: str, at: int) -> bool:
    """Is there a line of spaces or tabs alone among the blank and comment lines before ``at``? libcst
    reads one differently at the end of a piece (its module's footer) and before a statement."""
    end = at - 1  # the newline that ends the line before
    while end > 0:
        start = text.rfind("\n", 0, end) + 1
        line = text[start:end]
        if line and not line.strip():
            return True
        if line and not line.lstrip().startswith("#"):
            return False
        end = start - 1
    return False
