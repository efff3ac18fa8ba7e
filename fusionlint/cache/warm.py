"""The findings cache filled for a language server's first index, in a helper process.

The server indexes a project from the cache (``fusionlint.lsp.workspace``): each file's name-index
scan and summary. Where the cache holds none yet (no CLI run before at this fusionlint version), it
made them all itself, in one process: 71 s before the first diagnostic in transformers (2,912
files). A CLI run makes them in forked workers (``fusionlint.project.ahead``), but the server runs
threads (pygls reads the client on one), and forking a process that runs threads can leave a lock
held in the child. So the server starts this module in a fresh process, which digests the files
and forks the workers; they store each missing summary and scan in the cache, and the server then
loads them as after a CLI run. Whatever goes wrong here only means the server makes them itself.

    python -m fusionlint.cache.warm < pickle of (settings, files, workers)
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Optional

from fusionlint.cache.session import CacheSession, SummaryKeeper
from fusionlint.cache.store import digest
from fusionlint.config import Settings

# Fewer missing summaries than this: a helper's start (an interpreter, the imports) costs more than it saves.
MIN_MISSING = 64
WORKERS: Optional[int] = None  # the helper's workers; None: the cores this process may run on
HELPER_TIMEOUT_S = 900.0  # transformers' 2,912 files took the helper 37 s on two cores


def _workers() -> int:
    if WORKERS is not None:
        return WORKERS
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


class _ScanningKeeper:
    """A worker's keeper that also stores the file's name-index scan (``CacheSession.add_to_index``'s key)."""

    def __init__(self, keeper: SummaryKeeper, config_code: str) -> None:
        self.keeper, self.config_code = keeper, config_code

    def __call__(self, shown: str, data: bytes, summary) -> Optional[str]:
        from fusionlint.analysis.project import _scan
        from fusionlint.files import decode_source

        stored = self.keeper(shown, data, summary)
        if stored is not None:  # (the bytes are those the server digested)
            text, _ = decode_source(data)
            self.keeper.store.save("scans", digest(f"{self.config_code}\0{digest(data)}".encode()), (_scan(text),))
        return stored


def fill(settings: Settings, files: list[Path], workers: int) -> int:
    """Store the summaries and scans the cache lacks for ``files``, made by ``workers`` forked workers;
    how many files were given to them."""
    from fusionlint import torch_target
    from fusionlint.files import DisplayPaths
    from fusionlint.project.ahead import SummariesAhead

    cache = CacheSession(settings, torch_target.resolve(settings.target_torch))
    cache.scan([], [], others=files)
    missing, keeper = cache.to_summarise()
    ahead = SummariesAhead.start(missing, DisplayPaths(settings.root), workers, _ScanningKeeper(keeper, cache.config_code))
    if ahead is None:
        return 0
    try:
        shown_as = DisplayPaths(settings.root)
        for path in missing:
            ahead.get(shown_as(path))  # (waits for its slice; the worker stored it)
    finally:
        ahead.close()
    cache.world = None  # no run here: the manifest of digests only
    cache.finish()
    return len(missing)


def fill_in_helper(cache: CacheSession, settings: Settings, files: list[Path]) -> bool:
    """Run ``fill`` in a new process when enough of ``files`` have no summary in ``cache`` (the server's
    session, scanned) and there is more than one core; True when it ran and succeeded."""
    import multiprocessing

    workers = _workers()
    if workers <= 1 or "fork" not in multiprocessing.get_all_start_methods():
        return False  # (its workers are forked: without fork, ``fill`` would make them serially too)
    missing, _ = cache.to_summarise()
    if len(missing) < MIN_MISSING:
        return False
    import fusionlint

    env = dict(os.environ)
    here = str(Path(fusionlint.__file__).resolve().parent.parent)  # the fusionlint this server runs
    env["PYTHONPATH"] = os.pathsep.join([here, *filter(None, [env.get("PYTHONPATH")])])
    try:
        done = subprocess.run(
            [sys.executable, "-m", "fusionlint.cache.warm"],
            input=pickle.dumps((settings, files, workers), protocol=pickle.HIGHEST_PROTOCOL),
            stdout=subprocess.DEVNULL,  # (the server's stdout is the client's channel)
            stderr=subprocess.DEVNULL,
            env=env,
            check=False,
            # the server waits for it (its first lint is waiting anyway): never for ever, whatever happens
            # there; the files it did not summarise are summarised by the server
            timeout=HELPER_TIMEOUT_S,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def main() -> int:
    settings, files, workers = pickle.loads(sys.stdin.buffer.read())
    fill(settings, files, workers)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
