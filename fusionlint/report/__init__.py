"""Output formats. Each module renders a RunResult and decides nothing.

Every reporter exposes ``render(result, *, rules, root, tool_version, options=None) -> str``.
"""

from __future__ import annotations

import importlib

FORMATS = ("text", "json", "sarif", "github")


def renderer(name: str):
    """The ``render`` function of the named format (imported on demand: SARIF pulls in sarif-om)."""
    if name not in FORMATS:
        raise ValueError(f"unknown format {name!r}")
    return importlib.import_module(f"fusionlint.report.{name}").render
