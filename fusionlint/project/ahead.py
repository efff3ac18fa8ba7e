"""Summaries made ahead, in forked workers, while the run reads and indexes the files.

Summarising (CPython's parse and the summary walk) is most of what a run does before it can lint
anything, and it ran in one process: on timm + transformers the parent spent about 25 of the cold
run's 62 wall seconds alone, with the second core idle. Each file's summary depends on its text and
module name only, so workers forked at the start (when the process holds nothing large) make them
for contiguous slices of the files (a few per worker, so that the run takes in the first ones while
the workers make the rest), and the run takes each one where it would have summarised the file
itself, after checking that it was made from the very text the run read (``text_hash``: the forked
workers hash strings as the parent does). A summary crosses the process boundary pickled, which keeps
one object per distinct value only within a slice: ``summary.adopt`` makes the values it holds the
ones this process's summaries share (interned names, one object per equal tuple), so the model
takes the memory it took when this process made every summary.

With the findings cache, a ``keeper`` (``fusionlint.cache.session.SummaryKeeper``) also stores each
summary the worker makes into the cache, as the run would have after summarising it: those pickles
were the rest of a cold cached run's serial part.

Anything that goes wrong in a worker (it dies, a file cannot be read there) only means the run
summarises those files itself, as it did before.
"""

from __future__ import annotations

import functools
import multiprocessing
import os
import pickle
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path
from typing import Any, Callable, Optional, Protocol

from fusionlint.files import DEFAULT_MAX_BYTES, SourceError, decode_source
from fusionlint.plan_inputs import PlanInputStore
from fusionlint.project.model import module_name
from fusionlint.project.summary import FileSummary, adopt, summarize

# Fewer files than this: the workers' start costs more than it saves.
MIN_FILES = 64
SLICES_PER_WORKER = 4


class Keeper(Protocol):
    """Runs in the worker after each summary: what it returns comes back with the summary."""

    def __call__(self, shown: str, data: bytes, summary: FileSummary) -> Any: ...


class SummariesAhead:
    """``get(shown)``: (the summary a worker made of that file, what the keeper returned for it), waiting
    for its slice; None when there is none."""

    def __init__(self, files: list[Path], shown_as: Callable[[Path], str], workers: int,
                 keeper: Optional[Keeper] = None, plan_inputs: Optional[PlanInputStore] = None) -> None:
        self._pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("fork"))
        self._slice_of: dict[str, int] = {}
        self._slices: list[Optional[Future]] = []
        self._done: dict[int, dict[str, bytes]] = {}  # slice -> display path -> pickled (summary, note)
        for number, part in enumerate(_balanced(files, workers * SLICES_PER_WORKER)):
            jobs = [(path, shown_as(path)) for path in part]
            for _, shown in jobs:
                self._slice_of[shown] = number
            self._slices.append(self._pool.submit(_summarise_slice, jobs, keeper, plan_inputs))

    @classmethod
    def start(cls, files: list[Path], shown_as: Callable[[Path], str], workers: int,
              keeper: Optional[Keeper] = None, plan_inputs: Optional[PlanInputStore] = None) -> Optional["SummariesAhead"]:
        if workers <= 1 or len(files) < MIN_FILES or "fork" not in multiprocessing.get_all_start_methods():
            return None
        return cls(files, shown_as, workers, keeper, plan_inputs)

    def __contains__(self, shown: str) -> bool:
        """Is a worker making this file's summary (not yet taken with ``get``)?"""
        return shown in self._slice_of

    def get(self, shown: str) -> Optional[tuple[FileSummary, Any]]:
        number = self._slice_of.pop(shown, None)
        if number is None:
            return None
        made = self._done.get(number)
        if made is None:
            future, self._slices[number] = self._slices[number], None  # (a done future keeps its result)
            try:
                made = dict(future.result())
            except Exception:  # a worker died or failed: the run summarises those files itself
                made = {}
            del future
            self._done[number] = made
        found = made.pop(shown, None)
        if found is None:
            return None
        summary, note = pickle.loads(found)
        return adopt(summary), note

    def close(self) -> None:
        for future in self._slices:
            if future is not None:
                future.cancel()
        self._pool.shutdown(wait=True, cancel_futures=True)
        self._done.clear()


def _balanced(files: list[Path], parts: int) -> list[list[Path]]:
    """``files`` cut into ``parts`` contiguous slices of about equal size in bytes."""
    sizes = []
    for path in files:
        try:
            sizes.append(os.stat(path).st_size)
        except OSError:
            sizes.append(0)
    total = sum(sizes) or 1
    out: list[list[Path]] = [[] for _ in range(parts)]
    seen = 0
    for path, size in zip(files, sizes):
        out[min(parts - 1, (2 * seen + size) * parts // (2 * total))].append(path)  # by its middle byte
        seen += size
    return [part for part in out if part]


def _summarise_slice(jobs: list[tuple[Path, str]], keeper: Optional[Keeper] = None,
                     plan_inputs: Optional[PlanInputStore] = None) -> list[tuple[str, bytes]]:
    out = []
    for path, shown in jobs:
        try:
            data = _read(path)
            text, _ = decode_source(data)
        except (SourceError, OSError):
            continue  # the run reads it, and reports why it cannot
        module, is_package = module_name(path)
        with_tree = functools.partial(plan_inputs.put, shown, text) if plan_inputs is not None else None
        made = summarize(text, shown, module, is_package, with_tree=with_tree)
        if made is not None:
            # one pickle per file: the run unpickles and adopts one at a time, so the copies adopt drops
            # leave holes the next file fills (a slice unpickled at once left the model's memory
            # fragmented: 13 % more RSS for the same summaries on 1,500 transformers files)
            note = keeper(shown, data, made) if keeper is not None else None
            out.append((shown, pickle.dumps((made, note), protocol=pickle.HIGHEST_PROTOCOL)))
    return out


def _read(path: Path) -> bytes:
    """The file's bytes, as ``read_source_encoded`` reads them (its size limit, its errors)."""
    with open(path, "rb") as fh:
        data = fh.read(DEFAULT_MAX_BYTES + 1)
    if len(data) > DEFAULT_MAX_BYTES:
        raise SourceError("file too large")
    return data
