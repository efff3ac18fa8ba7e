from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

# pytest-xdist already runs two tests per core (scripts/test.sh): a confirm run that started
# a worker per core on top would pay a second import of torch and dynamo (about 5 CPU-s each) for
# no speed. Tests that pass --jobs / jobs= still get that many; tests/test_confirm.py checks the knob.
os.environ.setdefault("FUSIONLINT_CONFIRM_JOBS", "1")


@pytest.fixture
def repo_root() -> Path:
    return REPO


def pytest_collection_modifyitems(config, items):
    # Tests marked slow (each compiles modules under torch.compile for tens of seconds) start first:
    # with `--dist worksteal` (scripts/test.sh) they spread over the workers while the
    # quick tests fill the gaps, instead of one slow test starting last and running alone.
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
