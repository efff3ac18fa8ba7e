"""The confirm pass end to end: workers, isolation, examples, matching, FL900, cache, CLI gates."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fusionlint.config import Settings
from fusionlint.confirm import orchestrate as orch
from fusionlint.runner import run
from tests.helpers import need

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "confirm_data"


@pytest.fixture(scope="module")
def torch_installed():
    need("torch", "the confirm pass runs modules under torch.compile")


def _settings(root: Path, select=("FL101",), **confirm) -> Settings:
    return Settings(root=root, select=list(select), confirm=dict(confirm))


# A worker's time limit in these tests only guards against a hang of the test itself: a compile on
# a loaded 2-core machine can take minutes, and a test must not fail because the machine is busy.
HANG_GUARD_S = 900


def _confirm(paths, settings, **kw):
    outcome = run([str(p) for p in paths], settings)
    kw.setdefault("device", "cpu")
    kw.setdefault("use_cache", False)
    kw.setdefault("timeout", HANG_GUARD_S)
    # these tests are about the orchestration (workers, examples, cache, limits), and Dynamo alone
    # shows the breaks they check: inductor's C++ compiles would only cost minutes of CI
    kw.setdefault("backend", "aot_eager")
    results = orch.confirm_findings(outcome.result, settings=settings, **kw)
    return outcome.result, results


def _by_file(result) -> dict:
    out: dict = {}
    for f in result.findings:
        out.setdefault(Path(f.path).name, []).append(f)
    return out


def test_import_does_not_import_torch():
    code = (
        "import sys, fusionlint.confirm, fusionlint.confirm.cli, fusionlint.confirm.examples, "
        "fusionlint.confirm.measure, fusionlint.confirm.match, fusionlint.confirm.verify, fusionlint.cli\n"
        "assert 'torch' not in sys.modules, 'torch imported'\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_confirm_without_torch_exits_2(tmp_path):
    # sys.modules["torch"] = None makes torch unimportable (find_spec returns None) in that process
    code = (
        "import sys; sys.modules['torch'] = None\n"
        "from fusionlint.cli import main\n"
        f"main(['check', {str(DATA / 'ok.py')!r}, '--confirm', '--select', 'FL101'])\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 2, proc.stderr
    assert "install fusionlint[confirm]" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_confirm_on_gpu_without_cuda_exits_2(monkeypatch):
    from click.testing import CliRunner

    from fusionlint.cli import main

    monkeypatch.setattr(orch, "probe_torch", lambda timeout=120.0: {"version": "2.13.0", "cuda": False, "devices": []})
    res = CliRunner().invoke(main, ["check", str(DATA / "ok.py"), "--select", "FL101", "--confirm-on-gpu"])
    assert res.exit_code == 2, res.output
    assert "--confirm --device cpu" in res.output
    res = CliRunner().invoke(main, ["check", str(DATA / "ok.py"), "--select", "FL101", "--confirm", "--device", "cuda"])
    assert res.exit_code == 2 and "--device cpu" in res.output


@pytest.mark.parametrize(
    "args,message",
    [
        (["--verify"], "--verify needs --fix"),
        (["--shard", "1/2"], "--shard needs --confirm"),
        (["--confirm", "--shard", "3/2"], "need 1 <= K <= N"),
        (["--confirm", "--shard", "x"], "expected K/N"),
        (["--report", "r.html"], "--report needs --confirm"),
        (["--confirm", "--jobs", "0"], "--jobs must be at least 1"),
        (["--confirm", "--device", "tpu"], "unknown device"),
    ],
)
def test_bad_confirm_options_exit_2(args, message, monkeypatch):
    from click.testing import CliRunner

    from fusionlint.cli import main

    monkeypatch.setattr(orch, "probe_torch", lambda timeout=120.0: {"version": "2.13.0", "cuda": False, "devices": []})
    res = CliRunner().invoke(main, ["check", str(DATA / "ok.py"), "--select", "FL101", *args])
    assert res.exit_code == 2, res.output
    assert message in res.output
    assert "Traceback" not in res.output


@pytest.mark.slow
def test_raise_hang_oom_end_unconfirmed_and_run_continues(torch_installed, monkeypatch):
    files = [DATA / n for n in ("hang.py", "ok.py", "oom.py", "raises.py")]
    settings = _settings(ROOT, **{"memory-mb": 2048})
    # hang.py sleeps forever, so whatever its limit, it times out: give it a short one, and the
    # modules that do finish a generous one, so that the result never depends on the machine's load.
    # Modules run on the pooled workers (fusionlint.confirm.pool), which take the limit per job.
    from fusionlint.confirm import pool

    real_run = pool.WorkerProcess.run

    def run(self, job, timeout):
        return real_run(self, job, 4 if job["path"].endswith("hang.py") else timeout)

    monkeypatch.setattr(pool.WorkerProcess, "run", run)
    result, results = _confirm(files, settings, jobs=2)
    found = _by_file(result)
    assert set(found) == {"hang.py", "ok.py", "oom.py", "raises.py"}
    conf = {name: fs[0].confirmation for name, fs in found.items()}
    assert conf["ok.py"]["status"] == "confirmed", conf["ok.py"]
    assert conf["ok.py"]["breaks"] and conf["ok.py"]["breaks"][0]["gb"] == "GB0124"
    assert conf["hang.py"]["status"] == "unconfirmed"
    assert "timed out after 4 s" in conf["hang.py"]["reason"]
    assert conf["oom.py"]["status"] == "unconfirmed"
    assert "out of memory" in conf["oom.py"]["reason"], conf["oom.py"]
    assert conf["raises.py"]["status"] == "unconfirmed"
    assert "deliberately broken constructor" in conf["raises.py"]["reason"]


@pytest.mark.slow
def test_unflagged_break_becomes_fl900_and_matching_is_by_line(torch_installed):
    settings = _settings(ROOT, select=("FL101", "FL900"))
    result, results = _confirm([DATA / "unflagged.py"], settings)
    by_code = {f.code: f for f in result.findings}
    assert set(by_code) == {"FL101", "FL900"}, [(f.code, f.line) for f in result.findings]
    fl900 = by_code["FL900"]
    assert fl900.line == 13 and fl900.name == "runtime-graph-break"
    assert fl900.confirmation["status"] == "confirmed"
    assert "GB0025" in fl900.message
    assert by_code["FL101"].line == 14 and by_code["FL101"].confirmation["status"] == "confirmed"
    # deselected FL900: the same measured break is not reported
    only_fl101 = _settings(ROOT, select=("FL101",))
    again = run([str(DATA / "unflagged.py")], only_fl101).result
    orch.apply_results(again, results, ROOT, only_fl101)
    assert [f.code for f in again.findings] == ["FL101"]


@pytest.mark.slow
def test_examples_inferred_and_missing(torch_installed):
    result, results = _confirm([DATA / "inferred.py"], _settings(ROOT))
    conf = {f.context.split(".")[0]: f.confirmation for f in result.findings}
    assert conf["Net"]["status"] == "confirmed"
    assert conf["Net"]["example"]["kind"] == "inferred"
    assert "Linear(in_features=6)" in conf["Net"]["example"]["detail"]
    assert conf["NeedsArgs"]["status"] == "unconfirmed"
    assert "needs arguments (dim)" in conf["NeedsArgs"]["reason"]
    assert "[tool.fusionlint.examples]" in conf["NeedsArgs"]["hint"]


@pytest.mark.slow
def test_registered_example_and_cache(torch_installed, tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "blocks.py").write_text(
        "import torch\nfrom torch import nn\n\n\n"
        "class Block(nn.Module):\n"
        "    def __init__(self, dim):\n        super().__init__()\n        self.lin = nn.Linear(dim, dim)\n\n"
        "    def forward(self, x):\n        h = self.lin(x)\n        return h * h.mean().item()\n"
    )
    (pkg / "examples.py").write_text(
        "import torch\nfrom .blocks import Block\n\n\n"
        "def make_block():\n    return Block(5), (torch.randn(3, 5),)\n"
    )
    settings = _settings(tmp_path)
    settings.examples = {"pkg.blocks:Block": "pkg.examples:make_block"}
    result, results = _confirm([pkg], settings, use_cache=True)
    (f,) = result.findings
    assert f.confirmation["status"] == "confirmed", f.confirmation
    assert f.confirmation["example"] == {"kind": "registered", "detail": "pkg.examples:make_block"}
    assert not results[0].cached
    assert (tmp_path / ".fusionlint_cache" / "confirm").is_dir()
    # second run: same sources -> served from the cache with the same evidence
    again, results2 = _confirm([pkg], settings, use_cache=True)
    assert results2[0].cached
    assert again.findings[0].confirmation["breaks"] == f.confirmation["breaks"]
    # an edit to the example invalidates the cache entry
    (pkg / "examples.py").write_text((pkg / "examples.py").read_text().replace("(3, 5)", "(4, 5)"))
    _, results3 = _confirm([pkg], settings, use_cache=True)
    assert not results3[0].cached


def test_shards_are_disjoint_and_deterministic():
    from fusionlint.rule import Effect, Finding, Severity

    findings = [
        Finding(f"m{i % 5}.py", i + 1, 1, i + 1, 2, "FL101", "tensor-to-python", "x", (Effect.GRAPH_BREAK,), Severity.WARNING, context=f"C{i % 3}.forward")
        for i in range(30)
    ]
    units = orch.collect_units(findings, ROOT)
    assert len(units) == 15
    shards = [orch.shard_units(units, (k, 4)) for k in range(1, 5)]
    labels = [[u.label for u in s] for s in shards]
    assert sorted(sum(labels, [])) == sorted(u.label for u in units)
    assert len(set(sum(labels, []))) == len(units)
    reversed_units = orch.collect_units(list(reversed(findings)), ROOT)
    assert [[u.label for u in orch.shard_units(reversed_units, (k, 4))] for k in range(1, 5)] == labels


def test_merge_prefers_confirmed(tmp_path):
    from click.testing import CliRunner

    from fusionlint.cli import main

    base = {"path": "a.py", "line": 3, "column": 5, "end_line": 3, "end_column": 9, "code": "FL101"}
    other = dict(base, line=7, end_line=7)
    a = {"version": "0.1.0", "schema_version": 1, "findings": [dict(base, confirmation={"status": "confirmed"}), dict(other)], "errors": []}
    b = {"version": "0.1.0", "schema_version": 1, "findings": [dict(base), dict(other, confirmation={"status": "not-reproduced"})], "errors": []}
    (tmp_path / "a.json").write_text(json.dumps(a))
    (tmp_path / "b.json").write_text(json.dumps(b))
    res = CliRunner().invoke(main, ["merge", str(tmp_path / "a.json"), str(tmp_path / "b.json")])
    assert res.exit_code == 1, res.output
    merged = json.loads(res.output)
    assert [f["confirmation"]["status"] for f in merged["findings"]] == ["confirmed", "not-reproduced"]
    (tmp_path / "bad.json").write_text("{not json")
    res = CliRunner().invoke(main, ["merge", str(tmp_path / "bad.json")])
    assert res.exit_code == 2 and "not JSON" in res.output


@pytest.mark.slow
def test_cli_confirm_shards_merge(torch_installed, tmp_path):
    """Two shards of a CLI run, merged, confirm what one run confirms."""
    for name in ("ok.py", "inferred.py"):
        shutil.copy(DATA / name, tmp_path / name)
    (tmp_path / "pyproject.toml").write_text('[tool.fusionlint]\nselect = ["FL101"]\n')
    outs = []
    for k in (1, 2):
        out = tmp_path / f"s{k}.json"
        proc = subprocess.run(
            [sys.executable, "-m", "fusionlint.cli", "check", ".", "--confirm", "--device", "cpu", "--shard", f"{k}/2",
             "--format", "json", "-o", str(out), "--confirm-timeout", str(HANG_GUARD_S),
             "--confirm-backend", "aot_eager"],
            cwd=tmp_path, capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=600,
        )
        assert proc.returncode == 1, proc.stderr
        outs.append(json.loads(out.read_text()))
    confirmed = [[f for f in o["findings"] if f.get("confirmation")] for o in outs]
    assert all(confirmed) and len(confirmed[0]) + len(confirmed[1]) == 3
    merged = orch.merge_documents(outs)
    assert len(merged["findings"]) == 3
    status = {(f["path"], f["context"]): f["confirmation"]["status"] for f in merged["findings"]}
    assert status == {
        ("inferred.py", "NeedsArgs.forward"): "unconfirmed",
        ("inferred.py", "Net.forward"): "confirmed",
        ("ok.py", "Model.forward"): "confirmed",
    }


def test_matching_rules_without_torch(tmp_path):
    from fusionlint.confirm import match
    from fusionlint.rule import Effect, Finding, Severity

    src = str(tmp_path / "m.py")

    def finding(line, *effects):
        return Finding("m.py", line, 1, line, 9, "FL101", "x", "x", tuple(effects), Severity.WARNING, context="Model.forward")

    m = {
        "device": "cpu", "eager_ok": True, "compiled_ok": True, "outputs_allclose": True, "inputs_allclose": True,
        "break_sites": [["GB0124", src, 7, "item"]], "recompiles": 1, "recompile_limit_hit": False,
        "compiles_per_call": [2, 1], "kernels_compiled": 4, "host_syncs_compiled": 1, "compiled_regions": 2,
    }
    v = match.verdicts(finding(7, Effect.GRAPH_BREAK, Effect.HOST_SYNC), m, tmp_path)
    assert v["graph-break"]["verdict"] == "confirmed"
    assert v["host-sync"]["verdict"] == "unmeasurable" and "not measurable on CPU" in v["host-sync"]["evidence"]
    assert match.verdicts(finding(8, Effect.GRAPH_BREAK), m, tmp_path)["graph-break"]["verdict"] == "not-reproduced"
    # one benign recompile (automatic dynamic) is not a recompile finding; the limit is
    assert match.verdicts(finding(3, Effect.RECOMPILE), m, tmp_path)["recompile"]["verdict"] == "not-reproduced"
    # ... unless its failed guard was read on the finding's line: a train/eval switch recompiles once
    mode = dict(m, recompile_events=[{"guard": "self.training == True", "frames": [[src, 3, "forward"]],
                                      "function": [src, 2, "forward"]}])
    ev = match.verdicts(finding(3, Effect.RECOMPILE), mode, tmp_path)["recompile"]
    assert ev["verdict"] == "confirmed" and "self.training == True" in ev["evidence"]
    assert match.verdicts(finding(4, Effect.RECOMPILE), mode, tmp_path)["recompile"]["verdict"] == "not-reproduced"
    hit = dict(m, recompiles=8, recompile_limit_hit=True, compiled_regions=0)
    ev = match.verdicts(finding(3, Effect.RECOMPILE), hit, tmp_path)["recompile"]
    assert ev["verdict"] == "confirmed" and "then eager" in ev["evidence"]
    # extra kernels need the fixed variant
    assert match.verdicts(finding(3, Effect.EXTRA_KERNEL), m, tmp_path)["extra-kernel"]["verdict"] == "unmeasurable"
    fixed = dict(m, kernels_compiled=3)
    assert match.verdicts(finding(3, Effect.EXTRA_KERNEL), m, tmp_path, fixed)["extra-kernel"]["verdict"] == "confirmed"
    # CUDA syncs are measured
    cuda = dict(m, device="cuda", sync_detail={"compiled": {"sync_debug_warnings": 1, "dtoh_copies": 1}})
    assert match.verdicts(finding(7, Effect.HOST_SYNC), cuda, tmp_path)["host-sync"]["verdict"] == "confirmed"
    assert match.verdicts(finding(7, Effect.HOST_SYNC), dict(cuda, host_syncs_compiled=0), tmp_path)["host-sync"]["verdict"] == "not-reproduced"
    # eager raises while compiled runs: divergence; both agree: not reproduced
    div = dict(m, eager_ok=False, eager_error="RuntimeError: overlap")
    assert match.verdicts(finding(3, Effect.SILENT_DIVERGENCE), div, tmp_path)["silent-divergence"]["verdict"] == "confirmed"
    assert match.verdicts(finding(3, Effect.SILENT_DIVERGENCE), m, tmp_path)["silent-divergence"]["verdict"] == "not-reproduced"
    assert match.status_of({"a": {"verdict": "unmeasurable", "evidence": "why"}}) == ("unconfirmed", "why")


def test_mode_switch_exercise_calls_in_the_other_mode_and_restores_it():
    from fusionlint.confirm.examples import mode_switch_exercise

    class Model:
        training = True

        def train(self, mode=True):
            self.training = mode

    model, modes = Model(), []
    exercise = mode_switch_exercise(lambda: (1,))
    exercise(model, lambda *a: modes.append(model.training))
    assert modes == [True, True, False, True] and model.training is True
    # after the calls of another exercise (the batch sweep) when there is one
    before = []
    mode_switch_exercise(lambda: (1,), before=lambda m, call: before.append("swept"))(model, lambda *a: modes.append(model.training))
    assert before == ["swept"] and modes[4:] == [False, True]


def test_only_rules_that_ask_for_it_get_the_mode_switch():
    from fusionlint.confirm.orchestrate import _wants_mode_switch
    from fusionlint.rule import Effect, Finding, Severity

    def finding(code):
        return Finding("m.py", 3, 1, 3, 9, code, "x", "x", (Effect.RECOMPILE,), Severity.WARNING)

    assert _wants_mode_switch([finding("FL201"), finding("FL205")])
    assert not _wants_mode_switch([finding("FL201"), finding("FL204")])


def test_auto_backend_uses_inductor_only_where_the_claim_needs_its_code():
    from fusionlint.confirm.orchestrate import auto_backend
    from fusionlint.rule import Effect

    assert auto_backend([Effect.GRAPH_BREAK, Effect.RECOMPILE], "cpu") == "aot_eager"
    assert auto_backend([Effect.GRAPH_BREAK, Effect.RECOMPILE], "cuda") == "aot_eager"
    # a CPU sync is a sync-prone op, run alike by aot_eager (tests/test_fixture_effects.py measures
    # FL101-FL103 that way); CUDA's DtoH copies inside generated code need inductor
    assert auto_backend([Effect.GRAPH_BREAK, Effect.HOST_SYNC], "cpu") == "aot_eager"
    assert auto_backend([Effect.GRAPH_BREAK, Effect.HOST_SYNC], "cuda:0") == "inductor"
    for effect in (Effect.EXTRA_KERNEL, Effect.SILENT_DIVERGENCE, Effect.RUNTIME_ERROR):
        assert auto_backend([effect], "cpu") == auto_backend([effect], "cuda") == "inductor"


def test_confirm_jobs_default_follows_the_environment(monkeypatch):
    from fusionlint.confirm.orchestrate import JOBS_ENV, ConfirmError, default_cpu_jobs

    monkeypatch.setenv(JOBS_ENV, "3")
    assert default_cpu_jobs() == 3
    monkeypatch.delenv(JOBS_ENV)
    assert 1 <= default_cpu_jobs() <= (os.cpu_count() or 1)
    for bad in ("0", "two", "-1"):
        monkeypatch.setenv(JOBS_ENV, bad)
        with pytest.raises(ConfirmError, match="FUSIONLINT_CONFIRM_JOBS"):
            default_cpu_jobs()


def test_a_bad_confirm_jobs_variable_is_a_usage_error_not_a_traceback(tmp_path):
    need("torch", "the confirm pass needs torch installed to start")
    (tmp_path / "m.py").write_text("import torch\n\nclass M(torch.nn.Module):\n    def forward(self, x):\n        return x.item()\n")
    proc = subprocess.run(
        [sys.executable, "-m", "fusionlint.cli", "check", "m.py", "--confirm", "--device", "cpu"],
        cwd=tmp_path, capture_output=True, text=True, env=dict(os.environ, FUSIONLINT_CONFIRM_JOBS="zero", PYTHONPATH=str(ROOT)),
    )
    assert proc.returncode == 2, proc.stderr
    assert "FUSIONLINT_CONFIRM_JOBS='zero'" in proc.stderr and "Traceback" not in proc.stderr


def test_workers_share_the_cores_unless_the_machine_is_shared(monkeypatch):
    from fusionlint.confirm.orchestrate import JOBS_ENV, worker_threads

    monkeypatch.delenv(JOBS_ENV, raising=False)
    cores = os.cpu_count() or 1
    assert worker_threads("cpu", 1) == cores and worker_threads("cpu", cores) == 1
    assert worker_threads("cuda", 1) == 1
    monkeypatch.setenv(JOBS_ENV, "1")  # others use the other cores: one thread (one compile thread)
    assert worker_threads("cpu", 1) == 1
