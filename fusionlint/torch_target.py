"""The torch version static findings are judged against (the ``target-torch`` setting).

A few measured costs differ between torch versions (FL201: ``x * (1.0 / self.t)`` recompiles on every
new value with torch 2.11, once with 2.13). The static pass never imports torch, and its answer must
not change by surprise with whatever torch is installed where it runs (a pre-commit environment has
none), so the version is an explicit setting that rules read from their context. Default: the
installed torch's version, read from its package metadata without importing it; without torch, the
newest version the rules were measured on.
"""

from __future__ import annotations

import re
from typing import Optional

Version = tuple[int, int]

# The newest torch that a shipped rule names in its ``measured_on`` ("torch 2.13.0 CPU"): the default
# target where torch is not installed (a pre-commit environment). Written here rather than found by
# importing every rule, so that a warm cached run there imports neither the rules nor libcst;
# tests/test_target_torch.py checks it against the rules.
NEWEST_MEASURED: Version = (2, 13)

# "2.13", "2.13.0", "2.13.0+cpu", "2.14.0a0+git1234", "2.13.0rc1": major and minor are what counts.
_VERSION_RE = re.compile(r"^(\d{1,3})\.(\d{1,3})(?:\.\d{1,4})?(?:(?:a|b|rc|\.dev|\.post)\d*)?(?:\+[\w.]+)?$")


def parse_version(text: str) -> Optional[Version]:
    """``(2, 13)`` for "2.13" / "2.13.0" / "2.13.0+cpu"; None for anything else."""
    match = _VERSION_RE.match(text.strip())
    return (int(match.group(1)), int(match.group(2))) if match else None


def format_version(version: Version) -> str:
    return f"{version[0]}.{version[1]}"


def installed_torch_version() -> Optional[Version]:
    """The installed torch's version from its distribution metadata (torch itself is not imported)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return parse_version(version("torch"))
    except PackageNotFoundError:
        return None
    except Exception:  # broken metadata: as if torch were not installed
        return None


def default_target() -> Version:
    """The installed torch's version, else the newest one the rules were measured on."""
    installed = installed_torch_version()
    return installed if installed is not None else NEWEST_MEASURED


def resolve(setting: Optional[str]) -> Version:
    """The version for a run: the validated ``target-torch`` setting, or the default."""
    if setting is not None:
        parsed = parse_version(setting)
        if parsed is not None:
            return parsed
    return default_target()
