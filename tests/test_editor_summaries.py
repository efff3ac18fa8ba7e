"""An editor's summary of a text (``keep_units``: made one top-level definition at a time, and from an
earlier text's definitions where they are unchanged) says what a CLI run's summary of it says."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from fusionlint.project.summary import summarize

REPO = Path(__file__).resolve().parent.parent
FILES = sorted((REPO / "fixtures").rglob("*.py")) + sorted((REPO / "examples").rglob("*.py"))

LOGGED = '''import logging

import torch
from torch import nn

logger = logging.getLogger(__name__)


class Act(nn.Module):
    def forward(self, x):
        if not torch.compiler.is_compiling():
            return x
        logger.warning("compiling: the python version")
        return torch.relu(x)


def helper(x):
    logger.info("helper")
    return x * 2
'''


def _said(summary) -> tuple:
    """What a summary says, less what only an editor's keeps (its units, outline, shapes)."""
    return dataclasses.replace(summary, text_hash=0, units=None, outline=None, shapes=None)


def _same(text: str, path: str) -> None:
    run = summarize(text, path, "m", False)
    whole = summarize(text, path, "m", False, keep_units=True)
    assert (run is None) == (whole is None)
    if run is None:
        return
    assert _said(whole) == _said(run)
    # and made from the units of an earlier text (a line added at the end, then taken away)
    earlier = summarize(text + "\n\nx_unused = 1\n", path, "m", False, keep_units=True)
    again = summarize(text, path, "m", False, previous=earlier, keep_units=True)
    assert _said(again) == _said(run)


def test_a_logger_call_breaks_in_an_editor_summary_as_in_a_run():
    # `logger.warning(...)` in compiled code breaks the graph; the definitions an editor summarised one
    # at a time did not know the module's loggers, so its summaries had no break there
    _same(LOGGED, "logged.py")
    run = summarize(LOGGED, "logged.py", "m", False, keep_units=True)
    assert run.functions["Act.forward"].breaks and run.functions["helper"].breaks


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(REPO)))
def test_an_editor_summary_is_a_run_summary(path):
    _same(path.read_text(), str(path.relative_to(REPO)))
