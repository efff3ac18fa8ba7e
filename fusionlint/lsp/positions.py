"""LSP positions <-> fusionlint positions.

fusionlint (like libcst) counts columns in Unicode code points. An LSP client counts in UTF-16
code units unless it negotiated ``utf-8`` or ``utf-32`` (``general.positionEncodings``), so a line
holding ``é`` or an emoji before the flagged code puts the same column at different numbers.
Lines are split as Python splits them (``\\r\\n``, ``\\r``, ``\\n``: the LSP's line ends too), never
with ``str.splitlines``, which also breaks on form feeds and ``\\u2028``.
"""

from __future__ import annotations

from fusionlint.lines import line_starts

UTF8, UTF16, UTF32 = "utf-8", "utf-16", "utf-32"


def _units(char: str, encoding: str) -> int:
    cp = ord(char)
    if encoding == UTF32:
        return 1
    if encoding == UTF8:
        return 1 if cp < 0x80 else 2 if cp < 0x800 else 3 if cp < 0x10000 else 4
    return 2 if cp >= 0x10000 else 1  # UTF-16: characters beyond the BMP are surrogate pairs


def to_client(line: str, column: int, encoding: str) -> int:
    """0-based code-point ``column`` on ``line`` -> 0-based client code units."""
    if encoding == UTF32 or line.isascii():  # one code unit per character in every encoding
        return column
    return sum(_units(c, encoding) for c in line[:column])


def from_client(line: str, character: int, encoding: str) -> int:
    """0-based client code units -> 0-based code-point column, clamped to the line (as the LSP says).

    A position inside a character (half a surrogate pair, mid UTF-8 sequence) moves to its start.
    """
    if encoding == UTF32 or line.isascii():
        return max(0, min(character, len(line)))
    units = 0
    for index, char in enumerate(line):
        width = _units(char, encoding)
        if units + width > character:
            return index
        units += width
    return len(line)


class LineIndex:
    """One text's lines, for converting offsets and positions both ways."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.starts = line_starts(text)

    def line_text(self, line: int) -> str:
        """0-based ``line`` without its line end ('' past the end)."""
        if not 0 <= line < len(self.starts):
            return ""
        start = self.starts[line]
        end = self.starts[line + 1] if line + 1 < len(self.starts) else len(self.text)
        return self.text[start:end].rstrip("\r\n")

    def offset(self, line: int, character: int, encoding: str) -> int:
        """Client position -> offset into the text (past the end: the end of the text)."""
        if line < 0:
            return 0
        if line >= len(self.starts):
            return len(self.text)
        return self.starts[line] + from_client(self.line_text(line), character, encoding)

    def position(self, offset: int, encoding: str) -> tuple[int, int]:
        """Offset into the text -> client (line, character)."""
        import bisect

        offset = max(0, min(offset, len(self.text)))
        line = bisect.bisect_right(self.starts, offset) - 1
        column = offset - self.starts[line]
        text = self.line_text(line)
        return line, to_client(text, min(column, len(text)), encoding)

    def client_position(self, line: int, column: int, encoding: str) -> tuple[int, int]:
        """fusionlint's 1-based line and 1-based code-point column -> client (line, character)."""
        text = self.line_text(line - 1)
        return line - 1, to_client(text, min(max(column - 1, 0), len(text)), encoding)
