"""Telling the user how the confirm pass is going: a rich progress bar on a terminal, else lines.

The pass calls ``start(total)``, ``running(label)`` when a module starts on a worker,
``finished(unit_result)`` when it ends (cached, measured, failed or skipped for the budget) and
``stop()``. Calls come from the pool's threads.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Any, Callable, Optional


def describe(ur: Any) -> str:
    """One line for one module's outcome."""
    w = ur.worker
    if w.get("budget"):
        status = "unconfirmed (budget)"
    elif w.get("ok"):
        status = "ok"
    else:
        status = f"unconfirmed: {w.get('reason')}"
    return f"confirm {ur.unit.label}: {status}" + (" (cached)" if ur.cached else f" ({ur.seconds} s)")


class Progress:
    """Does nothing: the base for the two below."""

    def start(self, total: int) -> None: ...

    def running(self, label: str) -> None: ...

    def finished(self, ur: Any) -> None: ...

    def stop(self) -> None: ...


class LineProgress(Progress):
    """One line per finished module (stderr is a file, a CI log or a test)."""

    def __init__(self, echo: Callable[[str], None]) -> None:
        self.echo = echo
        self._lock = threading.Lock()

    def finished(self, ur: Any) -> None:
        with self._lock:
            self.echo(describe(ur))


class BarProgress(Progress):
    """rich's progress bar on stderr: modules done/total, the module running, elapsed time."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress as RichProgress, TextColumn, TimeElapsedColumn

        self._bar = RichProgress(
            TextColumn("confirm"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
            TextColumn("{task.description}"), console=Console(stderr=True), transient=True,
        )
        self._task = None
        self._running: dict[str, float] = {}
        self._lock = threading.Lock()
        self._failed: list[str] = []

    def start(self, total: int) -> None:
        self._bar.start()
        self._task = self._bar.add_task("", total=total)

    def _show(self) -> None:
        current = ", ".join(sorted(self._running, key=self._running.get)[:2])
        self._bar.update(self._task, description=current)

    def running(self, label: str) -> None:
        with self._lock:
            self._running[label] = time.monotonic()
            self._show()

    def finished(self, ur: Any) -> None:
        with self._lock:
            self._running.pop(ur.unit.label, None)
            if not ur.worker.get("ok"):
                self._failed.append(describe(ur))
            self._bar.advance(self._task)
            self._show()

    def stop(self) -> None:
        self._bar.stop()
        for line in self._failed:  # what did not run stays visible after the bar goes
            print(line, file=sys.stderr)


def as_progress(progress: Any) -> Progress:
    if progress is None:
        return Progress()
    if isinstance(progress, Progress):
        return progress
    return LineProgress(progress)


def for_terminal(echo: Callable[[str], None], stream: Optional[Any] = None) -> Progress:
    """The bar when stderr is a terminal, else one line per module."""
    stream = stream or sys.stderr
    if getattr(stream, "isatty", lambda: False)():
        return BarProgress()
    return LineProgress(echo)
