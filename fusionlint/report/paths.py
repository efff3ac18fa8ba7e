"""Paths as a person at a terminal needs them: relative to the current directory.

Findings carry paths relative to the project root (the directory of the pyproject.toml in use),
which is what JSON and SARIF consumers want. A terminal opens paths relative to where the
command ran, so the text output converts them the way Ruff does: relative to the current
directory when the file lies under it, else absolute.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional


def _under(path: str, directory: str) -> Optional[str]:
    if path == directory:
        return "."
    prefix = directory if directory.endswith(os.sep) else directory + os.sep
    return path[len(prefix) :] if path.startswith(prefix) else None


class CwdPaths:
    """Converts root-relative (or absolute) finding paths to cwd-relative ones, caching each."""

    def __init__(self, root: Path, cwd: Optional[Path] = None) -> None:
        self.root = os.path.abspath(root)
        self.cwd = os.path.abspath(cwd if cwd is not None else os.getcwd())
        self._shown: dict[str, str] = {}

    def absolute(self, path: str) -> str:
        # normpath, not realpath: a file reached through a symlink keeps the link's name.
        return os.path.normpath(os.path.join(self.root, path))

    def __call__(self, path: str) -> str:
        shown = self._shown.get(path)
        if shown is None:
            absolute = self.absolute(path)
            rel = _under(absolute, self.cwd)
            if rel is None:
                # The cwd from os.getcwd() is a real path; the root may have been reached
                # through a symlink (/tmp -> /private/tmp): compare the real directories too.
                real_dir = os.path.realpath(os.path.dirname(absolute))
                rel_dir = _under(real_dir, os.path.realpath(self.cwd))
                if rel_dir is not None:
                    rel = os.path.join(rel_dir, os.path.basename(absolute)) if rel_dir != "." else os.path.basename(absolute)
            shown = Path(rel if rel is not None else absolute).as_posix()
            self._shown[path] = shown
        return shown
