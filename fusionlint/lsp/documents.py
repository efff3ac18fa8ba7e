"""The open buffers: text and version per URI, kept by the server itself.

pygls keeps documents too, but splits lines with ``str.splitlines`` (which also breaks at form
feeds and ``\\u2028``, so an incremental edit after such a character lands on the wrong line);
here changes are applied with the same line rules the rest of fusionlint uses.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from dataclasses import dataclass, field
from typing import Optional

from fusionlint.lsp.positions import LineIndex


@dataclass
class Document:
    uri: str
    path: Optional[str]  # local file system path; None for untitled buffers
    text: str
    version: Optional[int]
    _index: Optional[LineIndex] = field(default=None, repr=False)
    _definitions: Optional["Definitions"] = field(default=None, repr=False)

    @property
    def lines(self) -> LineIndex:
        if self._index is None or self._index.text is not self.text:
            self._index = LineIndex(self.text)
        return self._index

    @property
    def definitions(self) -> "Definitions":
        if self._definitions is None or self._definitions.text is not self.text:
            self._definitions = Definitions(self.text)
        return self._definitions

    def apply(self, changes, version: Optional[int], encoding: str) -> None:
        """Apply ``textDocument/didChange`` content changes in order (full or ranged)."""
        for change in changes:
            rng = getattr(change, "range", None)
            if rng is None:
                self.text = change.text
                continue
            lines = LineIndex(self.text)
            start = lines.offset(rng.start.line, rng.start.character, encoding)
            end = lines.offset(rng.end.line, rng.end.character, encoding)
            if end < start:
                start, end = end, start
            self.text = self.text[:start] + change.text + self.text[end:]
        self.version = version


_DEFINITION = re.compile(r"^[ \t]*(?:(class)|(?:async[ \t]+)?def)[ \t]+(\w+)", re.M)


class Definitions:
    """Where each ``class NAME`` / ``def NAME`` line starts, found in one pass over the text (a
    diagnostic's related information names the chain's functions; 200 diagnostics searched the
    whole text twice each)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._classes: dict[str, int] = {}  # name -> end of its first ``class NAME``
        self._defs: dict[str, list[int]] = {}  # name -> starts of its ``def NAME`` lines
        for match in _DEFINITION.finditer(text):
            if match.group(1):
                self._classes.setdefault(match.group(2), match.end())
            else:
                self._defs.setdefault(match.group(2), []).append(match.start())

    def def_after(self, owner: Optional[str], name: str) -> Optional[int]:
        """The first ``def name`` after the first ``class owner`` (from the start without one)."""
        start = self._classes.get(owner, 0) if owner else 0
        found = self._defs.get(name, ())
        i = bisect_left(found, start)
        return found[i] if i < len(found) else None
