"""The lint's plan inputs made by the summary's parse (fusionlint.plan_inputs): the same sparse plan as
from a second parse, used by a run instead of that parse, and never for another text."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import pytest

from fusionlint import engine as engine_mod
from fusionlint import pyast, runner, sparse
from fusionlint.config import Settings
from fusionlint.engine import Engine
from fusionlint.outline import outline_of
from fusionlint.plan_inputs import PlanInputStore
from fusionlint.precheck import MAX_NODES
from fusionlint.project.model import Project
from fusionlint.registry import all_rules
from fusionlint.runner import RunOptions

REPO = Path(__file__).resolve().parent.parent
CORPORA = [REPO / "fixtures", REPO / "examples", REPO / "tests" / "confirm_data"]

# __init__ and `reset` write self.<attr> and nothing compiled calls them: the plan leaves them out
# with their descriptions, which the inputs made ahead must carry
DESCRIBED = (
    "import torch\nfrom torch import nn\n\n\nclass Net(nn.Module):\n    def __init__(self, width: int = 4):\n"
    "        super().__init__()\n        self.proj = nn.Linear(width, width)\n        self.steps = 0\n"
    "        self.register_buffer('scale', torch.ones(1))\n\n    def reset(self):\n        self.steps = 0\n\n"
    "    def forward(self, x):\n        self.steps += 1\n        return self.proj(x).sum().item()\n"
)


def _plan_fields(plan):
    if plan is None:
        return None
    fields = dict(vars(plan))
    lines = fields.pop("lines")
    fields["lines"] = None if lines is None else (lines._cut, lines._source)
    return fields


def _both_plans(source: str, shown: str = "m.py"):
    model = Project()
    model.add(shown, Path(shown), source)
    engine = Engine(list(all_rules().values()), model=model)
    rules = engine._screen(source, shown)
    tree = pyast.parse(source)
    outline = outline_of(tree, source, MAX_NODES)
    made = pickle.loads(pickle.dumps(sparse.prepare(pyast.parse(source), source)))  # as the store keeps it
    return _plan_fields(engine._plan(source, outline, shown, rules, tree)), _plan_fields(engine._plan(source, outline, shown, rules, made))


def test_inputs_made_ahead_give_the_plan_of_the_tree_with_the_left_out_methods_described():
    from_tree, from_inputs = _both_plans(DESCRIBED)
    assert from_tree is not None and from_tree["class_facts"]["Net"]  # __init__ and reset left out, described
    assert from_inputs == from_tree


@pytest.mark.parametrize("root", CORPORA, ids=lambda p: p.name)
def test_inputs_made_ahead_give_the_plan_of_the_tree(root):
    planned = 0
    for path in sorted(root.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        from_tree, from_inputs = _both_plans(source, path.name)
        assert from_inputs == from_tree, path
        planned += from_tree is not None
    assert planned  # the corpus has files the plan thins


def _project(tmp_path: Path, files: int) -> Path:
    (tmp_path / "pyproject.toml").write_text("[tool.fusionlint]\n")
    for n in range(files):
        (tmp_path / f"model_{n}.py").write_text(DESCRIBED)
    (tmp_path / "helpers.py").write_text("def plain(x):\n    return x + 1\n")  # no marker: nothing stored
    return tmp_path


def _run(root: Path, jobs: int):
    return runner.run([str(root)], Settings(root=root), RunOptions(jobs=jobs, cache=False))


def _stored_at_close(monkeypatch) -> list[tuple[PlanInputStore, list[str]]]:
    """Each store the runs close, with the files it held then."""
    stores: list[tuple[PlanInputStore, list[str]]] = []
    real_close = PlanInputStore.close

    def closing(self):
        stores.append((self, sorted(os.listdir(self.directory))))
        real_close(self)

    monkeypatch.setattr(PlanInputStore, "close", closing)
    return stores


def test_a_run_lints_each_summarised_file_without_parsing_it_again(tmp_path, monkeypatch):
    root = _project(tmp_path, 3)
    parses: list[str] = []
    real = engine_mod.parse_outline

    def counting(source, path):
        parses.append(path)
        return real(source, path)

    monkeypatch.setattr(engine_mod, "parse_outline", counting)
    stores = _stored_at_close(monkeypatch)
    with_store = _run(root, jobs=1)
    assert with_store.result.findings and parses == []
    (store, kept), = stores
    assert len(kept) == 3  # one per model file; helpers.py holds no marker
    assert not os.path.exists(store.directory)  # removed when the run ends

    monkeypatch.setattr(PlanInputStore, "create", classmethod(lambda cls, linted=None: None))
    without = _run(root, jobs=1)
    assert len(parses) == 3  # each model file parsed again by the lint
    assert [vars(f) for f in with_store.result.findings] == [vars(f) for f in without.result.findings]


def test_the_summary_workers_store_the_inputs(tmp_path, monkeypatch):
    from fusionlint.project.ahead import MIN_FILES

    root = _project(tmp_path, MIN_FILES)
    stores = _stored_at_close(monkeypatch)
    run = _run(root, jobs=2)
    assert [len(kept) for _, kept in stores] == [MIN_FILES]  # written by the forked summary workers, read by the lint workers
    in_one_process = _run(root, jobs=1)
    assert run.result.findings and [vars(f) for f in run.result.findings] == [vars(f) for f in in_one_process.result.findings]


def test_inputs_are_only_for_the_text_they_were_made_from(tmp_path):
    store = PlanInputStore(str(tmp_path))
    store.put("m.py", DESCRIBED, pyast.parse(DESCRIBED))
    assert store.get("m.py", DESCRIBED) is not None
    assert store.get("m.py", DESCRIBED + "\n") is None  # changed since its summary: parsed again
    assert store.get("other.py", DESCRIBED) is None
    (only,) = os.listdir(tmp_path)
    (tmp_path / only).write_bytes(b"\x80 not a pickle")  # a damaged file is only a missed saving
    assert store.get("m.py", DESCRIBED) is None
    store.put("plain.py", "x = 1\n", pyast.parse("x = 1\n"))  # no compiled-code marker: nothing kept
    assert store.get("plain.py", "x = 1\n") is None


def test_a_cached_run_of_files_summarised_ahead_serves_the_next_run(tmp_path):
    # the lint reads the store through the cache's recording model: a question it does not know
    # would make every entry uncacheable, and the next run would lint every file again
    from fusionlint.project.ahead import MIN_FILES

    root = _project(tmp_path, MIN_FILES)
    first = runner.run([str(root)], Settings(root=root), RunOptions(jobs=2, cache=True))
    again = runner.run([str(root)], Settings(root=root), RunOptions(jobs=2, cache=True))
    assert first.files_linted == MIN_FILES + 1 and first.result.findings
    assert again.files_linted == 0
    assert [vars(f) for f in again.result.findings] == [vars(f) for f in first.result.findings]


def test_only_the_linted_files_inputs_are_made(tmp_path, monkeypatch):
    # pre-commit names a few files: the model summarises the whole project, the lint reads three inputs
    from fusionlint.project.ahead import MIN_FILES

    root = _project(tmp_path, MIN_FILES)
    stores = _stored_at_close(monkeypatch)
    named = [str(root / f"model_{n}.py") for n in range(3)]
    for jobs in (1, 2):
        run = runner.run(named, Settings(root=root), RunOptions(jobs=jobs, cache=False))
        assert run.files_linted == 3 and run.result.findings
    assert [len(kept) for _, kept in stores] == [3, 3]
