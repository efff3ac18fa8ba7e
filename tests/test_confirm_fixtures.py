"""`fusionlint check fixtures/ --confirm=flagged --device cpu` confirms every bad fixture whose rule has a
CPU-observable effect, and reports nothing at all for the good fixtures.

Only the flagged modules (the bad fixtures) are run: that good.py neither breaks nor recompiles is
measured by tests/test_fixture_effects.py, and the safety net over unflagged modules by
tests/test_confirm_safety_net.py, so running the good fixtures here too would only compile them twice."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fusionlint.registry import all_rules
from fusionlint.rule import Effect
from tests.helpers import need
from tests.test_fixture_effects import _DIR_RE, fixture_dirs

ROOT = Path(__file__).resolve().parent.parent


def cpu_unobservable(path: Path) -> set:
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "CPU_UNOBSERVABLE" for t in node.targets):
            return set(ast.literal_eval(node.value))
    return set()


def cpu_observable(rule, bad: Path) -> set:
    effects = {Effect(e) for e in rule.effects} - {Effect.HOST_SYNC}
    effects -= {Effect(e) for e in cpu_unobservable(bad)}
    if rule.fix_applicability is None:
        effects.discard(Effect.EXTRA_KERNEL)  # needs the fixed variant to compare with
    return effects


@pytest.mark.slow
def test_check_fixtures_confirm_cpu(tmp_path):
    need("torch", "the confirm pass runs the fixtures under torch.compile")
    out = tmp_path / "confirm.json"
    # rules that are off by default but have a fixture (FL205) are selected on top of the defaults
    opt_in = sorted(
        code for code, rule in all_rules().items()
        if not rule.default_enabled and any(d.name.startswith(code + "_") for d in fixture_dirs())
    )
    proc = subprocess.run(
        [sys.executable, "-m", "fusionlint.cli", "check", "fixtures/", "--confirm=flagged", "--device", "cpu", "--jobs", "2",
         "--format", "json", "-o", str(out), *(a for code in opt_in for a in ("--extend-select", code)),
         # a hang guard, not a performance bound: a loaded 2-core machine compiles slowly
         "--confirm-timeout", "900",
         # measure now: a result cached by an earlier run in this checkout proves nothing new
         "--no-confirm-cache"],
        cwd=ROOT, capture_output=True, text=True, timeout=3600, env=dict(os.environ, PYTHONPATH=str(ROOT)),
    )
    assert proc.returncode == 1, proc.stderr[-3000:]
    doc = json.loads(out.read_text())
    rules = all_rules()
    problems = []
    for d in fixture_dirs():
        code = _DIR_RE.match(d.name).group(1)
        rel = lambda name: f"fixtures/{d.name}/{name}"
        good = [f for f in doc["findings"] if f["path"] == rel("good.py")]
        if good:
            problems.append(f"{d.name}: good.py reported {[(f['code'], f['line']) for f in good]}")
        mine = [f for f in doc["findings"] if f["path"] == rel("bad.py") and f["code"] == code]
        if not mine:
            problems.append(f"{d.name}: bad.py has no {code} finding")
            continue
        observable = cpu_observable(rules[code], d / "bad.py")
        for f in mine:
            conf = f.get("confirmation") or {}
            if observable and conf.get("status") != "confirmed":
                problems.append(f"{d.name}:{f['line']}: {conf.get('status')}: {conf.get('summary')}")
            elif not observable and conf.get("status") not in ("confirmed", "unconfirmed", "not-reproduced"):
                problems.append(f"{d.name}:{f['line']}: no confirmation")
    assert not problems, "\n".join(problems)
