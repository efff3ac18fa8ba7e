"""Every rule with a fix: fixing its bad fixture gives valid code that runs eagerly with the same
outputs (or, when the bad code raises, the outputs of the good fixture) and re-lints clean."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest

from click.testing import CliRunner

from fusionlint.cli import main
from fusionlint.registry import all_rules

from tests.helpers import need

torch = need("torch", "fixtures are run with the installed torch (pip install -r requirements-dev.txt)")

REPO = Path(__file__).resolve().parent.parent
RULES = all_rules()


def _fixable_fixture_dirs():
    """Fixture dirs whose bad.py gets a fix from its own rule. (A rule may offer fixes for some
    forms only: FL108 passes FL102/FL104 fixes through, but its `.item()` fixture has none.)"""
    from fusionlint.analysis.project import ProjectIndex
    from fusionlint.engine import Engine

    for code, rule in RULES.items():
        if rule.fix_applicability is None:
            continue
        for d in sorted((REPO / "fixtures").glob(f"{code}_*")):
            if not ((d / "bad.py").exists() and (d / "good.py").exists()):
                continue
            text = (d / "bad.py").read_text()
            findings, _ = Engine([rule], ProjectIndex()).lint_source(text, "bad.py")
            if any(f.fix is not None for f in findings):
                yield pytest.param(rule, d, id=d.name)


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _eager(module):
    torch.manual_seed(0)
    model = module.Model()
    model.eval()
    torch.manual_seed(1)
    args = module.example_inputs()
    with torch.no_grad():
        return model(*args)


@pytest.mark.parametrize("rule,fixture", list(_fixable_fixture_dirs()))
def test_fixed_fixture_runs_and_matches(rule, fixture, tmp_path):
    target = tmp_path / "bad.py"
    shutil.copy(fixture / "bad.py", target)
    before = target.read_text()
    result = CliRunner().invoke(main, ["check", str(target), "--select", rule.code, "--fix", "--unsafe-fixes"])
    after = target.read_text()
    assert after != before, f"{rule.code}: --fix changed nothing in {fixture.name}/bad.py\n{result.output}"
    assert result.exit_code == 0, f"{rule.code} findings remain after fixing:\n{result.output}"
    compile(after, str(target), "exec")  # valid Python
    fixed_out = _eager(_load(target, f"fixed_{fixture.name}"))
    try:
        reference = _eager(_load(fixture / "bad.py", f"bad_{fixture.name}"))
    except Exception:  # the bad code raises in eager (e.g. FL301): compare with the good fixture
        reference = _eager(_load(fixture / "good.py", f"good_{fixture.name}"))
    torch.testing.assert_close(fixed_out, reference)
