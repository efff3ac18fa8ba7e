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


# Tests that take 10-45 s of wall time on the 2-core machine without compiling anything (pip installs,
# whole-repository sweeps, a 2 MB file, starting templates); measured with a per-test timer on
# 2026-12-06. Only an ordering hint (below): a name that no longer matches changes nothing else.
LONG_RUNNING = {
    "tests/test_wheel_install.py::test_wheel_install_has_rules_and_runs",
    "tests/test_precommit.py::test_pre_commit_try_repo_end_to_end",
    "tests/test_render.py::test_the_text_is_libcsts_for_every_expression_of_the_repository",
    "tests/test_positions.py::test_a_quarter_of_the_repo_files_agree",
    "tests/test_cli.py::test_large_generated_file",
    "tests/test_incremental.py::test_memo_gives_a_fresh_lint_findings_over_edits",
    "tests/test_confirm_template.py::test_a_shared_template_serves_only_runs_of_its_environment",  # two templates
}


def pytest_collection_modifyitems(config, items):
    """Long tests first, dealt out evenly: `--dist worksteal` (scripts/test.sh) hands each worker one
    contiguous slice of this list, so every slice starts with its share of the tests marked slow
    (each compiles modules under torch.compile) and of LONG_RUNNING, and the quick tests fill the
    gaps and are stolen at the end. Sorting them all to the front put every one of them in the first
    worker's slice. The quick tests keep their order, so a module's tests stay together (its
    module-scoped fixtures, e.g. test_lsp's language servers, start once per slice it spans)."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    first = [i for i in items if i.get_closest_marker("slow") is not None or i.nodeid in LONG_RUNNING]
    taken = set(map(id, first))
    rest = [i for i in items if id(i) not in taken]
    slices: list[list] = [first[k::workers] for k in range(workers)]
    # xdist's slices: len // workers items each, the remainder to the last ones
    sizes = [len(items) // workers + (k >= workers - len(items) % workers) for k in range(workers)]
    at = 0
    for k in range(workers):
        fill = max(0, sizes[k] - len(slices[k]))
        slices[k] += rest[at : at + fill]
        at += fill
    slices[-1] += rest[at:]
    items[:] = [i for s in slices for i in s]
