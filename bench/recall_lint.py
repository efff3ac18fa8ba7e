"""`fusionlint` from this checkout, whatever the bench venv has installed (run with the bench venv's python).

The bench venv is shared between worktrees, and its editable install points at the checkout that created
it; the static pass must run on the sources being measured. `fusionlint.rules` lives in `rules/`
(pyproject's package-dir), so it is loaded from there by hand.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def main() -> int:
    sys.path.insert(0, str(REPO))
    import fusionlint

    if not Path(fusionlint.__file__).resolve().is_relative_to(REPO):
        raise SystemExit(f"fusionlint was imported from {fusionlint.__file__}, not from {REPO}")
    spec = importlib.util.spec_from_file_location(
        "fusionlint.rules", REPO / "rules" / "__init__.py", submodule_search_locations=[str(REPO / "rules")]
    )
    rules = importlib.util.module_from_spec(spec)
    sys.modules["fusionlint.rules"] = rules
    spec.loader.exec_module(rules)
    fusionlint.rules = rules
    from fusionlint.cli import main as cli

    sys.argv[0] = "fusionlint"
    return cli()


if __name__ == "__main__":
    sys.exit(main())
