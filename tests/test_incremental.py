"""Findings memoised per group of definitions (fusionlint.incremental) are the findings of a fresh lint."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

from fusionlint.api import Linter
from fusionlint.config import Settings

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
import lsp_latency  # noqa: E402  (the latency benchmark's 2,000-line file)


def _rows(result):
    return [
        (f.line, f.column, f.end_line, f.end_column, f.code, f.message, f.context, f.chain, f.fix) for f in result.findings
    ], result.error


# Edits an editor makes: a space at a line's end, a new line, a deleted line, a graph break typed in,
# a logger bound or an attribute written in some other definition (whole-file facts).
def _edit(lines: list[str], rng: random.Random, kinds: tuple[int, ...] = tuple(range(6))) -> None:
    i = rng.randrange(len(lines))
    kind = rng.choice(kinds)
    if kind == 0:
        lines[i] = lines[i] + " "
    elif kind == 1:
        lines.insert(i, "")
    elif kind == 2 and len(lines) > 5:
        del lines[i]
    elif kind == 3 and lines[i].startswith("        return "):
        lines[i] = lines[i].replace("return ", "return float(h.sum().item()) + ", 1)
    elif kind == 4:
        lines.append("def _log():\n    global log\n    log = logging.getLogger('m')\n")
    else:
        lines.append("def _tune(m):\n    m.scale = 3.0\n")


def _compare_over_edits(source: str, tmp_path: Path, edits: int, seed: int, kinds: tuple[int, ...] = tuple(range(6))) -> int:
    memo = Linter(Settings(root=tmp_path), memo=True)
    fresh_settings = Settings(root=tmp_path)
    rng = random.Random(seed)
    lines = source.split("\n")
    reused = 0
    for _ in range(edits):
        text = "\n".join(lines)
        got = memo.lint(text, "model.py")
        reused += memo.engine.memo.reused
        assert _rows(got) == _rows(Linter(fresh_settings).lint(text, "model.py"))
        _edit(lines, rng, kinds)
    return reused


def test_memo_gives_a_fresh_lint_findings_over_edits(tmp_path):
    source = lsp_latency.make_source().replace("import torch\n", "import logging\nimport torch\n", 1)
    source = "\n".join(source.split("\n")[:400])  # 20 classes: enough groups, a fast test
    _compare_over_edits(source, tmp_path, edits=8, seed=1)
    # A logger bound inside a blanked function (edit kind 4) is a whole-file fact FL104 asks about
    # on every method call, so after it the file is linted whole (correct, not memoised); without
    # such edits the memo must actually be used.
    reused = _compare_over_edits(source, tmp_path, edits=6, seed=1, kinds=(0, 1, 2, 3, 5))
    assert reused > 0  # the memo was used, not bypassed


FIXTURES = sorted((REPO / "fixtures").rglob("*.py")) + sorted((REPO / "examples").rglob("*.py"))


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: str(p.relative_to(REPO)))
def test_memo_gives_a_fresh_lint_findings_on_fixtures(path, tmp_path):
    _compare_over_edits(path.read_text(), tmp_path, edits=4, seed=len(path.name))


def test_a_keystroke_relints_one_group(tmp_path):
    source = "\n".join(lsp_latency.make_source().split("\n")[:400])
    linter = Linter(Settings(root=tmp_path), memo=True)
    linter.lint(source, "model.py")
    lines = source.split("\n")
    lines[200] += " "
    linter.lint("\n".join(lines), "model.py")
    assert linter.engine.memo.relinted == 1
    assert linter.engine.memo.reused > 10


def test_a_first_lint_parses_the_file_once_not_once_per_group(tmp_path, monkeypatch):
    from fusionlint import engine as engine_mod

    parsed: list[int] = []  # lines of each text libcst parsed
    real = engine_mod.cst.parse_module
    monkeypatch.setattr(engine_mod.cst, "parse_module", lambda text, *a, **k: (parsed.append(text.count("\n")), real(text, *a, **k))[1])
    source = "\n".join(lsp_latency.make_source().split("\n")[:400])
    fresh = Settings(root=tmp_path)
    linter = Linter(Settings(root=tmp_path), memo=True)

    def lint_and_compare(text: str) -> list[int]:
        parsed.clear()
        got = linter.lint(text, "model.py")
        counted = list(parsed)
        assert _rows(got) == _rows(Linter(fresh).lint(text, "model.py"))
        assert got.findings  # the file has graph breaks: the comparison is not of two empty lists
        return counted

    assert lint_and_compare(source) == [source.count("\n")]  # one parse, of the whole text
    assert linter.engine.memo.whole
    lines = source.split("\n")
    lines[200] += " "  # a keystroke: one group's projection, the other groups filled by the first lint
    assert len(lint_and_compare("\n".join(lines))) == 1
    assert (linter.engine.memo.relinted, linter.engine.memo.whole) == (1, False)
    assert linter.engine.memo.reused > 10
    lines.insert(3, "")  # every group below moves: the whole file once again, not group after group
    assert len(lint_and_compare("\n".join(lines))) == 1
    assert linter.engine.memo.whole


def test_an_edit_the_propagation_does_not_read_keeps_its_facts(tmp_path, monkeypatch):
    # the propagation over a whole project is seconds in a large one (transformers: 3.5 CPU s), and
    # an editor's buffer changes at each keystroke: a change it reads nothing of must not re-run it
    from fusionlint.project import model as model_mod

    runs: list[int] = []
    real = model_mod._Propagation.run
    monkeypatch.setattr(model_mod._Propagation, "run", lambda self: (runs.append(1), real(self))[1])
    source = "\n".join(lsp_latency.make_source().split("\n")[:400])
    linter = Linter(Settings(root=tmp_path), memo=True)
    fresh = Settings(root=tmp_path)
    lines = source.split("\n")

    def lint(lines: list[str]) -> int:
        before = len(runs)
        text = "\n".join(lines)
        assert _rows(linter.lint(text, "model.py")) == _rows(Linter(fresh).lint(text, "model.py"))
        return len(runs) - before - 1  # (less the fresh lint's own)

    assert lint(lines) == 1
    forward = next(i for i, line in enumerate(lines) if "scale = h.mean().item()" in line)
    lines[forward] += "  # a comment typed"
    assert lint(lines) == 0
    lines.append("# the end")
    lines.append("def not_compiled(x):\n    return x.item()\n")  # nothing calls it
    assert lint(lines) == 0
    typing = lines[:]
    typing[forward] = typing[forward].replace("h.mean()", "h.mean(")  # in the middle of an edit
    before = len(runs)
    broken = linter.lint("\n".join(typing), "model.py")
    assert broken.findings == [] and broken.error is not None and len(runs) == before
    lines[forward] = lines[forward].replace("h.mean()", "h.sum()")  # not a call of the project's
    assert lint(lines) == 0
    mix = next(i for i, line in enumerate(lines) if "return self._mix(h, scale)" in line)
    lines[mix] = lines[mix].replace("self._mix(h, scale)", "self._mix(h, 0.5)")  # it passes a constant now
    assert lint(lines) == 1
    lines.insert(forward, "        pass")  # every later call site moves a line down
    assert lint(lines) == 1


def test_the_memo_sees_every_fact_apply_project_hands_a_function_with_its_lines_now():
    """The editor lints a buffer's definitions again when what the model says of them changes: a helper
    whose parameter varies between two calls in another file shows where, and an edit there moves them."""
    from fusionlint.analysis.project import ProjectIndex
    from fusionlint.incremental import _model_answer
    from fusionlint.project.model import Project

    helpers = "import torch\n\n\ndef scale(n, mode):\n    if mode == 'a':\n        return n\n    return n * 2\n"
    net = ("import torch.nn as nn\n\nfrom helpers import scale\n\n\nclass Net(nn.Module):\n"
           "    def forward(self, x):\n        a = scale(2, 'a')\n        return x * scale(a, 'b')\n")

    def answer(net_text: str):
        model = Project()
        model.name_index = ProjectIndex()
        for shown, text in (("helpers.py", helpers), ("net.py", net_text)):
            model.name_index.add_file(shown, text)
            model.add(shown, Path(shown), text)
        assert not model.function_facts("helpers.py", "scale").tensor_params  # (no tensor passed)
        return _model_answer(model, "helpers.py", "function", "scale")

    before, after = answer(net), answer(net.replace("        a = scale", "        # moved\n        a = scale"))
    assert "'b' at net.py:9, 'a' at net.py:8" in repr(before) and "'b' at net.py:10, 'a' at net.py:9" in repr(after)
    assert before != after
