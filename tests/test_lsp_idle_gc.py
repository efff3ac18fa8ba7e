"""The language server collects cyclic garbage when the buffers are quiet, not inside a lint."""

from __future__ import annotations

import asyncio
import gc

from fusionlint.lsp import idle_gc


def test_collects_after_a_quiet_spell_and_not_while_typing(monkeypatch):
    monkeypatch.setattr(idle_gc, "IDLE_SECONDS", 0.05)
    was_enabled = gc.isenabled()
    collector = idle_gc.IdleCollector()
    try:
        collector.start()
        assert not gc.isenabled()  # no automatic collection in the middle of a lint

        async def session() -> list[int]:
            seen = []
            collector.work_done()
            await asyncio.sleep(0.02)
            collector.cancel()  # a change arrived before the quiet spell ended
            await asyncio.sleep(0.1)
            seen.append(collector.collections)
            collector.work_done()
            await asyncio.sleep(0.1)
            seen.append(collector.collections)
            return seen

        assert asyncio.run(session()) == [0, 1]
        collector.work_done()  # outside an event loop: nothing scheduled, nothing raised
        assert collector.collections == 1
    finally:
        if was_enabled:
            gc.enable()
