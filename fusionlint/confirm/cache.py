"""Worker results cached on disk under ``<root>/.fusionlint_cache/confirm/``.

The key covers everything the measurement depends on: the text of every user file involved (the
module's file, files with its findings, the registered example's file), the job itself (target,
example, device, exercise, variants, timing), the installed torch version and fusionlint's version.
Failed jobs (timeouts, crashes) are not cached: they may be transient.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Optional

CACHE_DIR = ".fusionlint_cache"
FORMAT = 1


def torch_version() -> Optional[str]:
    """The installed torch's version, read from its metadata (torch itself is not imported)."""
    try:
        from importlib.metadata import PackageNotFoundError, version

        return version("torch")
    except PackageNotFoundError:
        return None
    except Exception:  # pragma: no cover - broken metadata
        return None


def file_digest(path: str) -> str:
    try:
        with open(path, "rb") as fh:
            return hashlib.sha256(fh.read()).hexdigest()
    except OSError:
        return "missing"


def _code_digest() -> str:
    """The confirm package's own source: a change in how we measure invalidates old results."""
    here = Path(__file__).resolve().parent
    h = hashlib.sha256()
    for p in sorted(here.glob("*.py")):
        h.update(p.name.encode())
        h.update(file_digest(str(p)).encode())
    return h.hexdigest()


def job_key(job: dict, files: list[str], torch: Optional[str], tool_version: str) -> str:
    payload = {
        "format": FORMAT,
        "tool": tool_version,
        "code": _code_digest(),
        "torch": torch,
        "files": {os.path.realpath(p): file_digest(p) for p in sorted(set(files))},
        "job": {k: v for k, v in sorted(job.items()) if k not in ("sys_path",)},
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()[:32]


class ResultCache:
    def __init__(self, root: Path, enabled: bool = True) -> None:
        self.dir = Path(root) / CACHE_DIR / "confirm"
        self.enabled = enabled

    def get(self, key: str) -> Optional[dict]:
        if not self.enabled:
            return None
        try:
            data = json.loads((self.dir / f"{key}.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    def put(self, key: str, result: dict) -> None:
        if not self.enabled or not result.get("ok"):
            return
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            gitignore = self.dir.parent / ".gitignore"
            if not gitignore.exists():
                gitignore.write_text("*\n", encoding="utf-8")
            fd, tmp = tempfile.mkstemp(dir=self.dir, prefix=".tmp-", suffix=".json")
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(result, fh)
            os.replace(tmp, self.dir / f"{key}.json")
        except OSError:
            pass  # a read-only tree just means no cache
