"""Inline suppression comments.

Recognised forms (case-insensitive; codes matched exactly):

* ``# noqa`` / ``#noqa`` — every code;  ``# noqa: FL101, FL301`` / ``# noqa:FL101`` — those codes.
* ``# fusionlint: ignore`` — every code;  ``# fusionlint: ignore[FL101, FL301]`` — those codes.
* ``# fusionlint: skip-file`` on a line of its own — the whole file.

A comment suppresses findings anywhere in the *logical line* (statement) it sits on, so a
``# noqa`` after the opening line of a multi-line call, or after its closing parenthesis,
both cover a finding on an argument in between. Comments are found with ``tokenize``, which
already knows that a ``#`` inside a string is not a comment.

A malformed code list (``# noqa:`` followed by no code, ``ignore[]``) suppresses nothing,
as in Ruff: a typo must not silently widen into "ignore everything".
"""

from __future__ import annotations

import io
import re
import tokenize
from typing import Optional

from fusionlint.lines import split_lines

_CODE = r"[A-Za-z]+[0-9]+"
_NOQA_RE = re.compile(r"#\s*noqa(?![\w-])", re.IGNORECASE)
_CODE_LIST_RE = re.compile(rf"\s*:\s*({_CODE}(?:(?:\s*,\s*|\s+){_CODE})*)", re.IGNORECASE)
_IGNORE_RE = re.compile(
    r"#\s*fusionlint\s*:\s*ignore(?![\w-])(?:\[(?P<codes>[^\]]*)\])?", re.IGNORECASE
)
_SKIP_FILE_RE = re.compile(r"#\s*fusionlint\s*:\s*skip-file(?![\w-])", re.IGNORECASE)
_FULL_CODE_RE = re.compile(rf"^{_CODE}$")
# Quick screen: most files have no suppression comment at all; skip tokenizing them.
_ANY_RE = re.compile(r"noqa|fusionlint", re.IGNORECASE)

ALL = None  # a directive value meaning "every code"
_Directive = Optional[frozenset]  # None: all codes; else the upper-case codes


def parse_comment(comment: str) -> list[_Directive]:
    """The suppression directives in one comment's text (starting at its ``#``)."""
    found: list[_Directive] = []
    for m in _NOQA_RE.finditer(comment):
        rest = comment[m.end() :]
        if rest.lstrip().startswith(":"):
            codes = _CODE_LIST_RE.match(rest)
            if codes:  # "# noqa: FL101 because ..." stops at the first non-code word
                found.append(frozenset(c.upper() for c in re.split(r"[\s,]+", codes.group(1))))
            # "# noqa:" without a valid code: no suppression (see module docstring)
        else:
            found.append(ALL)
    for m in _IGNORE_RE.finditer(comment):
        body = m.group("codes")
        if body is None:
            found.append(ALL)
            continue
        codes = [c for c in re.split(r"[\s,]+", body.strip()) if c]
        if codes and all(_FULL_CODE_RE.match(c) for c in codes):
            found.append(frozenset(c.upper() for c in codes))
    return found


class Suppressions:
    """The suppression comments of one source file, indexed by the physical lines they cover."""

    def __init__(self) -> None:
        self.skip_file = False
        # line -> directives covering it
        self._by_line: dict[int, list[_Directive]] = {}
        # True when tokenize rejected the file and we matched line by line (see is_suppressed)
        self.fallback = False

    @classmethod
    def from_source(cls, source: str) -> "Suppressions":
        self = cls()
        if not _ANY_RE.search(source):
            return self
        try:
            self._scan_tokens(source)
        except (tokenize.TokenError, SyntaxError):
            # An unterminated bracket or bad indentation: index what we can line by line.
            self._by_line.clear()
            self.skip_file = False
            self._scan_lines(source)
        return self

    def _cover(self, first: int, last: int, directives: list[_Directive]) -> None:
        for line in range(first, last + 1):
            self._by_line.setdefault(line, []).extend(directives)

    def _scan_tokens(self, source: str) -> None:
        skip = {
            tokenize.COMMENT,
            tokenize.NL,
            tokenize.NEWLINE,
            tokenize.INDENT,
            tokenize.DEDENT,
            tokenize.ENCODING,
            tokenize.ENDMARKER,
        }
        start: Optional[int] = None  # first line of the logical line being read
        pending: list[_Directive] = []  # directives found inside it
        last_line = 1
        # newline=None: a lone \r ends a line, as it does for libcst and CPython.
        for tok in tokenize.generate_tokens(io.StringIO(source, newline=None).readline):
            kind, text, (row, _), (end_row, _), line_text = tok
            last_line = end_row
            if kind == tokenize.COMMENT:
                directives = parse_comment(text)
                if start is None:
                    # A comment on its own line between statements covers only that line.
                    if _SKIP_FILE_RE.match(text):
                        self.skip_file = True
                    if directives:
                        self._cover(row, row, directives)
                else:
                    pending.extend(directives)
            elif kind == tokenize.NEWLINE:
                if start is not None and pending:
                    self._cover(start, row, pending)
                start, pending = None, []
            elif kind not in skip and start is None:
                start = row
        if start is not None and pending:  # source ending without a NEWLINE token
            self._cover(start, last_line, pending)

    def _scan_lines(self, source: str) -> None:
        self.fallback = True
        for number, line in enumerate(split_lines(source), start=1):
            hash_at = line.find("#")
            if hash_at == -1:
                continue
            comment = line[hash_at:]
            if not line[:hash_at].strip() and _SKIP_FILE_RE.match(comment):
                self.skip_file = True
            directives = parse_comment(comment)
            if directives:
                self._cover(number, number, directives)

    def is_suppressed(self, code: str, line: int, end_line: Optional[int] = None) -> bool:
        """Whether a finding of ``code`` starting on ``line`` is suppressed.

        Normally the logical line containing ``line`` decides. ``end_line`` matters only in
        fallback mode (tokenize rejected the file, so statements are unknown): then a
        comment on any line from ``line`` to ``end_line`` counts.
        """
        if self.skip_file:
            return True
        code = code.upper()
        last = end_line if (self.fallback and end_line and end_line > line) else line
        for number in range(line, last + 1):
            for directive in self._by_line.get(number, ()):
                if directive is ALL or code in directive:
                    return True
        return False
