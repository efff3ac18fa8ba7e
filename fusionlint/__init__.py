"""fusionlint: find and fix the code patterns that stop torch.compile from fusing a model."""

from __future__ import annotations

import os as _os

__version__ = "0.1.0"

# In a source checkout (not installed), `rules/` sits beside this package rather than inside
# it; let `fusionlint.rules` resolve there too. An installed copy maps rules/ into the package.
_checkout_rules = _os.path.join(_os.path.dirname(_os.path.dirname(__file__)), "rules")
if not _os.path.isdir(_os.path.join(_os.path.dirname(__file__), "rules")) and _os.path.isfile(
    _os.path.join(_checkout_rules, "__init__.py")
):
    __path__.append(_os.path.dirname(_os.path.dirname(__file__)))  # type: ignore[name-defined]
