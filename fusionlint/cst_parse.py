"""libcst's parse of a file the engine lints, without validating each node twice.

libcst validates every node as it is constructed (``CSTNode.__post_init__`` calls ``_validate``:
whitespace, parentheses, identifiers). The nodes its parser builds come from source text that has
just parsed, so each check passes by construction; they cost about a tenth of the parse (30
transformers modeling files, 35,571 lines: 2.07-2.11 s -> 1.84-1.90 CPU s). libcst's own comment on
``__post_init__`` names this cost. Nodes built any other way (fix edits, ``with_changes``) are still
validated: the check is switched off only while ``parse`` runs (the class attribute is process-wide,
so parses hold a lock, and the static pass builds no nodes in other threads), and a fix's result is
parsed again with validation (``fusionlint.fixes``).
"""

from __future__ import annotations

import threading

import libcst as cst
from libcst._nodes.base import CSTNode

_LOCK = threading.Lock()
_VALIDATING = CSTNode.__post_init__


def _trusted(self: CSTNode) -> None:
    return None


def parse(text: str) -> cst.Module:
    """``cst.parse_module(text)``, its nodes unvalidated; raises what it raises."""
    with _LOCK:
        CSTNode.__post_init__ = _trusted  # type: ignore[method-assign]
        try:
            return cst.parse_module(text)
        finally:
            CSTNode.__post_init__ = _VALIDATING  # type: ignore[method-assign]
