"""docs/graph-break-coverage.md accounts for every graph-break id of the installed torch's registry.

Each id is covered by a rule's ``gb_ids`` or classified exactly once in docs/gb-classification.toml,
so a newer torch's new ids fail here until someone reads them. The registry is found and read
without importing torch (the static pass never imports it, and neither does this script).
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import need

ROOT = Path(__file__).resolve().parent.parent


def _script():
    spec = importlib.util.spec_from_file_location("gb_coverage", ROOT / "scripts" / "gb_coverage.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["gb_coverage"] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def gb():
    module = _script()
    if module.registry_path() is None:
        need("torch", "the graph-break registry ships with torch")
    return module


def test_every_registry_id_is_covered_or_classified(gb):
    registry = gb.load_registry(gb.registry_path())
    assert len(registry) > 400, "the registry should list hundreds of ids"
    classified, problems = gb.load_classification()
    rows, more = gb.coverage(registry, gb.rule_coverage(), classified)
    assert not problems + more, "\n".join(problems + more)
    assert {r.entry.gb_id for r in rows} == set(registry)
    assert {r.verdict for r in rows} <= {"covered", "visible", "not-visible"}


def test_coverage_page_is_up_to_date(gb):
    text, problems = gb.build()
    assert not problems
    assert (ROOT / "docs" / "graph-break-coverage.md").read_text(encoding="utf-8") == text, (
        "docs/graph-break-coverage.md is stale: run python scripts/gb_coverage.py"
    )


def test_new_id_shows_up_as_unclassified(gb, tmp_path):
    registry = tmp_path / "graph_break_registry.json"
    registry.write_text('{"GB9999": [{"Gb_type": "brand new break", "Explanation": "x", "Hints": []}]}')
    classified, _ = gb.load_classification()
    _rows, problems = gb.coverage(gb.load_registry(registry), {}, classified)
    assert any(p.startswith("GB9999 (brand new break) is unclassified") for p in problems)
    # ...and the ids of the real registry that this fake one lacks are reported as unknown
    assert any("classified but not in the registry" in p for p in problems)


def test_a_covered_id_must_not_stay_classified(gb, tmp_path):
    registry = tmp_path / "graph_break_registry.json"
    registry.write_text('{"GB0001": [{"Gb_type": "t", "Explanation": "", "Hints": []}]}')
    _rows, problems = gb.coverage(gb.load_registry(registry), {"GB0001": ["FL999 x"]}, {"GB0001": ("c", "visible", "r")})
    assert any("GB0001 is covered by FL999 x" in p for p in problems)


def test_building_the_page_does_not_import_torch(gb):
    code = (
        "import sys, importlib.util\n"
        f"spec = importlib.util.spec_from_file_location('g', {str(ROOT / 'scripts' / 'gb_coverage.py')!r})\n"
        "m = importlib.util.module_from_spec(spec); sys.modules['g'] = m; spec.loader.exec_module(m)\n"
        "text, problems = m.build()\n"
        "assert 'torch' not in sys.modules, 'torch imported'\n"
        "print(len(text))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_check_mode_reports_an_unreadable_registry(tmp_path):
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gb_coverage.py"), "--check", "--registry", str(tmp_path / "missing.json")],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 1
    assert "no graph-break registry at" in proc.stderr
