"""Every rule's VALID/INVALID examples are tests (Fixit style), and every rule is well formed."""

from __future__ import annotations

import pytest

from fusionlint.registry import all_rules
from fusionlint.rule import Applicability, Effect

from tests.helpers import fixed, lint

RULES = all_rules()
STATIC_RULES = {code: r for code, r in RULES.items() if getattr(r, "static", True)}


def _cases(kind: str):
    for code, rule in STATIC_RULES.items():
        for i, example in enumerate(getattr(rule, kind)):
            yield pytest.param(rule, example, id=f"{code}-{kind.lower()}-{i}")


@pytest.mark.parametrize("rule,source", list(_cases("VALID")))
def test_valid_example_has_no_finding(rule, source):
    findings = lint(source, [rule])
    assert findings == [], f"{rule.code} flagged a VALID example: {[(f.line, f.message) for f in findings]}"


@pytest.mark.parametrize("rule,example", list(_cases("INVALID")))
def test_invalid_example_is_flagged(rule, example):
    findings = lint(example.code, [rule])
    assert findings, f"{rule.code} missed an INVALID example:\n{example.code}"
    assert all(f.code == rule.code for f in findings)
    if example.line is not None:
        assert findings[0].line == example.line
    if example.count is not None:
        assert len(findings) == example.count
    if example.expected_fix is not None:
        assert any(f.fix is not None for f in findings), f"{rule.code}: expected a fix"
        result = fixed(example.code, [rule])
        assert result == example.expected_fix
        # idempotent: fixing the fixed text changes nothing
        assert fixed(result, [rule]) == result


@pytest.mark.parametrize("rule", list(RULES.values()), ids=list(RULES))
def test_rule_is_documented(rule):
    assert rule.effects is not None and all(isinstance(e, Effect) for e in rule.effects)
    docs = rule.docs
    for section in ("## What it does", "## Why is this bad?", "## Example", "## Use instead", "## Fix safety"):
        assert section in docs, f"{rule.code} docs lack {section!r}"
    if getattr(rule, "static", True):
        assert len(rule.VALID) >= 3, f"{rule.code} needs >= 3 VALID examples"
        assert len(rule.INVALID) >= 3, f"{rule.code} needs >= 3 INVALID examples"
    if rule.fix_applicability is not None:
        assert isinstance(rule.fix_applicability, Applicability)
        assert any(ex.expected_fix is not None for ex in rule.INVALID), f"{rule.code} offers a fix but shows none"
