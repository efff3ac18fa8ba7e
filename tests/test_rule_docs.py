"""Every rule's docs give a usable one-sentence summary (SARIF shortDescription, listings)."""

from __future__ import annotations

import re

import pytest

from fusionlint.registry import all_rules
from fusionlint.rule import Rule, first_sentence

RULES = sorted(all_rules().values(), key=lambda r: r.code)


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.code)
def test_summary_is_the_first_sentence_of_what_it_does(rule: type[Rule]):
    summary = rule.summary()
    what = " ".join(rule.docs_section("What it does").split())
    assert what, f"{rule.code} has no '## What it does' section"
    # Prose, not a table row, heading, list item or code block.
    assert not summary.startswith(("|", "#", "`" * 3, "-", "*", ">")), summary
    assert "\n" not in summary and "`" * 3 not in summary
    assert summary[0].isupper(), summary
    assert summary.endswith("."), summary
    assert summary.count("`") % 2 == 0, f"unbalanced inline code: {summary}"
    # One sentence, taken from the start of "What it does" (a closing ":" becomes ".").
    assert what.startswith(summary[:-1]), (summary, what)
    assert not re.search(r"[.!?] [A-Z]", summary.replace("e.g. ", "").replace("i.e. ", "")), summary
    assert len(summary) < 400, summary


def test_first_sentence_ignores_dots_in_code_and_abbreviations():
    assert first_sentence("Flags `t.item()` calls, e.g. in loops. More here.") == (
        "Flags `t.item()` calls, e.g. in loops."
    )
    assert first_sentence("Flags these forms: a list follows") == "Flags these forms."
    assert first_sentence("No full stop at the end") == "No full stop at the end."


def test_summary_falls_back_to_the_message_without_docs():
    class Bare(Rule):
        code = "FL999"
        name = "bare"
        message = "a bare message"
        effects = ()
        docs = "## Example\n```python\nx.item()\n```\n"

    assert Bare.summary() == "a bare message"
