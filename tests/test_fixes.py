"""Applying fixes: overlap handling, rounds, idempotence, and never producing invalid Python."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest

from fusionlint.config import Settings
from fusionlint.fixes import MAX_ROUNDS, apply_edits, fix_source
from fusionlint.rule import Applicability, Edit, Effect, Finding, Fix, Severity
from fusionlint.runner import RunOptions, run


def finding(line, col, end_col, content, applicability=Applicability.SAFE, code="FL301"):
    edit = Edit(line, col, line, end_col, content)
    return Finding("f.py", line, col, line, end_col, code, "x", "m", (Effect.RUNTIME_ERROR,), Severity.ERROR,
                   fix=Fix(applicability, (edit,)))


def test_apply_edits_skips_overlaps_and_keeps_the_rest():
    text = "abcdef\n"
    new, count = apply_edits(text, [(Edit(1, 1, 1, 3, "X"),), (Edit(1, 2, 1, 4, "Y"),), (Edit(1, 5, 1, 6, "Z"),)])
    assert (new, count) == ("XcdZf\n", 2)


def test_multi_edit_fix_is_all_or_nothing():
    text = "abcdef\n"
    fixes = [(Edit(1, 3, 1, 4, "1"),), (Edit(1, 1, 1, 2, "A"), Edit(1, 3, 1, 4, "C"))]
    assert apply_edits(text, fixes) == ("ab1def\n", 1)


def test_overlapping_fix_is_retried_next_round():
    # two fixes on one span: the second is applied against the text the first produced
    source = "x = aaa\n"
    calls = []

    def lint(text):
        calls.append(text)
        if "aaa" in text:
            return [finding(1, 5, 8, "bbb"), finding(1, 5, 8, "ccc")]
        if "bbb" in text:
            return [finding(1, 5, 8, "ddd")]
        return []

    out = fix_source(source, lint)
    assert out.source == "x = ddd\n" and out.applied == 2 and out.findings == []


def test_unsafe_fix_needs_opt_in():
    lint = lambda text: [finding(1, 5, 8, "bbb", Applicability.UNSAFE)] if "aaa" in text else []  # noqa: E731
    assert fix_source("x = aaa\n", lint).source == "x = aaa\n"
    assert fix_source("x = aaa\n", lint, unsafe=True).source == "x = bbb\n"


def test_fix_producing_invalid_python_is_rejected():
    lint = lambda text: [finding(1, 5, 8, "(((")]  # noqa: E731
    out = fix_source("x = aaa\n", lint)
    assert out.source == "x = aaa\n" and out.applied == 0
    assert out.error and "invalid Python" in out.error


def test_fix_loop_is_bounded():
    counter = {"n": 0}

    def lint(text):  # a fix that always finds something new to change
        counter["n"] += 1
        return [finding(1, 5, 6, str(counter["n"] % 10))]

    out = fix_source("x = 0\n", lint)
    assert counter["n"] <= MAX_ROUNDS + 1
    cst.parse_module(out.source)


def test_runner_never_writes_invalid_python(tmp_path: Path, monkeypatch):
    target = tmp_path / "m.py"
    original = "import torch\nfrom torch import nn\nclass M(nn.Module):\n    def forward(self, x):\n        return x.t().view(-1)\n"
    target.write_text(original)
    import rules.FL301_view_after_permute as fl301  # noqa: F401  (source checkout import path)
    from fusionlint.analysis import context

    real_replace = context.RuleContext.replace
    monkeypatch.setattr(context.RuleContext, "replace", staticmethod(lambda node, text: real_replace(node, "re shape(")))
    outcome = run([str(target)], Settings(root=tmp_path, select=["FL301"]), RunOptions(fix=True))
    assert target.read_text() == original
    assert any("invalid Python" in e.message for e in outcome.result.errors)
    assert [f.code for f in outcome.result.findings] == ["FL301"]
