"""Code points <-> LSP client units, and buffer edits, without a server."""

from __future__ import annotations

import pytest
from lsprotocol import types

from fusionlint.lsp.documents import Document
from fusionlint.lsp.positions import LineIndex, from_client, to_client

LINE = 'a = "é😀"; b'


@pytest.mark.parametrize("encoding", ["utf-8", "utf-16", "utf-32"])
def test_columns_round_trip_on_a_line_with_non_ascii_and_an_emoji(encoding):
    for column in range(len(LINE) + 1):
        units = to_client(LINE, column, encoding)
        expected = len(LINE[:column].encode(encoding.replace("utf-16", "utf-16-le").replace("utf-32", "utf-32-le")))
        assert units == expected // {"utf-8": 1, "utf-16": 2, "utf-32": 4}[encoding]
        assert from_client(LINE, units, encoding) == column


def test_a_position_inside_a_character_or_past_the_line_is_clamped():
    emoji_at = LINE.index("😀")
    assert from_client(LINE, to_client(LINE, emoji_at, "utf-16") + 1, "utf-16") == emoji_at
    assert from_client(LINE, 10_000, "utf-8") == len(LINE)


def test_lines_split_as_python_splits_them():
    index = LineIndex("a\x0cb\r\nc\rd\n")  # a form feed does not end a line; a lone CR does
    assert [index.line_text(i) for i in range(3)] == ["a\x0cb", "c", "d"]
    assert index.offset(2, 1, "utf-16") == len("a\x0cb\r\nc\rd")
    assert index.position(len("a\x0cb\r\nc\r"), "utf-16") == (2, 0)


def test_incremental_changes_after_a_form_feed_land_on_the_right_line():
    doc = Document("file:///m.py", "/m.py", "x\x0c = 1\ny = 2\n", 1)
    change = types.TextDocumentContentChangePartial(
        range=types.Range(types.Position(1, 4), types.Position(1, 5)), text="3"
    )
    doc.apply([change], 2, "utf-16")
    assert doc.text == "x\x0c = 1\ny = 3\n" and doc.version == 2
