"""“Already happened on every path to here”, in the cheap form FL205 needs: an earlier event in the
same block, or in a block that encloses this one, happened before this node runs (a later statement of
a block runs only after the earlier ones). An event inside an ``if`` branch does not cover the code
after the ``if``."""

from __future__ import annotations

from typing import Hashable

import libcst as cst


class FirstPerBlock:
    """Remembers, per key, the blocks where an event happened; ``first(key, ctx)`` is True when no
    earlier event of ``key`` covers the current node, and records this one. One instance per file."""

    def __init__(self) -> None:
        self._seen: dict[Hashable, set[int]] = {}
        self._blocks: list[cst.CSTNode] = []  # kept alive, so that their ids stay unique during the file

    def first(self, key: Hashable, ctx, record: bool = True) -> bool:
        """``record=False``: an event that may not happen (the right operand of ``and``/``or``, an arm of a
        conditional expression) covers nothing after it."""
        blocks = [p for p in ctx.iter_parents() if isinstance(p, (cst.IndentedBlock, cst.Module))]
        seen = self._seen.setdefault(key, set())
        if any(id(block) in seen for block in blocks):
            return False
        if blocks and record:
            seen.add(id(blocks[0]))
            self._blocks.append(blocks[0])
        return True
