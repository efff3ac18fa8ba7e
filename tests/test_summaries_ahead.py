"""Summaries made ahead in forked workers (``fusionlint.project.ahead``): a run that takes them finds
exactly what a run that summarises every file itself finds, and falls back to summarising a file
itself when a worker's summary is missing or was made from another text."""

from __future__ import annotations

from pathlib import Path

import pytest

from fusionlint.cache.session import SummaryKeeper
from fusionlint.cache.store import Store, digest
from fusionlint.config import load_settings
from fusionlint.project import ahead as ahead_mod
from fusionlint.project.ahead import SummariesAhead
from fusionlint.project import model as model_mod
from fusionlint.project.summary import summarize
from fusionlint.runner import RunOptions, run

BASE = (
    "import torch\nfrom torch import nn\n\n\nclass Base(nn.Module):\n    def __init__(self):\n"
    "        super().__init__()\n        self.scale = 2.0\n\n    def norm(self, x):\n        return x / x.sum().item()\n"
)
# a subclass in another file: its finding needs the base class's summary (the call into `norm`)
SUB = (
    "import torch\nfrom pkg.base import Base\n\n\nclass M{n}(Base):\n    def forward(self, x):\n"
    "        y = x.permute(0, 2, 1).view(-1)\n        if x.max() > 0:\n            y = y + 1\n        return self.norm(y)\n"
)


def _project(root: Path, files: int = 30) -> Path:
    (root / "pyproject.toml").write_text("[tool.fusionlint]\n")
    pkg = root / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "base.py").write_text(BASE)
    for n in range(files):
        (pkg / f"m{n:02d}.py").write_text(SUB.format(n=n) if n != 7 else "def f(:\n")
    return root


def _findings(root: Path, jobs: int, cache: bool = False):
    outcome = run([str(root / "pkg")], load_settings(root), RunOptions(jobs=jobs, cache=cache))
    r = outcome.result
    return [(f.path, f.line, f.column, f.code, f.message, f.context) for f in r.findings], [(e.path, e.message) for e in r.errors]


@pytest.fixture
def few_files_are_enough(monkeypatch):
    monkeypatch.setattr(ahead_mod, "MIN_FILES", 2)


@pytest.fixture
def taken(monkeypatch):
    """How many summaries the run took from the workers."""
    count = [0]
    original = SummariesAhead.get

    def counting(self, shown):
        made = original(self, shown)
        count[0] += made is not None
        return made

    monkeypatch.setattr(SummariesAhead, "get", counting)
    return count


def test_summaries_made_ahead_give_the_same_findings(tmp_path, few_files_are_enough, taken):
    root = _project(tmp_path)
    one = _findings(root, 1)
    assert taken[0] == 0  # one process: nothing made ahead
    two = _findings(root, 2)
    assert taken[0] == 31  # every file but the one that does not parse
    assert one == two
    findings, errors = one
    assert [e[0] for e in errors] == ["pkg/m07.py"]
    codes = {code for _, _, _, code, _, _ in findings}
    assert {"FL101", "FL102", "FL301"} <= codes
    # the finding inside the base class's method, reached from the subclasses' forwards
    assert any(path == "pkg/base.py" and code == "FL101" for path, _, _, code, _, _ in findings)


def test_a_summary_of_another_text_is_not_taken(tmp_path, few_files_are_enough, monkeypatch):
    root = _project(tmp_path)
    expected = _findings(root, 1)
    original = SummariesAhead.get

    def stale(self, shown):  # as if the file had changed after the worker read it
        made = original(self, shown)
        if made is not None and shown == "pkg/base.py":
            made[0].text_hash ^= 1
            made[0].functions.clear()  # what a stale summary would get wrong
        return made

    monkeypatch.setattr(SummariesAhead, "get", stale)
    assert _findings(root, 2) == expected


def test_a_failing_worker_only_means_the_run_summarises_itself(tmp_path, few_files_are_enough, monkeypatch):
    root = _project(tmp_path)
    expected = _findings(root, 1)

    def fail(jobs, keeper=None):
        raise RuntimeError("worker failed")

    monkeypatch.setattr(ahead_mod, "_summarise_slice", fail)
    assert _findings(root, 2) == expected


def test_slices_are_contiguous_and_balanced_by_size(tmp_path):
    files = []
    for n, size in enumerate([100, 100, 100, 100, 400, 100, 100]):
        path = tmp_path / f"f{n}.py"
        path.write_text("x" * size)
        files.append(path)
    parts = ahead_mod._balanced(files, 2)
    assert [p for part in parts for p in part] == files
    assert [sum(p.stat().st_size for p in part) for part in parts] == [400, 600]


def _cached_state(root: Path):
    states = list((root / ".fusionlint_cache").rglob("state.pickle"))
    assert len(states) == 1
    return Store(root).load_file(states[0])


def test_with_the_cache_workers_make_and_store_the_summaries(tmp_path, few_files_are_enough, taken, monkeypatch):
    (tmp_path / "one").mkdir(), (tmp_path / "two").mkdir()
    one, two = _project(tmp_path / "one"), _project(tmp_path / "two")
    expected = _findings(one, 1)
    assert _findings(one, 1, cache=True) == expected  # one process: nothing made ahead
    assert taken[0] == 0
    assert _findings(two, 2, cache=True) == expected
    assert taken[0] == 31
    # the model's files in the order a run in one process adds them: the next run compares them in order
    assert _cached_state(two)["files"] == _cached_state(one)["files"]
    # what the workers stored serves the next run: only the edited file is summarised again
    made = []
    original = model_mod.summarize
    monkeypatch.setattr(model_mod, "summarize", lambda text, shown, *a, **k: (made.append(shown), original(text, shown, *a, **k))[1])
    base = two / "pkg" / "base.py"
    base.write_text(BASE.replace("x.sum().item()", "x.sum()"))
    after = _findings(two, 1, cache=True)
    assert made == ["pkg/base.py"]
    assert after == _findings(two, 1)
    assert not any(path == "pkg/base.py" and code == "FL101" for path, _, _, code, _, _ in after[0])


def test_a_worker_stores_no_summary_of_bytes_other_than_scanned(tmp_path):
    store = Store(tmp_path)
    summary = summarize(BASE, "pkg/base.py", "pkg.base", False)
    keeper = SummaryKeeper(store, {"pkg/base.py": (digest(b"what the scan read"), "k" * 32)})
    assert keeper("pkg/base.py", BASE.encode(), summary) is None
    assert store.load("summaries", "k" * 32) is None
    keeper = SummaryKeeper(store, {"pkg/base.py": (digest(BASE.encode()), "k" * 32)})
    stored_as = keeper("pkg/base.py", BASE.encode(), summary)
    assert stored_as is not None and store.load("summaries", "k" * 32)[1] == stored_as


def test_summaries_taken_from_workers_keep_the_files_in_order(tmp_path, few_files_are_enough, taken):
    (tmp_path / "one").mkdir(), (tmp_path / "two").mkdir()
    one, two = _project(tmp_path / "one"), _project(tmp_path / "two")
    for root in (one, two):
        _findings(root, 1, cache=True)
        for name in ("m03.py", "m05.py"):  # the others' summaries come from the cache, these two from workers
            path = root / "pkg" / name
            path.write_text(path.read_text() + "# edited\n")
    expected = _findings(one, 1, cache=True)
    assert _findings(two, 2, cache=True) == expected
    assert taken[0] == 2
    assert _cached_state(two)["files"] == _cached_state(one)["files"]


@pytest.mark.parametrize("cache", [False, True])
def test_the_project_files_not_linted_are_summarised_ahead_too(tmp_path, few_files_are_enough, taken, cache):
    """pre-commit names a few files; the model still summarises the whole project (its other files)."""
    (tmp_path / "one").mkdir(), (tmp_path / "two").mkdir()
    one, two = _project(tmp_path / "one"), _project(tmp_path / "two")

    def lint(root: Path, jobs: int):
        outcome = run([str(root / "pkg" / "m01.py")], load_settings(root), RunOptions(jobs=jobs, cache=cache))
        return [(f.path, f.line, f.code, f.message, f.context) for f in outcome.result.findings]

    expected = lint(one, 1)
    assert taken[0] == 0
    assert lint(two, 2) == expected
    assert taken[0] == 31  # the named file and the 30 others that parse
    assert {"FL102", "FL301"} <= {code for _, _, code, _, _ in expected}
    if cache:
        assert _cached_state(two)["files"] == _cached_state(one)["files"]
