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


@pytest.fixture(scope="session", autouse=True)
def shared_confirm_template():
    """One warm confirm template per test process, shared by the confirm runs of its tests.

    Each confirm run would otherwise start a template of its own and import torch and dynamo in it
    (about 4.5 CPU-s on the 2-core machine, over 100 s for the suite). A run whose worker environment
    differs from this one (a test that sets a variable of its own) still starts its own template, so
    both ways stay exercised; tests/test_confirm_template.py covers the template itself.
    """
    import importlib.util
    import shutil
    import tempfile

    from fusionlint.confirm import template

    if not template.supported() or importlib.util.find_spec("torch") is None:
        yield None
        return
    from fusionlint.confirm.orchestrate import _worker_env

    home = tempfile.mkdtemp(prefix="fusionlint-tests-")
    path = os.path.join(home, "template.sock")
    shared = template.Template.start(_worker_env(None), listen_path=path)
    os.environ[template.TEMPLATE_ENV] = path
    try:
        yield shared
    finally:
        os.environ.pop(template.TEMPLATE_ENV, None)
        shared.close()
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture
def repo_root() -> Path:
    return REPO


def pytest_collection_modifyitems(config, items):
    # Tests marked slow (each compiles modules under torch.compile for tens of seconds) start first:
    # with `--dist worksteal` (scripts/test.sh) they spread over the workers while the
    # quick tests fill the gaps, instead of one slow test starting last and running alone.
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
