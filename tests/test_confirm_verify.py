"""`fusionlint check --fix --verify`: a fix is written only when it is verified on the installed torch."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from fusionlint.confirm.verify import judge
from fusionlint.rule import Effect
from tests.helpers import need

ROOT = Path(__file__).resolve().parent.parent


def _m(**kw) -> dict:
    base = {
        "device": "cpu", "eager_ok": True, "compiled_ok": True, "outputs_allclose": True, "inputs_allclose": True,
        "break_sites": [], "frame_skips": 0, "recompiles": 0, "recompile_limit_hit": False,
        "kernels_compiled": 3, "host_syncs_compiled": 0,
    }
    base.update(kw)
    return base


def _worker(before: dict, after: dict, allclose=True) -> dict:
    return {"ok": True, "measurement": before, "variants": {"fixed": {"measurement": after, "eager_allclose": allclose}}}


def test_judge_accepts_a_shrinking_effect():
    before = _m(break_sites=[["GB0124", "a.py", 3, "item"]], host_syncs_compiled=1)
    ok, why = judge(_worker(before, _m()), {Effect.GRAPH_BREAK, Effect.HOST_SYNC})
    assert ok, why
    assert "breaks 1 -> 0" in why and "outputs allclose" in why


def test_judge_rejects_changed_outputs_worse_costs_and_no_gain():
    before = _m(break_sites=[["GB0124", "a.py", 3, "item"]])
    ok, why = judge(_worker(before, _m(), allclose=False), {Effect.GRAPH_BREAK})
    assert not ok and "not equivalent" in why
    ok, why = judge(_worker(before, _m(kernels_compiled=5)), {Effect.GRAPH_BREAK})
    assert not ok and "kernels 3 -> 5" in why
    ok, why = judge(_worker(_m(), _m()), {Effect.EXTRA_KERNEL})
    assert not ok and "no measured improvement in kernels" in why
    ok, why = judge(_worker(before, _m(eager_ok=False, eager_error="RuntimeError: boom")), {Effect.GRAPH_BREAK})
    assert not ok and "the fixed module raises" in why
    ok, why = judge({"ok": False, "reason": "timed out after 5 s"}, {Effect.GRAPH_BREAK})
    assert not ok and "timed out" in why


def _fix_verify(tmp_path: Path, source: str):
    (tmp_path / "pyproject.toml").write_text('[tool.fusionlint]\nselect = ["FL301"]\n')
    target = tmp_path / "mod.py"
    target.write_text(source)
    proc = subprocess.run(
        [sys.executable, "-m", "fusionlint.cli", "check", "mod.py", "--fix", "--verify", "--device", "cpu",
         "--confirm-timeout", "900"],  # a hang guard: a loaded machine compiles slowly
        cwd=tmp_path, capture_output=True, text=True, timeout=900, env=dict(os.environ, PYTHONPATH=str(ROOT)),
    )
    return proc, target.read_text()


@pytest.mark.slow
def test_fix_verify_writes_a_verified_fix(tmp_path):
    need("torch", "--verify runs the module before and after the fix")
    source = (ROOT / "fixtures" / "FL301_view_after_permute" / "bad.py").read_text()
    proc, after = _fix_verify(tmp_path, source)
    assert "fix verified" in proc.stderr, proc.stderr[-2000:]
    assert "errors 2 -> 0" in proc.stderr  # eager and compiled both raised before
    assert ".reshape(b, -1)" in after and ".view(" not in after
    assert proc.returncode == 0, proc.stdout + proc.stderr[-2000:]


@pytest.mark.slow
def test_rejected_fix_is_not_written(tmp_path):
    """The runner asks the verifier before writing; a rejection leaves the file as it was."""
    need("torch", "the verifier checks the installed torch first")
    from fusionlint.config import Settings
    from fusionlint.confirm.verify import Verifier
    from fusionlint.runner import RunOptions, run

    source = (ROOT / "fixtures" / "FL301_view_after_permute" / "bad.py").read_text()
    target = tmp_path / "mod.py"
    target.write_text(source)
    settings = Settings(root=tmp_path, select=["FL301"])
    jobs = []

    def fake_worker(job, timeout, gpu=None):  # pretend the fixed module computes something else
        jobs.append(job)
        return _worker(_m(break_sites=[["GB0124", "m.py", 3, "x"]]), _m(), allclose=False)

    log: list = []
    verifier = Verifier(settings, device="cpu", log=log.append, run_worker=fake_worker)
    outcome = run([str(target)], settings, RunOptions(fix=True, verify_fix=verifier))
    (job,) = jobs
    assert job["target"] == "Model" and job["path"] == str(target.resolve())
    assert ".reshape(b, -1)" in job["variants"][0]["source"]  # the worker gets the fixed text
    assert target.read_text() == source and outcome.result.fixed == 0
    assert [f.code for f in outcome.result.findings] == ["FL301"]
    assert verifier.rejected and not verifier.verified and "not equivalent" in verifier.rejected[0]
    # equivalent, but the fixed module launches more kernels: rejected too
    verifier2 = Verifier(settings, device="cpu", log=log.append, run_worker=lambda job, timeout, gpu=None: _worker(
        _m(), _m(kernels_compiled=4), allclose=True))
    outcome = run([str(target)], settings, RunOptions(fix=True, verify_fix=verifier2))
    assert target.read_text() == source and "kernels 3 -> 4" in verifier2.rejected[0]
