"""The open buffers: text and version per URI, kept by the server itself.

pygls keeps documents too, but splits lines with ``str.splitlines`` (which also breaks at form
feeds and ``\\u2028``, so an incremental edit after such a character lands on the wrong line);
here changes are applied with the same line rules the rest of fusionlint uses.
"""

from __future__ import annotations

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

    @property
    def lines(self) -> LineIndex:
        if self._index is None or self._index.text is not self.text:
            self._index = LineIndex(self.text)
        return self._index

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
