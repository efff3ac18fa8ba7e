"""The cache directory: where entries live, how one is written and read back.

``.fusionlint_cache/`` in the project root, tagged as a cache (``CACHEDIR.TAG``, so backup tools
skip it) and ignored by git (a ``.gitignore`` of ``*``). Every file is written to a temporary file
in the same directory and moved into place with ``os.replace``, so a reader (another run at the
same time) sees the old file or the new one, never half of one. Each file starts with a header
(format name + version) and a digest of its payload: a truncated or corrupt file, or one written
by another format version, reads as absent and is written again by the run that misses it.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any, Optional

DIRNAME = ".fusionlint_cache"
# Bumped whenever the layout or any pickled class changes shape: older files then read as absent.
FORMAT = b"fusionlint-cache 3\n"  # 3: an entry's questions are kept as pickled bytes (see session.end)
_DIGEST_SIZE = 16
_TAG = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by fusionlint.\n"
    "# For information about cache directory tags, see https://bford.info/cachedir/\n"
)


def digest(data: bytes) -> str:
    """A short stable digest (hex) for cache keys: blake2b, 128 bits."""
    return hashlib.blake2b(data, digest_size=_DIGEST_SIZE).hexdigest()


# A generation of the static cache (one fusionlint build on one Python) nobody has used for this
# long is removed by the next run that writes; every run marks its own generation as used.
IDLE_GENERATION_S = 14 * 24 * 3600
# The layout before generations (FORMAT 2 wrote these straight under static/): never read again.
_UNVERSIONED = frozenset({"bodies", "facts", "findings", "scans", "summaries", "manifest.pickle", "state.pickle",
                          "verified.pickle"})


class Store:
    """One cache directory. Reads never raise for a bad file; writes that fail are skipped
    (a read-only checkout still lints, only without a cache).

    ``generation``: the static cache's entries live under ``static/<generation>/``. An entry's key
    already holds fusionlint's version and code, so an upgrade left the old entries in place for
    good (a working checkout's cache reached 908 MB); with one folder per build, a folder unused for
    ``IDLE_GENERATION_S`` goes as a whole. Two builds used side by side (a pre-commit hook's and an
    editable install's) each keep their own."""

    def __init__(self, root: Path, generation: Optional[str] = None) -> None:
        self.top = root / DIRNAME
        self.static = self.top / "static"  # beside confirm/ (fusionlint/confirm/cache.py)
        self.base = self.static / generation if generation else self.static
        self.generation = generation
        self._base_text = str(self.base)
        self._ready = False
        self._pruned = False

    def _prepare(self) -> bool:
        if self._ready:
            return True
        try:
            self.base.mkdir(parents=True, exist_ok=True)
            tag = self.top / "CACHEDIR.TAG"
            if not tag.exists():
                _write_atomic(tag, _TAG.encode())
            ignore = self.top / ".gitignore"
            if not ignore.exists():
                _write_atomic(ignore, b"# created by fusionlint: the whole directory is a cache\n*\n")
        except OSError:
            return False
        self._ready = True
        return True

    def path(self, kind: str, key: str) -> Path:
        # two-character fan-out: no directory holds more than a few hundred files on a large tree
        return Path(self._path(kind, key))

    def _path(self, kind: str, key: str) -> str:
        return os.path.join(self._base_text, kind, key[:2], key[2:] + ".pickle")

    def load(self, kind: str, key: str) -> Optional[Any]:
        return self.load_file(self._path(kind, key))

    def load_file(self, path: "Path | str") -> Optional[Any]:
        try:
            data = _read_whole(path)
        except OSError:
            return None
        head = len(FORMAT) + _DIGEST_SIZE * 2
        if len(data) < head or not data.startswith(FORMAT):
            return None
        payload = memoryview(data)[head:]  # (not a copy: the facts' file is 4 MB on the zoo)
        if bytes(data[len(FORMAT) : head]).decode("ascii", "replace") != digest(payload):
            return None  # truncated or damaged
        try:
            return pickle.loads(payload)
        except Exception:  # a class renamed since (the format number should have moved): absent
            return None

    def save(self, kind: str, key: str, value: Any) -> bool:
        return self.save_file(self.path(kind, key), value)

    def save_file(self, path: Path, value: Any) -> bool:
        """Write ``value`` there (atomically); False when it could not be written."""
        if not self._prepare():
            return False
        if not self._pruned:
            self._pruned = True
            self.prune()
        payload = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            _write_atomic(path, FORMAT, digest(payload).encode("ascii"), payload)
        except OSError:
            return False
        return True

    def mark_used(self) -> None:
        """Note that this run used its generation (the folder's time is what ``prune`` reads)."""
        if self.generation is None:
            return
        try:
            os.utime(self.base)
        except OSError:
            pass

    def prune(self, now: Optional[float] = None) -> list[str]:
        """Remove the other generations unused for ``IDLE_GENERATION_S``, and the layout from before
        generations; returns what went (names under static/). Run once by the first write of a run."""
        if self.generation is None:
            return []
        now = time.time() if now is None else now
        gone = []
        try:
            entries = list(os.scandir(self.static))
        except OSError:
            return []
        for entry in entries:
            if entry.name == self.generation or entry.name.startswith(".tmp-"):
                continue
            try:
                if entry.is_symlink():
                    continue
                old = entry.name in _UNVERSIONED or now - entry.stat().st_mtime > IDLE_GENERATION_S
                if not old:
                    continue
                if entry.is_dir():
                    shutil.rmtree(entry.path, ignore_errors=True)
                else:
                    os.unlink(entry.path)
                gone.append(entry.name)
            except OSError:
                continue
        return gone


_CHUNK = 1 << 16


def _read_whole(path: "Path | str") -> "bytes | bytearray":
    """The file's bytes through ``os.read`` until the end: a run after an edit reads about 9,700 cache
    files, and ``open(path, "rb").read()`` (a buffered reader and its ``fstat`` calls) took 0.15-0.20 CPU s
    for them on timm + transformers against 0.07-0.08 s. A file larger than one read goes into one
    buffer of its size, read in place: joining the chunks held the file twice for a while."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
    try:
        first = os.read(fd, _CHUNK)
        if len(first) < _CHUNK:
            rest = os.read(fd, _CHUNK) if first else b""
            if not rest:
                return first
            first += rest
        buf = bytearray(max(os.fstat(fd).st_size, len(first)))
        buf[: len(first)] = first
        done = len(first)
        del first
        with open(fd, "rb", buffering=0, closefd=False) as raw:
            while True:
                if done == len(buf):  # (grown since the fstat: read on in chunks)
                    more = raw.read(_CHUNK)
                    if not more:
                        return buf
                    buf += more
                    done += len(more)
                    continue
                with memoryview(buf) as view:
                    n = raw.readinto(view[done:])
                if not n:
                    del buf[done:]
                    return buf
                done += n
    finally:
        os.close(fd)


def _write_atomic(path: Path, *parts: bytes) -> None:
    """``parts`` one after the other (a header and a large payload are not joined in memory first)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as fh:
            for part in parts:
                fh.write(part)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


# What fusionlint itself puts in the directory: the static cache, the confirm pass's results
# (fusionlint/confirm/cache.py, which writes no tag of its own) and the two marker files.
_OURS = frozenset({"static", "confirm", "CACHEDIR.TAG", ".gitignore"})


class NotOurs(Exception):
    """A directory named like the cache that fusionlint did not make: never deleted."""


def is_ours(top: Path) -> bool:
    try:
        tag = (top / "CACHEDIR.TAG").read_text(encoding="utf-8", errors="replace")
        if tag.startswith(_TAG.splitlines()[0]) and "fusionlint" in tag:
            return True
    except OSError:
        pass
    try:
        return set(os.listdir(top)) <= _OURS
    except OSError:
        return False


def clean(root: Path) -> Optional[list[tuple[str, int, int]]]:
    """Remove the cache directory under ``root``; returns (part, files, bytes) for each part
    removed ("static", "confirm", ...), or None when there was no cache. Raises ``NotOurs`` for a
    directory of that name that fusionlint did not make (a user's own folder is never deleted)."""
    top = root / DIRNAME
    if not os.path.lexists(top):
        return None
    if top.is_symlink() or not top.is_dir() or not is_ours(top):
        raise NotOurs(str(top))
    parts: dict[str, list[int]] = {}
    for dirpath, _, names in os.walk(top):
        rel = os.path.relpath(dirpath, top)
        part = "" if rel == "." else rel.split(os.sep, 1)[0]
        for name in names:
            counts = parts.setdefault(part or name, [0, 0])
            counts[0] += 1
            try:
                counts[1] += os.lstat(os.path.join(dirpath, name)).st_size
            except OSError:
                pass
    shutil.rmtree(top, ignore_errors=True)
    return [(part, files, size) for part, (files, size) in sorted(parts.items())]
