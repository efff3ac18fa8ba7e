"""The language server (``fusionlint lsp``). Needs the ``lsp`` extra: ``pip install "fusionlint[lsp]"``.

Only ``main`` lives here, so that ``fusionlint lsp`` can say what to install instead of failing
with an ImportError: the static CLI never needs pygls or lsprotocol.
"""

from __future__ import annotations

import importlib.util
import sys

INSTALL_HINT = 'the language server needs pygls and lsprotocol: pip install "fusionlint[lsp]"'


def missing_dependencies() -> list[str]:
    return [name for name in ("pygls", "lsprotocol") if importlib.util.find_spec(name) is None]


def main() -> int:
    """Serve LSP on stdin/stdout until the client says exit; 2 when the extra is not installed."""
    missing = missing_dependencies()
    if missing:
        print(f"fusionlint: error: {INSTALL_HINT} (missing: {', '.join(missing)})", file=sys.stderr)
        return 2
    from fusionlint.lsp.server import start

    start()
    return 0
