"""Keeping track of, and ending, every process a confirm worker's user code starts.

A module's ``forward`` may start processes of its own. One started in the worker's process group
dies with ``killpg``; one that calls ``setsid`` (or is double-forked away) leaves the group, and once
its parent exits it would be re-parented to init and outlive the run. On Linux the worker therefore
makes itself a *child subreaper* (``prctl(PR_SET_CHILD_SUBREAPER)``): orphans anywhere below it are
re-parented to the worker instead of init, so they stay visible in its process tree (``/proc``), and
``kill_tree`` can find and end them. Elsewhere only the process group is ended.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from typing import Optional

_PR_SET_CHILD_SUBREAPER = 36  # <linux/prctl.h>


def become_subreaper() -> bool:
    """Make orphaned descendants of this process its children (Linux); False where unsupported."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _parents() -> dict[int, int]:
    """pid -> parent pid of every visible process (Linux /proc); empty where there is no /proc."""
    out: dict[int, int] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return out
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue  # exited meanwhile
        # "pid (comm) state ppid ...": comm may contain spaces and parentheses, so split after
        # the last ")".
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) >= 2:
            out[int(name)] = int(fields[1])
    return out


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` in the process tree (children first)."""
    children: dict[int, list[int]] = {}
    for child, parent in _parents().items():
        children.setdefault(parent, []).append(child)
    found: list[int] = []
    todo = list(children.get(pid, []))
    while todo:
        p = todo.pop()
        found.append(p)
        todo.extend(children.get(p, []))
    return found


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def kill_descendants(pid: Optional[int] = None, rounds: int = 5) -> int:
    """SIGKILL every process below ``pid`` (default: this process); returns how many were signalled.

    A few rounds, because a process may fork between the scan and the kill; killed processes
    left as zombies are not counted again once only zombies remain.
    """
    pid = os.getpid() if pid is None else pid
    total = 0
    seen: set[int] = set()
    for _ in range(rounds):
        fresh = [p for p in descendants(pid) if p not in seen]
        if not fresh:
            break
        for p in fresh:
            _kill(p)
        seen.update(fresh)
        total += len(fresh)
    return total


def reap_children(seconds: float = 2.0) -> None:
    """Collect exited children (this process is their subreaper) so none is left a zombie."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return  # no children left
        if pid == 0:  # children remain, none exited yet
            time.sleep(0.01)


def kill_group_and_tree(pid: int) -> None:
    """End a running (not yet reaped) worker started with ``start_new_session=True``: its tree,
    its group, then itself."""
    try:
        os.kill(pid, signal.SIGSTOP)  # a stopped worker starts nothing new while its tree is scanned
    except (ProcessLookupError, PermissionError):
        pass
    kill_descendants(pid)
    kill_group(pid)
    _kill(pid)


def kill_group(pgid: int) -> None:
    """SIGKILL what is left of a process group (its leader may be gone already)."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
