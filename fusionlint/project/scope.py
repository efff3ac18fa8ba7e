"""Which files make up the project the model indexes (the run and the findings cache share it)."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from fusionlint.config import Settings


def index_scope(paths: Sequence[str], settings: Settings) -> list[Path]:
    """What the project model indexes besides the linted files.

    With a ``pyproject.toml`` the project is its directory. Without one the root is only the current
    directory, which may be a home directory or /tmp: walking all of it would index unrelated code
    (and take minutes), so the scope is then what was named — directories as given, and for a named
    file the Python files beside it (its helpers), not its directory's subtree."""
    if settings.config_path is not None:
        return [settings.root]
    scope: list[Path] = []
    for given in paths:
        path = Path(given)
        if path.is_dir():
            scope.append(path)
        elif path.parent.is_dir():
            try:
                scope.extend(sorted(p for p in path.parent.iterdir() if p.suffix == ".py" and p.is_file()))
            except OSError:
                continue
    return scope
