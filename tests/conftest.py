from __future__ import annotations

import getpass
import os
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

# pytest-xdist already runs two tests per core (scripts/test.sh): a confirm run that started
# a worker per core on top would pay a second import of torch and dynamo (about 5 CPU-s each) for
# no speed. Tests that pass --jobs / jobs= still get that many; tests/test_confirm.py checks the knob.
os.environ.setdefault("FUSIONLINT_CONFIRM_JOBS", "1")

# torch puts TORCHINDUCTOR_CACHE_DIR into os.environ the first time it works out its cache directory
# (its default: <tmp>/torchinductor_<user>), which an in-process compile in some test does halfway
# through the session. Set to that default from the start, the environment the confirm runs see stays
# the one the shared template below was started in, so they keep forking their workers from it.
os.environ.setdefault(
    "TORCHINDUCTOR_CACHE_DIR", os.path.join(tempfile.gettempdir(), f"torchinductor_{getpass.getuser()}")
)


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


@pytest.hookimpl(hookwrapper=True)
def pytest_collection(session):
    # pytest keeps each test module's assertion-rewritten code in tests/__pycache__/ only where Python
    # may write bytecode, and PYTHONDONTWRITEBYTECODE is set on our CI machines: each xdist worker then
    # rewrote all ~95 test modules again, 3.2 of its 9.1 CPU-s of collection (the 2-core machine).
    # Allowed while the test modules are collected, nothing else: the tests' own imports (projects
    # under tmp_path) still write nothing.
    saved = sys.dont_write_bytecode
    sys.dont_write_bytecode = False
    try:
        yield
    finally:
        sys.dont_write_bytecode = saved


def pytest_collection_modifyitems(config, items):
    # Tests marked slow (each compiles modules under torch.compile for tens of seconds) start first:
    # with `--dist worksteal` (scripts/test.sh) they spread over the workers while the
    # quick tests fill the gaps, instead of one slow test starting last and running alone.
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
