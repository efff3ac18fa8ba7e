"""Python's cyclic garbage collector, run while the editor is quiet instead of inside a lint.

A full collection walks every live object, and a language server keeps many alive (each project's
index and model, each open file's memo). Left automatic, one fired in the middle of a keystroke's
lint: 137 ms of a 150 ms budget (2,016-line file, loaded machine). Nearly all of a lint's garbage is
freed by reference counting anyway, so the server turns automatic collection off and collects once
no lint has run for ``IDLE_SECONDS``; memory stays bounded by what a burst of typing leaves behind.
"""

from __future__ import annotations

import asyncio
import gc
from typing import Optional

IDLE_SECONDS = 1.0


class IdleCollector:
    def __init__(self) -> None:
        self._timer: Optional[asyncio.TimerHandle] = None
        self.collections = 0

    def start(self) -> None:
        gc.disable()

    def work_done(self) -> None:
        """A lint finished: collect if nothing else happens for a while."""
        self.cancel()
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no event loop (a lint called outside the server): automatic GC decides
            return
        self._timer = loop.call_later(IDLE_SECONDS, self._collect)

    def cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _collect(self) -> None:
        self._timer = None
        gc.collect()
        self.collections += 1
