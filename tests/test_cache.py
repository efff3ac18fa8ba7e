"""The findings cache (.fusionlint_cache/): what a re-run lints again, and that what it serves is right.

Hits and misses are observed through ``Run.files_linted`` (files the engine analysed in that run),
never through timing.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from fusionlint.cache.store import DIRNAME, IDLE_GENERATION_S, Store
from fusionlint.cli import main
from fusionlint.config import load_settings
from fusionlint.files import read_source_encoded
from fusionlint.runner import RunOptions, run

BASE = "import torch.nn as nn\n\n\nclass Base(nn.Module):\n    pass\n"
PLAIN_BASE = "class Base:\n    pass\n"
SUB = "from base import Base\n\n\nclass Sub(Base):\n    def forward(self, x):\n        return x.item()\n"
LEAF = "import torch\n\n\ndef helper(x):\n    return x + 1\n"
REPO = Path(__file__).resolve().parent.parent
OLD = 1_600_000_000  # an mtime long past: the cache trusts the stat of files older than 2 seconds


def _project(root: Path, **files: str) -> Path:
    (root / "pyproject.toml").write_text("[tool.fusionlint]\n")
    for name, text in {"base": BASE, "sub": SUB, "leaf": LEAF, **files}.items():
        (root / f"{name}.py").write_text(text)
    return root


def _settled_project(root: Path, **files: str) -> Path:
    """``_project`` with every file's mtime long past (the cache trusts their stat)."""
    _project(root, **files)
    for path in root.glob("*.py"):
        os.utime(path, (OLD, OLD))
    return root


def _run(root: Path, *, jobs: int = 1, cache: bool = True, overrides=None, **options):
    return run([str(root)], load_settings(root, overrides=overrides), RunOptions(jobs=jobs, cache=cache, **options))


def _found(outcome) -> list[tuple]:
    r = outcome.result
    return [(f.path, f.line, f.column, f.code, f.message) for f in r.findings] + [
        (e.path, e.line, e.message) for e in r.errors
    ]


def _entries(root: Path) -> list[Path]:
    return sorted(p for d in (root / DIRNAME / "static").glob("*/findings") for p in d.rglob("*.pickle"))


def test_a_second_run_serves_every_file_and_finds_the_same(tmp_path):
    root = _project(tmp_path)
    cold = _run(root)
    warm = _run(root)
    assert cold.files_linted == 3 and warm.files_linted == 0
    assert _found(warm) == _found(cold) == _found(_run(root, cache=False))
    assert [f.code for f in warm.result.findings] == ["FL101"]
    assert warm.result.files_checked == cold.result.files_checked == 3


def test_an_unchanged_tree_is_not_read_again(tmp_path, monkeypatch):
    root = _project(tmp_path)
    for path in root.glob("*.py"):
        os.utime(path, (OLD, OLD))
    expected = _found(_run(root))

    def no_reading(*args, **kwargs):
        raise AssertionError(f"source read on a warm run: {args[0]}")

    monkeypatch.setattr("fusionlint.cache.session.open", no_reading, raising=False)
    monkeypatch.setattr("fusionlint.runner.read_source_encoded", no_reading)
    warm = _run(root)
    assert warm.files_linted == 0 and _found(warm) == expected


def test_editing_a_base_class_changes_the_subclass_findings_in_another_file(tmp_path):
    root = _project(tmp_path)
    assert [(f.path, f.code) for f in _run(root).result.findings] == [("sub.py", "FL101")]
    (root / "base.py").write_text(PLAIN_BASE)  # Sub is no longer a module: its forward is not compiled
    edited = _run(root)
    assert edited.result.findings == []
    assert edited.files_linted == 2  # base.py (new text) and sub.py (its base's kind changed); not leaf.py
    assert _found(edited) == _found(_run(root, cache=False))
    (root / "base.py").write_text(BASE)
    back = _run(root)
    assert [(f.path, f.code) for f in back.result.findings] == [("sub.py", "FL101")]
    assert back.files_linted == 1  # sub.py again; base.py's earlier entry holds for this text


def test_editing_a_file_nothing_depends_on_lints_only_that_file(tmp_path):
    root = _project(tmp_path)
    _run(root)
    (root / "leaf.py").write_text(LEAF + "\n\ndef other(y):\n    return y\n")
    edited = _run(root)
    assert edited.files_linted == 1
    assert _found(edited) == _found(_run(root, cache=False))


def test_a_new_file_that_adds_a_subclass_is_seen(tmp_path):
    root = _project(tmp_path, sub=SUB.replace("return x.item()", "return self.scale(x)") + "    def scale(self, x):\n        return x\n")
    _run(root)
    # a subclass elsewhere defines what `self.scale` is: code in sub.py is asked about again
    (root / "more.py").write_text("from sub import Sub\n\n\nclass More(Sub):\n    def forward(self, x):\n        return x.item()\n")
    again = _run(root)
    assert again.files_linted >= 1
    assert _found(again) == _found(_run(root, cache=False))
    assert ("more.py", "FL101") in [(f.path, f.code) for f in again.result.findings]


def test_an_undecodable_file_is_served_as_its_error(tmp_path):
    root = _project(tmp_path)
    (root / "bad.py").write_bytes(b"x = 1\x00\n")
    cold = _run(root)
    warm = _run(root)
    assert warm.files_linted == 0
    assert _found(warm) == _found(cold) and [e.path for e in warm.result.errors] == ["bad.py"]
    assert warm.result.paths == cold.result.paths


def test_changed_settings_lint_everything_again(tmp_path):
    root = _project(tmp_path)
    _run(root)
    assert _run(root, overrides={"ignore": ["FL101"]}).files_linted == 3
    assert _run(root, overrides={"ignore": ["FL101"]}).files_linted == 0
    assert _run(root, overrides={"target_torch": "2.8"}).files_linted == 3
    assert _run(root).files_linted == 0  # the first settings' entries are still there


def test_a_corrupt_or_truncated_entry_is_ignored_and_written_again(tmp_path):
    root = _project(tmp_path)
    expected = _found(_run(root))
    for path in _snapshots(root):  # else the next run serves every file from it without reading an entry
        path.unlink()
    entries = _entries(root)
    assert len(entries) == 3
    entries[0].write_bytes(entries[0].read_bytes()[:40])  # truncated
    entries[1].write_bytes(b"\x80\x05garbage")  # not even our header
    data = bytearray(entries[2].read_bytes())
    data[-5] ^= 0xFF  # one byte flipped inside the payload
    entries[2].write_bytes(bytes(data))
    again = _run(root)
    assert again.files_linted == 3 and _found(again) == expected
    assert _run(root).files_linted == 0  # rewritten whole


def test_a_warm_run_serves_every_file_from_one_snapshot_without_reading_an_entry(tmp_path, monkeypatch):
    files = {f"m{n:02d}": LEAF.replace("helper", f"helper{n}") for n in range(30)}
    root = _project(tmp_path, **files)
    (root / "bad.py").write_bytes(b"x = 1\x00\n")  # an unreadable file, served as its error
    cold = _run(root, jobs=2)  # the runs of the files linted in workers come back marked as stored
    assert len(_snapshots(root)) == 1
    real_load = Store.load

    def no_entries(self, kind, key):
        assert kind != "findings", "an entry read on a warm run"
        return real_load(self, kind, key)

    with monkeypatch.context() as m:
        m.setattr(Store, "load", no_entries)
        warm = _run(root, jobs=2)
    assert warm.files_linted == 0 and _found(warm) == _found(cold)
    assert warm.result.paths == cold.result.paths and [e.path for e in warm.result.errors] == ["bad.py"]
    # an edit is another tree: the snapshot is not used, and the edited file's findings change
    (root / "sub.py").write_text(SUB.replace("x.item()", "x + 1"))
    edited = _run(root)
    assert edited.files_linted >= 1 and not [f for f in edited.result.findings if f.path == "sub.py"]


def test_a_damaged_snapshot_is_ignored_and_written_again(tmp_path):
    root = _project(tmp_path)
    expected = _found(_run(root))
    (snapshot,) = _snapshots(root)
    data = bytearray(snapshot.read_bytes())
    data[-5] ^= 0xFF
    snapshot.write_bytes(bytes(data))
    again = _run(root)
    assert again.files_linted == 0 and _found(again) == expected  # served from the entries
    assert Store(root).load_file(snapshot) is not None  # and the snapshot written whole again


def test_a_snapshot_of_other_settings_is_not_served(tmp_path):
    root = _project(tmp_path)
    _run(root)
    ignored = _run(root, overrides={"ignore": ["FL101"]})  # another config: its own entries, its own snapshot
    assert ignored.files_linted == 3 and ignored.result.findings == []
    assert [f.code for f in _run(root).result.findings] == ["FL101"]
    assert [f.code for f in _run(root).result.findings] == ["FL101"]


def test_a_corrupt_summary_or_manifest_is_ignored(tmp_path):
    root = _project(tmp_path)
    expected = _found(_run(root))
    for path in (root / DIRNAME).rglob("*.pickle"):
        path.write_bytes(b"")
    assert _found(_run(root)) == expected


def test_what_is_served_comes_from_the_cache_and_no_cache_does_not_use_it(tmp_path):
    root = _project(tmp_path)
    _run(root)
    _poison(root)
    assert _run(root).result.findings == []  # served: proof that a warm run reads the entries
    assert [f.code for f in _run(root, cache=False).result.findings] == ["FL101"]
    result = CliRunner().invoke(main, ["check", "--no-cache", str(root)])
    assert result.exit_code == 1 and "FL101" in result.output


def test_no_cache_writes_nothing(tmp_path):
    root = _project(tmp_path)
    result = CliRunner().invoke(main, ["check", "--no-cache", str(root)])
    assert result.exit_code == 1
    assert not (root / DIRNAME).exists()


def test_fix_and_diff_runs_lint_every_file(tmp_path):
    root = _project(tmp_path, view="import torch\nfrom torch import nn\n\n\nclass V(nn.Module):\n"
                    "    def forward(self, x):\n        return x.permute(0, 2, 1).view(-1)\n")
    _run(root)
    _poison(root)
    assert _run(root).result.findings == []
    diffed = _run(root, fix=True, diff=True, unsafe_fixes=True)
    assert diffed.files_linted == 4 and diffed.result.findings


VIEW = ("import torch\nfrom torch import nn\n\n\nclass V(nn.Module):\n"
        "    def forward(self, x):\n        return x.permute(0, 2, 1).view(-1)\n")


def _count_summaries(monkeypatch) -> list[str]:
    import fusionlint.project.model as model_mod

    made: list[str] = []
    real = model_mod.summarize
    monkeypatch.setattr(model_mod, "summarize", lambda text, shown, *a, **k: (made.append(shown), real(text, shown, *a, **k))[1])
    return made


def test_a_fix_run_takes_the_other_files_summaries_from_the_cache(tmp_path, monkeypatch):
    # pre-commit's fix hook names the staged files of a project of thousands: the model of the rest
    # comes from the cache, as in a read-only run (before, every file was summarised again)
    files = {f"m{n:02d}": LEAF.replace("helper", f"helper{n}") for n in range(20)}
    root = _project(tmp_path, view=VIEW, **files)
    _run(root)
    made = _count_summaries(monkeypatch)
    fixed = run([str(root / "view.py")], load_settings(root), RunOptions(jobs=1, cache=True, fix=True))
    assert fixed.result.fixed == 1 and fixed.files_linted == 1
    assert ".reshape(-1)" in (root / "view.py").read_text()
    assert made == ["view.py"]  # its fixed text, linted again after the fix; the other 23 from the cache
    made.clear()
    again = run([str(root / "view.py")], load_settings(root), RunOptions(jobs=1, cache=True, fix=True))
    assert again.result.fixed == 0 and made == ["view.py"]  # only the file the fix changed
    monkeypatch.undo()
    # and the next read-only run reports the fixed text, not an entry of the text before
    assert _found(_run(root)) == _found(_run(root, cache=False))
    assert not [f for f in _run(root).result.findings if f.path == "view.py"]


def test_a_fix_run_sees_an_edit_of_a_base_class_in_another_file(tmp_path):
    root = _project(tmp_path)
    _run(root)
    diff = lambda: run([str(root / "sub.py")], load_settings(root), RunOptions(jobs=1, cache=True, fix=True, diff=True))
    before = diff()
    assert [f.code for f in before.result.findings] == ["FL101"]  # Sub is an nn.Module through base.py
    (root / "base.py").write_text(PLAIN_BASE)
    after = diff()
    assert after.result.findings == [] and _found(after) == _found(
        run([str(root / "sub.py")], load_settings(root), RunOptions(jobs=1, cache=False, fix=True, diff=True)))


def test_a_fix_run_stores_no_entry_and_no_snapshot(tmp_path):
    root = _project(tmp_path, view=VIEW)
    run([str(root)], load_settings(root), RunOptions(jobs=1, cache=True, fix=True, diff=True))
    assert _entries(root) == [] and _snapshots(root) == []
    warm = _run(root)  # so the next read-only run lints every file itself
    assert warm.files_linted == 4


def _editor_project(root: Path, open_texts: dict[str, str]):
    """The language server's project of ``root`` indexed as on its first lint, and a lint of sub.py."""
    from fusionlint.lsp.workspace import Projects

    project = Projects([root]).for_path(str(root / "sub.py"))
    project.ensure_indexed({str(root / name): text for name, text in open_texts.items()})
    return project, project.linter.lint((root / "sub.py").read_text(), root / "sub.py")


def test_the_language_server_indexes_a_project_from_the_cache(tmp_path, monkeypatch):
    # its first lint summarised every file of the project first (transformers: 48.7 CPU s)
    files = {f"m{n:02d}": LEAF.replace("helper", f"helper{n}") for n in range(20)}
    root = _project(tmp_path, **files)
    for path in root.glob("*.py"):
        os.utime(path, (OLD, OLD))
    _run(root)
    made = _count_summaries(monkeypatch)
    project, linted = _editor_project(root, {"sub.py": SUB})
    assert made == [] and len(project.model.files) == 23  # the open buffer, as saved, from the cache too
    assert [f.code for f in linted.findings] == ["FL101"]  # Sub is an nn.Module through base.py
    # and what the cache does not hold, or a buffer that differs from the disk, is summarised anew
    (root / "base.py").write_text(PLAIN_BASE)
    _, edited = _editor_project(root, {})
    # (sub.py, not open this time, came without its text: the lint summarises the text it is given)
    assert made == ["base.py", "sub.py"] and edited.findings == []
    (root / "base.py").write_text(BASE)
    _, unsaved = _editor_project(root, {"base.py": PLAIN_BASE})
    assert unsaved.findings == []


def test_the_language_server_first_index_has_a_helper_fill_the_cache(tmp_path, monkeypatch):
    # with no cache yet the server summarised every file itself, in one process (transformers: 62.7 s
    # to the first diagnostic on two cores, 37.5-38.8 s with the helper's two workers)
    import fusionlint.cache.warm as warm

    monkeypatch.setattr(warm, "WORKERS", 2)
    files = {f"m{n:02d}": LEAF.replace("helper", f"helper{n}") for n in range(warm.MIN_MISSING)}
    root = _settled_project(tmp_path, **files)
    made = _count_summaries(monkeypatch)
    project, linted = _editor_project(root, {"sub.py": SUB})
    assert made == [] and len(project.model.files) == warm.MIN_MISSING + 3
    assert [f.code for f in linted.findings] == ["FL101"]  # Sub is an nn.Module through base.py
    # a helper that cannot start: the server makes them itself, as before
    monkeypatch.setattr(warm.sys, "executable", str(tmp_path / "no-such-python"))
    (root / "extra.py").write_text(LEAF.replace("helper", "extra"))
    shutil.rmtree(root / DIRNAME)
    project, linted = _editor_project(root, {"sub.py": SUB})
    assert len(made) == warm.MIN_MISSING + 4 and [f.code for f in linted.findings] == ["FL101"]
    # nor does the server wait for ever for one that does not finish
    monkeypatch.undo()
    monkeypatch.setattr(warm, "WORKERS", 2)
    monkeypatch.setattr(warm, "HELPER_TIMEOUT_S", 0.01)
    made = _count_summaries(monkeypatch)
    shutil.rmtree(root / DIRNAME)
    project, linted = _editor_project(root, {"sub.py": SUB})
    assert len(made) == warm.MIN_MISSING + 4 and [f.code for f in linted.findings] == ["FL101"]


UNPACKS = (
    "import torch\nfrom torch import nn\n\n\nclass Pair(nn.Module):\n    def forward(self, x):\n"
    "        return x, x * 2\n\n\nclass Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
    "        self.pair = Pair()\n\n    def forward(self, x):\n        a, b = self.pair(x)\n        return a + b\n"
)
CALLER = "import torch\nfrom torch import nn\nfrom leaf import helper\n\n\nclass Caller(nn.Module):\n    def forward(self, x):\n        return helper(x)\n"


def test_an_edit_that_changes_the_propagated_facts_relints_only_the_files_whose_answers_changed(tmp_path):
    # every question a lint records must be one the next run can ask again: `a, b = self.pair(x)`
    # asks the model what Pair.forward returns (submodule_items), which no later run could answer, so
    # after any edit that changed the propagated facts every file that had asked it was linted again
    # (an edit inside LlamaAttention.forward: 1,019 of the zoo's files, 158 of the cold run's 219 CPU s)
    root = _settled_project(tmp_path, unpacks=UNPACKS, caller=CALLER)
    _run(root)
    (root / "caller.py").write_text(CALLER.replace("        return helper(x)", "        x = x + 1\n        return helper(x)"))
    os.utime(root / "caller.py", (OLD + 10, OLD + 10))
    edited = _run(root)
    assert edited.files_linted == 2  # caller.py, and leaf.py: its helper's facts came through the moved call
    assert _found(edited) == _found(_run(root, cache=False))


def test_every_kind_of_question_a_lint_records_is_one_a_later_run_can_ask(tmp_path, monkeypatch):
    # a kind the recorder logs and a later run cannot ask counts as changed in every run after an edit
    from fusionlint.cache import recording

    # and asked again of the same model, each question gets the digest it was logged with (a stand-in
    # digested for the log, as for ``attributes``, must be the one the later run digests)
    reads, seen = [], {}
    real_end, real_model, real_index = recording.Recorder.end, recording.RecordingModel.__init__, recording.RecordingIndex.__init__
    monkeypatch.setattr(recording.Recorder, "end", lambda self: (lambda out: (reads.extend(out[0] or ()), out)[1])(real_end(self)))
    monkeypatch.setattr(recording.RecordingModel, "__init__", lambda self, m, r: (seen.setdefault("model", m), real_model(self, m, r))[1])
    monkeypatch.setattr(recording.RecordingIndex, "__init__", lambda self, i, r: (seen.setdefault("index", i), real_index(self, i, r))[1])
    root = tmp_path / "project"
    shutil.copytree(REPO / "fixtures", root)
    (root / "unpacks.py").write_text(UNPACKS)
    _run(root)
    kinds = {question[0] for question, _ in reads}
    assert {"model.submodule_items", "model.function_facts", "model.attributes", "model.has_compiled"} <= kinds
    assert kinds <= set(recording._QUESTIONS), kinds - set(recording._QUESTIONS)
    differ = [read for read in reads if not recording.still_holds([read], seen["model"], seen["index"])]
    assert differ == []


CALLS_NOTHING = (
    "import torch\nfrom torch import nn\n\nfrom helpers import helper\n\n\n"
    "class Model(nn.Module):\n    def forward(self, x):\n        return x + 1\n"
)
HELPER = "def helper(x):\n    return x.item()\n"


def test_an_edited_buffer_is_propagated_with_its_own_calls_not_the_cached_files(tmp_path):
    # the cache loads summaries without their function bodies and fills them in before a propagation;
    # it filled an edited buffer's summary with the bodies of the file on disk (the same functions), so
    # a call typed into forward was not seen, nor what it compiles in other files
    root = _settled_project(tmp_path, model=CALLS_NOTHING, helpers=HELPER)
    _run(root)
    from fusionlint.lsp.workspace import Projects

    project = Projects([root]).for_path(str(root / "model.py"))
    project.ensure_indexed({str(root / "model.py"): CALLS_NOTHING})  # opened as saved
    assert project.linter.lint(CALLS_NOTHING, root / "model.py").findings == []
    project.linter.lint(CALLS_NOTHING.replace("return x + 1", "return helper(x) + 1"), root / "model.py")
    found = project.linter.lint(HELPER, root / "helpers.py").findings
    assert [(f.code, f.line, f.chain) for f in found] == [("FL101", 2, ("Model.forward", "helpers.helper"))]


def test_parallel_workers_write_entries_that_the_next_run_serves(tmp_path):
    files = {f"m{n:02d}": LEAF.replace("helper", f"helper{n}") for n in range(30)}
    root = _project(tmp_path, **files)
    cold = _run(root, jobs=2)
    warm = _run(root, jobs=2)
    assert cold.files_linted == 33 and warm.files_linted == 0
    assert _found(warm) == _found(cold)


def test_two_runs_at_the_same_time_both_give_the_right_result(tmp_path):
    files = {f"m{n:02d}": SUB.replace("Sub", f"Sub{n}") for n in range(20)}
    root = _project(tmp_path, **files)
    expected = _found(_run(root, cache=False))
    assert not (root / DIRNAME).exists()
    script = (
        "import sys, json\nfrom pathlib import Path\nfrom fusionlint.config import load_settings\n"
        "from fusionlint.runner import RunOptions, run\n"
        "root = Path(sys.argv[1])\n"
        "out = run([str(root)], load_settings(root), RunOptions(jobs=1, cache=True))\n"
        "print(json.dumps([[f.path, f.line, f.column, f.code, f.message] for f in out.result.findings]))\n"
    )
    procs = [subprocess.Popen([sys.executable, "-c", script, str(root)], stdout=subprocess.PIPE, text=True)
             for _ in range(2)]
    outputs = [p.communicate(timeout=300)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs)
    import json

    want = [list(row) for row in expected]
    assert all(json.loads(out) == want for out in outputs)
    after = _run(root)
    assert after.files_linted == 0 and _found(after) == expected
    assert not list((root / DIRNAME).rglob(".tmp-*"))  # no temporary file left behind


def test_cache_directory_is_tagged_and_ignored_by_git(tmp_path):
    root = _project(tmp_path)
    _run(root)
    top = root / DIRNAME
    assert (top / "CACHEDIR.TAG").read_text().startswith("Signature: 8a477f597d28d172789f06886806bc55")
    assert (top / ".gitignore").read_text().splitlines()[-1] == "*"


def test_clean_removes_the_cache_and_says_what(tmp_path):
    root = _project(tmp_path)
    _run(root)
    files = sum(1 for p in (root / DIRNAME / "static").rglob("*") if p.is_file())
    result = CliRunner().invoke(main, ["clean", str(root)])
    assert result.exit_code == 0
    assert f"removed {root / DIRNAME} (" in result.output and f"findings cache: {files} files" in result.output
    assert not (root / DIRNAME).exists()
    again = CliRunner().invoke(main, ["clean", str(root)])
    assert again.exit_code == 0 and "no cache" in again.output


def test_clean_removes_a_cache_that_only_the_confirm_pass_wrote(tmp_path):
    from fusionlint.confirm.cache import ResultCache

    root = _project(tmp_path)
    ResultCache(root).put("k" * 32, {"ok": True})
    assert (root / DIRNAME / "confirm").is_dir() and not (root / DIRNAME / "CACHEDIR.TAG").exists()
    result = CliRunner().invoke(main, ["clean", str(root)])
    assert result.exit_code == 0 and "confirm results: 1 files" in result.output
    assert not (root / DIRNAME).exists()


def test_clean_leaves_a_directory_that_is_not_ours(tmp_path):
    root = _project(tmp_path)
    (root / DIRNAME).mkdir()
    (root / DIRNAME / "mine.txt").write_text("keep")
    result = CliRunner().invoke(main, ["clean", str(root)])
    assert result.exit_code == 2 and "CACHEDIR.TAG" in result.output
    assert (root / DIRNAME / "mine.txt").read_text() == "keep"


def _snapshots(root: Path) -> list[Path]:
    return sorted((root / DIRNAME / "static").glob("*/served.pickle"))


def _poison(root: Path) -> None:
    """Empty the findings of every entry and of the last run's snapshot of them (all kept valid):
    what a run serves from the cache is then visible."""
    store = Store(root)
    for path in _entries(root):
        entry = store.load_file(path)
        entry["run"].result.findings = []
        store.save_file(path, entry)
    for path in _snapshots(root):
        snapshot = store.load_file(path)
        for _key, one, _unreadable in snapshot["runs"].values():
            one.result.findings = []
        store.save_file(path, snapshot)


def test_module_names_are_the_project_models(tmp_path):
    from fusionlint.cache.session import CacheSession
    from fusionlint.project.model import module_name

    for rel in ("pkg/__init__.py", "pkg/sub/__init__.py", "pkg/sub/mod.py", "pkg/loose/mod.py", "top.py", "pkg/a.b.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("")
    session = CacheSession(load_settings(tmp_path), (2, 13))
    for path in [*tmp_path.rglob("*.py"), *(p.relative_to(tmp_path) for p in tmp_path.rglob("*.py"))]:
        if not path.is_absolute():
            os.chdir(tmp_path)
        assert session._module(path) == module_name(path), path
        assert session.resolved(path) == str(path.resolve())


def _count_propagations(monkeypatch) -> list:
    from fusionlint.project import model as model_mod

    runs: list = []
    real = model_mod._Propagation.run
    monkeypatch.setattr(model_mod._Propagation, "run", lambda self: runs.append(1) or real(self))
    return runs


def test_an_edit_that_leaves_every_summary_alone_reuses_the_propagation(tmp_path, monkeypatch):
    root = _project(tmp_path)
    _run(root)
    (root / "leaf.py").write_text(LEAF + "# a comment\n")  # the ast summary is the same
    runs = _count_propagations(monkeypatch)
    edited = _run(root)
    assert edited.files_linted == 1 and runs == []


def test_moving_the_lines_of_a_function_that_is_not_compiled_reuses_the_propagation(tmp_path, monkeypatch):
    root = _project(tmp_path)
    _run(root)
    runs = _count_propagations(monkeypatch)
    # every line of leaf.py moves and helper's body changes, but nothing compiled calls helper
    (root / "leaf.py").write_text("\n" + LEAF.replace("x + 1", "x + 2"))
    edited = _run(root)
    assert edited.files_linted == 1 and runs == []
    assert _found(edited) == _found(_run(root, cache=False))


HELPERS = "import torch\n\n\ndef scale(x):\n    return x * 2\n\n\ndef shift(x):\n    return x + 1\n"
NET = ("import torch.nn as nn\n\nfrom helpers import scale, shift\n\n\nclass Net(nn.Module):\n"
       "    def forward(self, x):\n        return scale(x) + shift(x)\n")


GATE = "import torch\n\n\ndef gate(x):\n    if x.sum() > 0:\n        return x\n    return -x\n"
GATED = ("import torch.nn as nn\n\nfrom helpers import gate\n\n\nclass Net(nn.Module):\n"
         "    def forward(self, x):\n        y = x * 2\n        return gate(y)\n")


def test_lines_moved_in_compiled_code_keep_the_facts_and_the_reasons_show_the_new_lines(tmp_path, monkeypatch):
    root = _project(tmp_path, helpers=GATE, net=GATED)
    first = _run(root)
    assert "passed from Net.forward at net.py:9)" in [f.message for f in first.result.findings if f.path == "helpers.py"][0]
    runs = _count_propagations(monkeypatch)
    # a comment line and a statement without calls above the call to gate: its line moves, nothing else
    (root / "net.py").write_text(GATED.replace("        y = x * 2\n", "        # doubled\n        y = x * 2\n        z = 1\n"))
    edited = _run(root)
    assert runs == []  # the facts hold no lines: kept
    # helpers.py (unchanged) is linted again: its finding shows the call's line, which moved
    assert edited.files_linted == 2
    assert "passed from Net.forward at net.py:11)" in [f.message for f in edited.result.findings if f.path == "helpers.py"][0]
    # a comment appended below: no line the facts name moves, helpers.py's entry is served
    (root / "net.py").write_text((root / "net.py").read_text() + "# the end\n")
    again = _run(root)
    assert runs == [] and again.files_linted == 1
    assert _found(edited) == _found(again) == _found(_run(root, cache=False))


def test_a_call_added_in_compiled_code_asks_the_class_questions_of_no_entry_again(tmp_path, monkeypatch):
    from fusionlint.cache import recording

    sub = SUB.replace("return x.item()", "return self.scale(x).item()\n\n    def scale(self, x):\n        return x * 2")
    root = _project(tmp_path, sub=sub, helpers=HELPERS, net=NET)
    _run(root)
    runs = _count_propagations(monkeypatch)
    asked: list[tuple] = []
    real_ask = recording._ask
    monkeypatch.setattr(recording, "_ask", lambda q, m, i: asked.append(q) or real_ask(q, m, i))
    (root / "net.py").write_text(NET.replace("return scale(x)", "x = x.abs()\n        return scale(x)"))  # a call
    edited = _run(root)
    assert runs == [1]  # the facts changed: propagated again
    assert ("model.function_facts", "sub.py", "Sub.scale") in asked  # sub.py's facts are asked again
    assert [q for q in asked if q[0] in recording.CLASS_QUESTIONS] == []  # its classes' are not
    monkeypatch.undo()
    assert _found(edited) == _found(_run(root, cache=False))


def test_an_edit_inside_a_compiled_function_propagates_again(tmp_path, monkeypatch):
    root = _project(tmp_path, helpers=HELPERS, net=NET)
    _run(root)
    runs = _count_propagations(monkeypatch)
    (root / "helpers.py").write_text(HELPERS.replace("x + 1", "x.item() + 1"))  # shift is compiled (Net.forward)
    edited = _run(root)
    assert runs == [1]
    assert ("helpers.py", "FL101") in [(f.path, f.code) for f in edited.result.findings]
    assert _found(edited) == _found(_run(root, cache=False))


def test_an_edit_that_changes_a_compiled_context_in_another_file_invalidates_that_file(tmp_path):
    root = _project(tmp_path, helpers=HELPERS.replace("x + 1", "x.item() + 1"), net=NET)
    first = _run(root)
    assert ("helpers.py", "FL101") in [(f.path, f.code) for f in first.result.findings]
    # Net.forward no longer calls shift: shift is not compiled any more, so helpers.py's finding goes,
    # though helpers.py itself did not change
    (root / "net.py").write_text(NET.replace("scale(x) + shift(x)", "scale(x)"))
    edited = _run(root)
    assert [(f.path, f.code) for f in edited.result.findings if f.path == "helpers.py"] == []
    assert edited.files_linted == 2  # net.py (new text) and helpers.py (shift's facts changed); not leaf.py
    assert _found(edited) == _found(_run(root, cache=False))


DECO = ("def checked(func):\n    def wrapper(self, x):\n        out = func(self, x)\n"
        "        return out if out.sum().item() > 0 else -out\n    return wrapper\n")
DECORATED = ("import torch.nn as nn\n\nfrom deco import checked\n\n\nclass Net(nn.Module):\n"
             "    @checked\n    def forward(self, x):\n        return x * 2\n")


def test_a_decorator_taken_off_forward_in_another_file_uncompiles_its_wrapper(tmp_path):
    root = _project(tmp_path, deco=DECO, net=DECORATED)
    assert ("deco.py", 4, "FL101") in [(f.path, f.line, f.code) for f in _run(root).result.findings]
    (root / "net.py").write_text(DECORATED.replace("    @checked\n", ""))
    edited = _run(root)
    assert [f for f in edited.result.findings if f.path == "deco.py"] == []  # deco.py itself did not change
    assert _found(edited) == _found(_run(root, cache=False))
    (root / "net.py").write_text(DECORATED)
    again = _run(root)
    assert ("deco.py", 4, "FL101") in [(f.path, f.line, f.code) for f in again.result.findings]
    assert _found(again) == _found(_run(root, cache=False))


def _run_in_process(root: Path, seed: str) -> dict:
    import json

    script = (
        "import sys, json\nfrom pathlib import Path\nfrom fusionlint.config import load_settings\n"
        "from fusionlint.runner import RunOptions, run\n"
        "root = Path(sys.argv[1])\n"
        "out = run([str(root)], load_settings(root), RunOptions(jobs=1, cache=True))\n"
        "print(json.dumps({'linted': out.files_linted,\n"
        "                  'found': [[f.path, f.line, f.code] for f in out.result.findings]}))\n"
    )
    done = subprocess.run([sys.executable, "-c", script, str(root)], capture_output=True, text=True, check=True,
                          env={**os.environ, "PYTHONHASHSEED": seed})
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_recorded_answers_are_the_same_in_a_process_with_another_hash_seed(tmp_path):
    # Net.forward's facts hold a set of two callee names: its digest must not follow the string
    # hash seed of the process that recorded it, or net.py is linted again after any edit
    root = _project(tmp_path, helpers=HELPERS, net=NET)
    assert _run_in_process(root, "1")["linted"] == 5
    (root / "helpers.py").write_text(HELPERS + "\n\ndef unused(y):\n    return y\n")
    edited = _run_in_process(root, "2")
    assert edited["linted"] == 1
    assert edited["found"] == [[f.path, f.line, f.code] for f in _run(root, cache=False).result.findings]


def test_after_an_edit_only_the_edited_file_is_read(tmp_path, monkeypatch):
    import builtins

    root = _project(tmp_path, helpers=HELPERS, net=NET)
    for path in root.glob("*.py"):
        os.utime(path, (OLD, OLD))
    _run(root)
    (root / "helpers.py").write_text(HELPERS + "\n\ndef unused(y):\n    return y\n")
    read: list[str] = []
    real_open = builtins.open

    def recording_open(file, *args, **kwargs):
        if str(file).endswith(".py"):
            read.append(Path(file).name)
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr("fusionlint.cache.session.open", recording_open, raising=False)
    real_read = read_source_encoded

    def recording_read(path, *args, **kwargs):
        read.append(Path(path).name)
        return real_read(path, *args, **kwargs)

    monkeypatch.setattr("fusionlint.runner.read_source_encoded", recording_read)
    edited = _run(root)
    assert edited.files_linted == 1
    assert set(read) == {"helpers.py"}
    monkeypatch.undo()
    assert _found(edited) == _found(_run(root, cache=False))


def test_a_file_read_late_that_changed_since_the_scan_is_that_files_error(tmp_path, monkeypatch):
    from fusionlint.cache.session import CacheSession

    root = _project(tmp_path, helpers=HELPERS.replace("x + 1", "x.item() + 1"), net=NET)
    for path in root.glob("*.py"):
        os.utime(path, (OLD, OLD))
    _run(root)
    (root / "net.py").write_text(NET.replace("scale(x) + shift(x)", "scale(x)"))  # helpers.py must be linted again
    real = CacheSession.read_late

    def changed_meanwhile(self, model, path, shown):
        if shown == "helpers.py":
            path.write_text(HELPERS)
        return real(self, model, path, shown)

    monkeypatch.setattr(CacheSession, "read_late", changed_meanwhile)
    edited = _run(root)
    assert [(e.path, e.message) for e in edited.result.errors] == [
        ("helpers.py", "changed while fusionlint was checking it: not checked (run again)")]
    assert str((root / "helpers.py").resolve()) not in edited.result.paths
    monkeypatch.undo()
    again = _run(root)
    assert again.result.errors == [] and _found(again) == _found(_run(root, cache=False))


def test_entries_found_to_hold_are_served_unchecked_by_the_next_run_without_rewriting_them(tmp_path):
    root = _project(tmp_path, helpers=HELPERS, net=NET)
    _run(root)
    (root / "leaf.py").write_text(LEAF + "\n\ndef other(y):\n    return y\n")
    before = {p: p.stat().st_mtime_ns for p in _entries(root)}
    assert _run(root).files_linted == 1
    after = {p: p.stat().st_mtime_ns for p in _entries(root)}
    assert [p for p in before if after.get(p) != before[p]] == []  # only leaf.py's new entry was written
    assert len(after) == len(before) + 1
    assert _run(root).files_linted == 0


def test_a_new_function_nothing_calls_lints_only_its_file_and_asks_no_model_question_again(tmp_path, monkeypatch):
    from fusionlint.cache import recording

    root = _project(tmp_path, helpers=HELPERS, net=NET)
    _run(root)
    runs = _count_propagations(monkeypatch)
    asked: list[str] = []
    real_ask = recording._ask
    monkeypatch.setattr(recording, "_ask", lambda q, m, i: asked.append(q[0]) or real_ask(q, m, i))
    (root / "helpers.py").write_text(HELPERS + "\n\ndef unused(y):\n    return y\n")
    edited = _run(root)
    assert edited.files_linted == 1 and runs == []
    # the model answers as in the last run; only the lines its answers name are asked again
    assert [q for q in asked if q.startswith("model.") and q not in recording.LINE_QUESTIONS] == []
    monkeypatch.undo()
    assert _found(edited) == _found(_run(root, cache=False))


def test_a_new_function_that_a_call_elsewhere_now_reaches_is_propagated(tmp_path, monkeypatch):
    # net.py imports and calls `extra`, which helpers.py does not define yet: once it does, it is
    # compiled (through Net.forward) and its .item() is a finding, though only helpers.py changed
    net = NET.replace("import scale, shift", "import extra, scale, shift").replace("+ shift(x)", "+ shift(x) + extra(x)")
    root = _project(tmp_path, helpers=HELPERS, net=net)
    assert [f for f in _run(root).result.findings if f.path == "helpers.py"] == []
    runs = _count_propagations(monkeypatch)
    (root / "helpers.py").write_text(HELPERS + "\n\ndef extra(y):\n    return y.item()\n")
    edited = _run(root)
    assert runs == [1]
    assert ("helpers.py", "FL101") in [(f.path, f.code) for f in edited.result.findings]
    assert _found(edited) == _found(_run(root, cache=False))


def test_an_attribute_moved_in_a_base_class_keeps_the_model_answers(tmp_path, monkeypatch):
    from fusionlint.cache import recording

    base = BASE.replace("    pass\n", "    def __init__(self):\n        super().__init__()\n        self.w = 1\n")
    root = _project(tmp_path, base=base)
    _run(root)
    asked: list[tuple] = []
    real_ask = recording._ask
    monkeypatch.setattr(recording, "_ask", lambda q, m, i: asked.append(q) or real_ask(q, m, i))
    (root / "base.py").write_text(base.replace("self.w = 1", "pass\n        self.w = 1"))  # self.w's line moves
    edited = _run(root)
    # the attributes' answers hold no line (lines are questions of their own): not asked again
    assert [q for q in asked if q[0].startswith("model.") and q[0] not in recording.LINE_QUESTIONS] == []
    monkeypatch.undo()
    assert _found(edited) == _found(_run(root, cache=False))


def test_function_bodies_are_loaded_only_when_the_propagation_runs(tmp_path, monkeypatch):
    root = _project(tmp_path, helpers=HELPERS, net=NET)
    _run(root)
    kinds: list[str] = []
    real = Store.load
    monkeypatch.setattr(Store, "load", lambda self, kind, key: kinds.append(kind) or real(self, kind, key))
    (root / "helpers.py").write_text(HELPERS + "\n\ndef unused(y):\n    return y\n")  # the facts hold
    assert _run(root).files_linted == 1
    assert kinds.count("summaries") >= 4 and kinds.count("bodies") == 1  # helpers.py's last version, compared
    kinds.clear()
    (root / "helpers.py").write_text(HELPERS.replace("x + 1", "x.item() + 1"))  # inside compiled shift
    edited = _run(root)
    assert kinds.count("bodies") >= 4  # every other file's, for the propagation
    monkeypatch.undo()
    assert _found(edited) == _found(_run(root, cache=False))


def test_damaged_bodies_files_are_summarised_again(tmp_path):
    root = _project(tmp_path, helpers=HELPERS, net=NET)
    _run(root)
    for path in (root / DIRNAME / "static").glob("*/bodies/*/*.pickle"):
        path.write_bytes(path.read_bytes()[:30])
    (root / "helpers.py").write_text(HELPERS.replace("x + 1", "x.item() + 1"))  # the propagation runs again
    edited = _run(root)
    assert ("helpers.py", "FL101") in [(f.path, f.code) for f in edited.result.findings]
    assert _found(edited) == _found(_run(root, cache=False))


def test_linting_a_file_that_still_does_not_parse_keeps_the_propagation(tmp_path, monkeypatch):
    root = _project(tmp_path, bad="def broken(:\n    pass\n")
    cold = _run(root)
    assert [e.path for e in cold.result.errors] == ["bad.py"]
    runs = _count_propagations(monkeypatch)
    (root / "bad.py").write_text("def broken(:\n    return 1\n")
    edited = _run(root)
    assert edited.files_linted == 1 and runs == []
    assert _found(edited) == _found(_run(root, cache=False))


def test_a_logger_imported_from_another_file_is_cached_and_its_edit_seen(tmp_path):
    # FL104 asks the model whether `log` (imported from logs.py) is a logger; the answer is recorded, so
    # the file stays cacheable, and turning logs.py's logger into something else changes the finding
    logs = "import logging\n\nlog = logging.getLogger(__name__)\n"
    user = (
        "import torch.nn as nn\nfrom logs import log\n\n\nclass M(nn.Module):\n    def forward(self, x):\n"
        "        log.info('step')\n        return x\n"
    )
    root = _project(tmp_path, logs=logs, user=user)
    first = _run(root)
    assert ("user.py", "FL104") in [(f.path, f.code) for f in first.result.findings]
    again = _run(root)
    assert again.files_linted == 0 and _found(again) == _found(first)
    (root / "logs.py").write_text("class _Quiet:\n    def info(self, *a):\n        pass\n\n\nlog = _Quiet()\n")
    edited = _run(root)
    assert ("user.py", "FL104") not in [(f.path, f.code) for f in edited.result.findings]
    assert _found(edited) == _found(_run(root, cache=False))


def test_chains_are_the_same_in_processes_with_different_hash_seeds(tmp_path):
    # two torch.compile targets reach one helper: the first chain wins, and "first" must not follow the
    # set order of the compile targets (which changes with PYTHONHASHSEED)
    (tmp_path / "m.py").write_text(
        "import torch\n\n\ndef helper(x):\n    return x.sum().item()\n\n\n"
        + "".join(f"def entry_{name}(x):\n    return helper(x)\n\n\n" for name in ("a", "b", "c", "d", "e", "f"))
        + "".join(f"fast_{name} = torch.compile(entry_{name})\n" for name in ("a", "b", "c", "d", "e", "f"))
    )
    chains = set()
    for seed in ("1", "2", "3", "4", "5"):
        out = subprocess.run(
            [sys.executable, "-m", "fusionlint", "check", str(tmp_path / "m.py"), "--no-cache", "--format", "json"],
            capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": seed},
        )
        chains.add(tuple(f["context"] for f in json.loads(out.stdout)["findings"]))
    assert len(chains) == 1, chains


def test_entries_live_in_one_folder_per_build_and_idle_builds_go(tmp_path):
    """An upgrade used to leave the old build's entries for good; now each build has a folder, and one
    unused for IDLE_GENERATION_S goes with the next run that writes (the layout from before too)."""
    root = _project(tmp_path)
    _run(root)
    static = root / DIRNAME / "static"
    (generation,) = [p for p in static.iterdir() if p.is_dir()]
    assert (generation / "manifest.pickle").is_file() and list(generation.glob("findings/*/*.pickle"))
    idle, recent, legacy = static / ("0" * 32), static / ("1" * 32), static / "findings"
    for folder in (idle, recent, legacy):
        (folder / "ab").mkdir(parents=True)
        (folder / "ab" / "cd.pickle").write_bytes(b"x")
    (static / "manifest.pickle").write_bytes(b"x")  # written by the layout before generations
    long_ago = time.time() - IDLE_GENERATION_S - 60
    os.utime(idle, (long_ago, long_ago))
    os.utime(generation, (long_ago, long_ago))  # this build's own folder, used again by the next run
    (root / "leaf.py").write_text(LEAF + "\n# edited\n")  # so the run writes
    before = _found(_run(root))
    assert not idle.exists() and not legacy.exists() and not (static / "manifest.pickle").exists()
    assert recent.exists() and generation.exists()
    assert time.time() - generation.stat().st_mtime < 3600  # marked used
    assert _found(_run(root)) == before


_CLI_IN_PROCESS = (
    "import os, sys\nfrom fusionlint.cli import main\n"
    # as where torch is not installed (a pre-commit environment): no distribution metadata for it
    "if os.environ.get('HIDE_TORCH'):\n"
    "    import importlib.metadata as md\n"
    "    real = md.version\n"
    "    def version(name):\n"
    "        if name == 'torch':\n            raise md.PackageNotFoundError(name)\n"
    "        return real(name)\n"
    "    md.version = version\n"
    "try:\n    main(['check', sys.argv[1], '--format', 'json', '--exit-zero', *sys.argv[2:]])\n"
    "except SystemExit as exc:\n    code = exc.code\n"
    "print('IMPORTED', 'libcst' in sys.modules, any(m.startswith('fusionlint.rules.') for m in sys.modules),"
    " code, file=sys.stderr)\n"
)


def _cli_process(root: Path, *args: str, hide_torch: bool = False) -> tuple[str, str]:
    env = {**os.environ, "HIDE_TORCH": "1" if hide_torch else ""}
    done = subprocess.run([sys.executable, "-c", _CLI_IN_PROCESS, str(root), *args], capture_output=True, text=True, env=env)
    return done.stdout, done.stderr.strip().splitlines()[-1]


@pytest.mark.parametrize("hide_torch", [False, True], ids=["torch installed", "torch not installed"])
def test_a_warm_run_imports_neither_the_rules_nor_libcst_and_still_checks_the_selection(tmp_path, hide_torch):
    root = _project(tmp_path)
    cold, cold_imports = _cli_process(root, hide_torch=hide_torch)
    warm, warm_imports = _cli_process(root, hide_torch=hide_torch)
    assert cold_imports == "IMPORTED True True 0"
    assert warm_imports == "IMPORTED False False 0"
    assert json.loads(warm) == json.loads(cold) and json.loads(warm)["findings"]
    # a selection naming no rule is still an error with a cache present (its settings have no entries)
    _, bad = _cli_process(root, "--select", "FL999", hide_torch=hide_torch)
    assert bad == "IMPORTED True True 2"


def test_a_class_that_stops_subclassing_tensor_in_another_file_changes_the_guarded_findings(tmp_path):
    index = "import torch\nfrom torch import Tensor\n\n\nclass Index(Tensor):\n    is_sorted = False\n"
    guarded = ("import torch\nfrom torch import nn\n\nfrom index import Index\n\n\nclass Net(nn.Module):\n"
               "    def forward(self, value: torch.Tensor):\n"
               "        if isinstance(value, Index) and value.is_sorted:\n"
               "            if (value.diff() >= 0).all():\n                value = value * 2\n        return value\n")
    root = _project(tmp_path, index=index, net=guarded)
    assert ("net.py", 10, "FL102") in [(f.path, f.line, f.code) for f in _run(root).result.findings]
    (root / "index.py").write_text(index.replace("class Index(Tensor):", "class Index:"))
    edited = _run(root)
    assert [f for f in edited.result.findings if f.path == "net.py"] == []  # net.py itself did not change
    assert _found(edited) == _found(_run(root, cache=False))


def test_two_files_with_the_same_text_and_module_name_are_two_files(tmp_path):
    # two copies of a script (`train.py` in two example folders, no packages): one cached summary serves
    # both contents, but each file must get it under its own path (it was filed under the first one's,
    # and linting the second then found it missing: an internal error after the bodies were dropped)
    (tmp_path / "pyproject.toml").write_text("[tool.fusionlint]\n")
    script = SUB.replace("from base import Base", "from torch.nn import Module as Base")
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "train.py").write_text(script)
    for _ in range(2):  # the first run fills the cache, the second reads it
        outcome = _run(tmp_path)
        assert not outcome.internal_errors, outcome.internal_errors
        assert not outcome.result.errors, outcome.result.errors
        assert sorted((f.path, f.code) for f in outcome.result.findings) == [("a/train.py", "FL101"), ("b/train.py", "FL101")]
    assert _found(outcome) == _found(_run(tmp_path, cache=False))


def test_a_store_reads_back_files_of_any_size_whole(tmp_path):
    store = Store(tmp_path, "generation")
    big = {"text": "x" * 300_000, "numbers": list(range(70_000))}  # several reads of 64 KiB
    key = "ab" * 16
    assert store.save("findings", key, big) and store.load("findings", key) == big
    assert store.save("findings", "cd" * 16, ()) and store.load("findings", "cd" * 16) == ()
    empty = store.path("findings", "ef" * 16)
    empty.parent.mkdir(parents=True, exist_ok=True)
    empty.write_bytes(b"")
    assert store.load("findings", "ef" * 16) is None  # no header: absent, as a truncated file is
    assert store.load_file(tmp_path) is None  # a directory: absent too


def test_cache_files_of_any_size_read_back_whole_and_a_cut_one_reads_as_absent(tmp_path):
    from fusionlint.cache import store as store_module

    chunk = store_module._CHUNK
    for size in (0, 1, chunk - 1, chunk, chunk + 1, 3 * chunk + 5):
        path = tmp_path / f"raw-{size}"
        data = os.urandom(size)
        path.write_bytes(data)
        assert bytes(store_module._read_whole(path)) == data, size
    cache = Store(tmp_path / "project", "gen")
    value = {"facts": [("a" * 50, n) for n in range(20_000)]}  # a pickle of several chunks
    assert cache.save("facts", "k" * 32, value)
    assert cache.load("facts", "k" * 32) == value
    path = cache.path("facts", "k" * 32)
    assert path.stat().st_size > 2 * chunk
    path.write_bytes(path.read_bytes()[:-1])
    assert cache.load("facts", "k" * 32) is None


def test_a_kept_lint_reads_attribute_lines_only_through_submodule_set_at(tmp_path, monkeypatch):
    # the cache digests ``attributes`` answers without the facts' lines (a line inserted above a base class
    # kept none of its subclasses' 824 entries in the zoo); any other read of a line while a file whose entry
    # is kept is linted would let a finding's text go stale
    from fusionlint.cache import recording
    from fusionlint.project.summary import AttrFact

    slot = AttrFact.__dict__["line"]
    linting, reads, stale, seen = [False], [], [], set()

    def read_line(fact):
        if linting[0]:
            code = sys._getframe(1).f_code
            reads.append((Path(code.co_filename).name, code.co_name))
            seen.add(reads[-1])
        return slot.__get__(fact, AttrFact)

    monkeypatch.setattr(AttrFact, "line", property(read_line, lambda fact, value: slot.__set__(fact, value)))
    begin, end = recording.Recorder.begin, recording.Recorder.end

    def begin_lint(self):
        linting[0] = True
        reads.clear()
        return begin(self)

    def end_lint(self):
        linting[0] = False
        out = end(self)
        if out[1]:  # kept: every read must be one the entry recorded whole
            stale.extend(r for r in reads if r not in {("model.py", "submodule_set_at"), ("<string>", "__hash__"), ("<string>", "__eq__")})
        return out

    monkeypatch.setattr(recording.Recorder, "begin", begin_lint)
    monkeypatch.setattr(recording.Recorder, "end", end_lint)
    root = tmp_path / "project"
    shutil.copytree(REPO / "fixtures", root)
    (root / "rnn_base.py").write_text(RNN_BASE)
    (root / "rnn_sub.py").write_text(RNN_SUB.replace("from base import", "from rnn_base import") + "\n\nmodel = torch.compile(Sub())\n")
    _run(root)
    assert ("model.py", "submodule_set_at") in seen  # (the fixtures' FL107 names where an RNN is set)
    assert stale == []


RNN_BASE = (
    "import torch\nfrom torch import nn\n\n\nclass Base(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
    "        self.scale = 2.0\n        self.rnn = nn.Identity()  # an LSTM in a subclass\n\n"
    "    def forward(self, x):\n        h, _ = self.rnn(x)\n        return h * self.scale\n"
)
# timm's Sequencer2d: the base's forward calls what the subclass's __init__ makes an LSTM
RNN_SUB = (
    "from torch import nn\n\nfrom base import Base\n\n\nclass Sub(Base):\n    def __init__(self):\n"
    "        super().__init__()\n        self.rnn = nn.LSTM(4, 4)\n"
)


def test_a_line_inserted_above_a_class_lints_a_file_that_reads_its_attributes_again_only_where_it_shows_a_line(tmp_path):
    # the attribute facts' lines are left out of the digest of ``attributes``; the one place the lint reads
    # them (where a module attribute is set: FL107 names it) is a question of its own
    root = _settled_project(tmp_path, base=RNN_BASE.replace("h, _ = self.rnn(x)", "h = x"), sub=RNN_SUB)
    _run(root)
    (root / "sub.py").write_text("# a line above everything\n" + RNN_SUB)
    os.utime(root / "sub.py", (OLD + 10, OLD + 10))
    edited = _run(root)
    assert edited.files_linted == 1  # sub.py: base.py reads Sub's attributes, none of their lines
    assert _found(edited) == _found(_run(root, cache=False))

    (tmp_path / "rnn").mkdir()
    root = _settled_project(tmp_path / "rnn", base=RNN_BASE, sub=RNN_SUB)
    cold = _run(root)
    assert any(f.path == "base.py" and "sub.py:9" in f.message for f in cold.result.findings), _found(cold)
    (root / "sub.py").write_text("# a line above everything\n" + RNN_SUB)
    os.utime(root / "sub.py", (OLD + 10, OLD + 10))
    edited = _run(root)
    assert edited.files_linted == 2  # and base.py, whose finding names where the LSTM is set
    assert any(f.path == "base.py" and "sub.py:10" in f.message for f in edited.result.findings)
    assert _found(edited) == _found(_run(root, cache=False))


PASSES_THROUGH = (
    "import torch\nfrom torch import nn\n\n\n"
    "def pick(first, second, use_first):\n    return first if use_first else second\n\n\n"
    "def either(a, b, c):\n    return a or b or c\n\n\n"
    "class Net(nn.Module):\n    def forward(self, x, y, flag=True):\n"
    "        return pick(x, y, flag) + either(x, y, x)\n"
)
_FACTS_DIGEST = (
    "import sys\nfrom pathlib import Path\nfrom fusionlint.project.model import Project\n"
    "from fusionlint.cache.recording import answer_digest\n"
    "model = Project()\n"
    "for path in sorted(Path(sys.argv[1]).glob('*.py')):\n"
    "    model.add(path.name, path, path.read_text())\n"
    "model.propagate()\n"
    "print(answer_digest(model.export_facts()))\n"
)


def test_the_propagated_facts_do_not_follow_the_hash_seed(tmp_path):
    # a function that returns one of its parameters got them in the order of a frozenset's iteration: the
    # facts differed from run to run, so did their digests, and the files asking about them were linted again
    root = _project(tmp_path, net=PASSES_THROUGH)
    digests = {
        subprocess.run([sys.executable, "-c", _FACTS_DIGEST, str(root)], capture_output=True, text=True, check=True,
                       env={**os.environ, "PYTHONHASHSEED": seed}).stdout.strip()
        for seed in ("1", "2", "3", "4", "5", "6")
    }
    assert len(digests) == 1 and "" not in digests, digests
