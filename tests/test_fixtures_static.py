"""The static pass flags every rule's bad fixture with that rule, and not its good fixture."""

from __future__ import annotations

from pathlib import Path

import pytest

from fusionlint.analysis.project import ProjectIndex
from fusionlint.engine import Engine
from fusionlint.registry import all_rules

REPO = Path(__file__).resolve().parent.parent
RULES = all_rules()
DIRS = sorted(d for d in (REPO / "fixtures").iterdir() if d.is_dir() and d.name[:5] in RULES)


def _codes(path: Path) -> list[str]:
    text = path.read_text()
    project = ProjectIndex()
    project.add_file(path.name, text)
    findings, error = Engine(list(RULES.values()), project).lint_source(text, path.name)
    assert error is None, error
    return [f.code for f in findings]


def test_every_static_rule_has_a_fixture_pair():
    with_fixtures = {d.name[:5] for d in DIRS}
    missing = [code for code, rule in RULES.items() if rule.static and rule.effects and code not in with_fixtures]
    assert missing == []


@pytest.mark.parametrize("fixture", DIRS, ids=[d.name for d in DIRS])
def test_bad_is_flagged_and_good_is_not(fixture: Path):
    code = fixture.name[:5]
    assert code in _codes(fixture / "bad.py"), f"{code} does not flag {fixture.name}/bad.py"
    assert code not in _codes(fixture / "good.py"), f"{code} flags {fixture.name}/good.py"
