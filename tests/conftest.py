from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


@pytest.fixture
def repo_root() -> Path:
    return REPO


def pytest_collection_modifyitems(config, items):
    # Tests marked slow (each compiles modules under torch.compile for tens of seconds) start first:
    # with `-n auto --dist worksteal` (scripts/test.sh) they spread over the workers while the
    # quick tests fill the gaps, instead of one slow test starting last and running alone.
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
