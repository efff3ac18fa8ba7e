"""The confirm pass as a safety net: it runs every module that has an example (flagged or not),
on pooled workers, and reports the breaks and recompiles the static pass missed at their line.

The project in ``tests/confirm_data/net`` has no static finding at all: ``Gate`` breaks in a helper
of another file (``if x.abs().max() > 10``), ``Solver`` calls ``torch.linalg.lstsq`` in a helper,
``Annealed`` recompiles because a helper changes a float attribute; all three are registered in
its ``[tool.fusionlint.examples]``.
"""

from __future__ import annotations

import getpass
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from tests.helpers import need

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "confirm_data"


def _cli(args: list[str], cwd: Path, timeout: float = 900, env: dict | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT), **(env or {}))
    env.pop("FORCE_COLOR", None)
    return subprocess.run(
        [sys.executable, "-m", "fusionlint.cli", "check", *args], cwd=cwd, capture_output=True, text=True,
        timeout=timeout, env=env,
    )


def _line_of(path: Path, text: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


@pytest.fixture(scope="module")
def net_project(tmp_path_factory) -> Path:
    need("torch", "the confirm pass runs modules under torch.compile")
    project = tmp_path_factory.mktemp("net") / "proj"
    shutil.copytree(DATA / "net", project, ignore=shutil.ignore_patterns("__pycache__"))
    return project


@pytest.fixture(scope="module")
def net_run(net_project) -> dict:
    """One `check models --confirm --device cpu` of the project, shared by the tests below."""
    static = _cli(["models"], net_project)
    assert static.returncode == 0 and "All checks passed" in static.stdout, static.stdout
    proc = _cli(["models", "--confirm", "--device", "cpu", "--jobs", "2", "--format", "json"], net_project)
    assert proc.returncode == 1, proc.stderr[-3000:]
    return {"doc": json.loads(proc.stdout), "stderr": proc.stderr}


def test_unflagged_modules_run_and_each_break_and_recompile_is_reported_at_its_line(net_project, net_run):
    helpers = net_project / "models" / "helpers.py"
    found = {(f["path"], f["line"], f["code"]) for f in net_run["doc"]["findings"]}
    assert found == {
        ("models/helpers.py", _line_of(helpers, "if x.abs().max() > 10"), "FL900"),
        ("models/helpers.py", _line_of(helpers, "torch.linalg.lstsq"), "FL900"),
        ("models/helpers.py", _line_of(helpers, "module.temperature = max("), "FL902"),
    }
    for label in ("Gate", "Solver", "Annealed"):
        assert f"confirm models/blocks.py::{label}: ok" in net_run["stderr"]


def test_findings_carry_the_chain_of_user_frames_and_the_failing_guard(net_project, net_run):
    blocks = net_project / "models" / "blocks.py"
    by_code = {}
    for f in net_run["doc"]["findings"]:
        by_code.setdefault(f["code"], []).append(f)
    gate = next(f for f in by_code["FL900"] if "GB0170" in f["message"])
    frames = gate["confirmation"]["frames"]
    assert [(fr["path"], fr["function"]) for fr in frames] == [
        ("models/blocks.py", "forward"), ("models/helpers.py", "soft_limit"),
    ]
    assert frames[0]["line"] == _line_of(blocks, "h = soft_limit(h)")
    (recompile,) = by_code["FL902"]
    assert recompile["name"] == "runtime-recompile"
    assert recompile["confirmation"]["guards"][0] == "self.temperature == 4.0"
    assert "self.temperature == 4.0" in recompile["message"]
    assert recompile["confirmation"]["frames"][0]["line"] == _line_of(blocks, "t = anneal(self)")


def test_confirm_flagged_runs_only_flagged_modules(net_project):
    proc = _cli(["models", "--confirm=flagged", "--device", "cpu", "--no-confirm-cache"], net_project, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "confirm " not in proc.stderr and "All checks passed" in proc.stdout


def test_a_second_run_is_served_from_the_cache_until_a_helper_changes(net_project, net_run):
    again = _cli(["models", "--confirm", "--device", "cpu", "--format", "json"], net_project)
    assert again.stderr.count("(cached)") == 3, again.stderr
    assert json.loads(again.stdout)["findings"] == net_run["doc"]["findings"]
    helpers = net_project / "models" / "helpers.py"
    original = helpers.read_text()
    try:
        helpers.write_text(original.replace("if x.abs().max() > 10:", "if False:"))
        edited = _cli(["models", "--confirm", "--device", "cpu", "--format", "json"], net_project)
        # every module imports helpers.py: none may be served from the cache
        assert "(cached)" not in edited.stderr, edited.stderr
        codes = sorted(f["code"] for f in json.loads(edited.stdout)["findings"])
        assert codes == ["FL900", "FL902"]
    finally:
        helpers.write_text(original)


def test_module_failing_because_of_fl301_is_confirmed_with_its_safe_fix(tmp_path):
    need("torch", "the confirm pass runs modules under torch.compile")
    shutil.copy(DATA / "permute_view.py", tmp_path / "permute_view.py")
    (tmp_path / "pyproject.toml").write_text('[tool.fusionlint]\nselect = ["FL101", "FL301"]\n')
    proc = _cli(["permute_view.py", "--confirm", "--device", "cpu", "--format", "json"], tmp_path, timeout=600)
    assert proc.returncode == 1, proc.stderr
    conf = {f["code"]: f["confirmation"] for f in json.loads(proc.stdout)["findings"]}
    assert conf["FL301"]["status"] == "confirmed" and "eager raises" in conf["FL301"]["summary"]
    assert conf["FL101"]["status"] == "confirmed", conf["FL101"]
    assert "fails because of FL301 at line 8; confirmed with its safe fix applied in memory" in conf["FL101"]["summary"]
    assert conf["FL101"]["breaks"][0]["line"] == 9
    assert (tmp_path / "permute_view.py").read_text() == (DATA / "permute_view.py").read_text()


def test_confirmed_only_hides_not_reproduced_and_sets_the_exit_code(tmp_path):
    need("torch", "the confirm pass runs modules under torch.compile")
    # A finding that claims a graph break on a line that compiles in one graph: not reproduced.
    (tmp_path / "m.py").write_text(textwrap.dedent("""\
        import torch
        from torch import nn


        class Model(nn.Module):
            def forward(self, x):
                y = x + 1
                y = y * 3
                return y.sum(dim=0) * 2


        def example_inputs():
            return (torch.randn(2, 4),)
    """))
    from fusionlint.confirm import cli as confirm_cli
    from fusionlint.rule import Effect, Finding, RunResult, Severity

    shown = Finding("m.py", 9, 16, 9, 28, "FL101", "x", "x", (Effect.GRAPH_BREAK,), Severity.WARNING, context="Model.forward")
    result = RunResult(findings=[shown], paths=[str(tmp_path / "m.py")])
    from fusionlint.config import Settings

    gate = confirm_cli.ConfirmCLI(
        {"confirm": True, "confirm_device": "cpu", "confirmed_only": True, "confirm_no_cache": True},
        fix=False, echo=lambda line: None,
    )
    gate.run(result, Settings(root=tmp_path, select=["FL101"]))
    assert result.findings == []  # measured: no break at line 9, so not shown
    assert shown.confirmation["status"] == "not-reproduced"


# ---------------------------------------------------------------------------- long-lived workers


@pytest.mark.slow
@pytest.mark.parametrize("forked", [False, True], ids=["fresh-interpreter", "forked-from-template"])
def test_one_worker_runs_many_modules_is_recycled_after_n_and_replaced_after_a_crash(forked):
    # one test for the three life-cycle rules, for both ways a worker process starts: a fresh
    # interpreter imports torch again (seconds each), a fork of the template has it already
    need("torch", "the confirm pass runs modules under torch.compile")
    from fusionlint.confirm import orchestrate as orch
    from fusionlint.confirm.pool import WorkerProcess
    from fusionlint.confirm.template import ForkedWorker, Templates

    def job(name: str) -> dict:
        unit = orch.Unit(path=name, abs_path=str(DATA / name), target="Model")
        return orch.build_job(unit, root=ROOT, device="cpu", examples={}, user_files=[], timing_runs=0,
                              timeline=False, memory_mb=0, threads=1, variants=[], backend="eager")

    templates = Templates() if forked else None
    worker = WorkerProcess(orch._worker_env(None), max_jobs=2, templates=templates)
    try:
        first = worker.run(job("ok.py"), timeout=300)
        assert isinstance(worker.proc, ForkedWorker) is forked
        second = worker.run(job("unflagged.py"), timeout=300)
        assert first["ok"] and second["ok"], (first, second)
        # torch imported once for both; after max_jobs=2 jobs the process is ended (recycled)
        assert worker.started == 1 and worker.jobs_done == 2 and worker.proc is None
        assert [s[2] for s in second["measurement"]["break_sites"]] == [13, 14]
        crashed = worker.run(job("segfault.py"), timeout=300)
        assert worker.started == 2  # a fresh process for the job after the recycled one
        assert crashed["ok"] is False and "SIGSEGV" in crashed["reason"], crashed
        exited = worker.run(job("exits.py"), timeout=300)
        assert exited["ok"] is False and "exited with status 3" in exited["reason"], exited
        assert worker.started == 3  # a fresh process after the crash, too
        # a fresh interpreter imports torch again (5.5 CPU s here): one more job after a death, same
        # results as the first, is asked of the forked worker only
        if forked:
            after = worker.run(job("ok.py"), timeout=300)
            assert after["ok"] and worker.started == 4  # a fresh process after each death
            assert after["measurement"]["break_sites"] == first["measurement"]["break_sites"]
    finally:
        worker.close()
        if templates is not None:
            templates.close()
    assert worker.proc is None


# ---------------------------------------------------------------------------- kill and resume

SLOW_EXAMPLES = '''\
import time

import torch

from .blocks import Gate


def make_fast():
    return Gate(4), (torch.randn(2, 4),)


def make_slow():
    time.sleep({sleep})
    return Gate(4), (torch.randn(2, 4),)
'''


def _tagged_processes(tag: str) -> list[int]:
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as fh:
                if tag.encode() in fh.read():
                    out.append(int(name))
        except OSError:
            continue
    return out


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="workers die with their parent through prctl")
def test_a_killed_run_keeps_finished_modules_and_the_next_run_resumes(tmp_path):
    need("torch", "the confirm pass runs modules under torch.compile")
    project = tmp_path / "proj"
    shutil.copytree(DATA / "net", project, ignore=shutil.ignore_patterns("__pycache__"))
    models = project / "models"
    for i in (1, 2, 3):  # three registered modules: the first is quick, the others take long
        (models / f"gate{i}.py").write_text(f"from .blocks import Gate as Gate{i}\n")
    (models / "examples.py").write_text(SLOW_EXAMPLES.format(sleep=60))
    (project / "pyproject.toml").write_text(textwrap.dedent("""\
        [tool.fusionlint.examples]
        "models.gate1:Gate1" = "models.examples:make_fast"
        "models.gate2:Gate2" = "models.examples:make_slow"
        "models.gate3:Gate3" = "models.examples:make_slow"
    """))
    tag = f"FUSIONLINT_KILL_TEST={uuid.uuid4().hex}"
    key, value = tag.split("=")
    # a SIGKILLed run cannot remove its scratch directories: keep them under tmp_path, not in /tmp
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = dict(os.environ, PYTHONPATH=str(ROOT), TMPDIR=str(scratch), **{key: value})
    # ... while inductor's kernel cache stays where the other tests' runs share it (torch's default)
    env.setdefault("TORCHINDUCTOR_CACHE_DIR", str(Path(tempfile.gettempdir()) / f"torchinductor_{getpass.getuser()}"))
    args = [sys.executable, "-m", "fusionlint.cli", "check", "models/gate1.py", "models/gate2.py", "models/gate3.py",
            "--confirm", "--device", "cpu", "--jobs", "1"]
    cache = project / ".fusionlint_cache" / "confirm"
    proc = subprocess.Popen(args, cwd=project, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 600
        while not (cache.is_dir() and list(cache.glob("*.json"))):
            assert proc.poll() is None, proc.stderr.read()
            assert time.monotonic() < deadline, "the first module never finished"
            time.sleep(0.2)
        time.sleep(1.0)  # the slow module has started
        assert proc.poll() is None
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    kept = list(cache.glob("*.json"))
    assert len(kept) == 1
    # the worker died with the run (no process of the run is left)
    deadline = time.monotonic() + 10
    while _tagged_processes(value) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _tagged_processes(value) == []
    # the next run resumes: the finished module from the cache; the budget stops the rest
    again = subprocess.run(args + ["--confirm-budget", "0.001"], cwd=project, env=env, capture_output=True,
                           text=True, timeout=600)
    assert "confirm models/gate1.py::Gate1: ok (cached)" in again.stderr, again.stderr
    assert "unconfirmed (budget)" in again.stderr, again.stderr


@pytest.mark.parametrize(
    "args,message",
    [
        (["--confirm=bogus"], "expected --confirm, --confirm=all or --confirm=flagged"),
        (["--confirm-inferred"], "--confirm-inferred needs --confirm"),
        (["--confirmed-only"], "--confirmed-only needs --confirm"),
        (["--confirm-budget", "5"], "--confirm-budget needs --confirm"),
        (["--confirm", "--confirm-budget", "0"], "--confirm-budget must be a number of seconds > 0"),
        (["--confirm-backend", "eager"], "--confirm-backend needs --confirm"),
    ],
)
def test_bad_safety_net_options_exit_2(args, message):
    from click.testing import CliRunner

    from fusionlint.cli import main

    res = CliRunner().invoke(main, ["check", str(DATA / "ok.py"), "--select", "FL101", *args])
    assert res.exit_code == 2, res.output
    assert message in res.output and "Traceback" not in res.output


def test_discovery_finds_registered_convention_fixture_and_only_asked_for_inferred(tmp_path):
    from fusionlint.confirm import discover
    from fusionlint.confirm.examples import EXAMPLE_TARGET

    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "reg.py").write_text("class Block:\n    def forward(self, x):\n        return x\n")
    (tmp_path / "conv.py").write_text("class A:\n    def forward(self, x):\n        return x\n\ndef fusionlint_example():\n    pass\n")
    (tmp_path / "fix.py").write_text("class Net:\n    def forward(self, x):\n        return x\n\ndef example_inputs():\n    pass\n")
    (tmp_path / "guess.py").write_text(
        "class NoArgs:\n    def forward(self, x):\n        return x\n\n"
        "class NeedsDim:\n    def __init__(self, dim):\n        pass\n\n    def forward(self, x):\n        return x\n"
    )
    (tmp_path / "broken.py").write_text("def (:\n")
    paths = [str(p) for p in tmp_path.rglob("*.py")]
    kw = dict(examples={"pkg.reg:Block": "pkg.reg:make"}, sys_path=[str(tmp_path)])
    found = {(Path(c.abs_path).name, c.target, c.source) for c in discover.candidates(paths, inferred=False, **kw)}
    assert found == {("reg.py", "Block", "registered"), ("conv.py", EXAMPLE_TARGET, "convention"),
                     ("fix.py", "Net", "fixture")}
    with_inferred = {(Path(c.abs_path).name, c.target) for c in discover.candidates(paths, inferred=True, **kw)}
    assert with_inferred - {(n, t) for n, t, _ in found} == {("guess.py", "NoArgs")}


# ---------------------------------------------------------------------------- the threshold reference


@pytest.mark.slow
def test_threshold_variants_reproduce_the_reference_facts_on_cpu():
    """examples/threshold: the issue's four clamp thresholds. The static pass flags only the annealed
    one (FL203: the project model sees the re-assignment in forward); the confirm pass measures:
    constant and buffer one graph, no break or recompile; annealed in forward: the recompile limit,
    then eager (FL203 confirmed); from `.item()`: a break at that line, which no static finding
    explains (FL900)."""
    need("torch", "the confirm pass runs modules under torch.compile")
    from fusionlint.config import Settings
    from fusionlint.confirm import orchestrate as orch
    from fusionlint.runner import run

    settings = Settings(root=ROOT)
    result = run([str(ROOT / "examples" / "threshold")], settings).result
    assert [(Path(f.path).name, f.code) for f in result.findings] == [("annealed.py", "FL203")]
    # one worker: a second would import torch again for four small modules
    units = orch.confirm_findings(result, settings=settings, device="cpu", use_cache=False, jobs=1)
    m = {Path(u.unit.abs_path).stem: u.worker["measurement"] for u in units}
    assert set(m) == {"constant", "annealed", "from_item", "buffer"}
    for calm in ("constant", "buffer"):
        assert (m[calm]["compiled_regions"], m[calm]["break_sites"], m[calm]["recompiles"]) == (1, [], 0), calm
    assert m["annealed"]["recompile_limit_hit"] and m["annealed"]["compiled_regions"] == 0
    item_line = _line_of(ROOT / "examples" / "threshold" / "from_item.py", "scores.std().item()")
    assert [(Path(s[1]).name, s[2]) for s in m["from_item"]["break_sites"]] == [("from_item.py", item_line)]
    reported = {(Path(f.path).name, f.line, f.code) for f in result.findings}
    assert ("from_item.py", item_line, "FL900") in reported
    annealed_line = _line_of(ROOT / "examples" / "threshold" / "annealed.py", "self.threshold = max(")
    [fl203] = [f for f in result.findings if f.code == "FL203"]
    assert (Path(fl203.path).name, fl203.line) == ("annealed.py", annealed_line)
    assert fl203.confirmation["status"] == "confirmed", fl203.confirmation


@pytest.mark.slow
def test_a_finding_in_a_helper_file_is_confirmed_by_running_the_module_of_its_chain(tmp_path):
    """The project model reports a break in helpers.py reached from Net.forward in net.py; the
    confirm pass runs Net (from net.py, where the chain starts) and confirms the finding."""
    need("torch", "the confirm pass runs modules under torch.compile")
    (tmp_path / "pyproject.toml").write_text(
        '[tool.fusionlint.examples]\n"pkg.net:Net" = "pkg.net:make"\n'
    )
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "helpers.py").write_text("def scale(x):\n    return x * x.abs().max().item()\n")
    (pkg / "net.py").write_text(textwrap.dedent("""\
        import torch
        from torch import nn

        from pkg.helpers import scale


        class Net(nn.Module):
            def forward(self, x):
                return torch.relu(scale(x))


        def make():
            return Net(), (torch.randn(4, 8),)
        """))
    proc = _cli(["pkg", "--confirm=flagged", "--device", "cpu", "--format", "json"], tmp_path)
    assert proc.returncode == 1, proc.stderr[-3000:]
    [finding] = json.loads(proc.stdout)["findings"]
    assert (finding["path"], finding["line"], finding["code"]) == ("pkg/helpers.py", 2, "FL101")
    assert finding["context"].startswith("Net.forward")
    assert finding["confirmation"]["status"] == "confirmed", finding["confirmation"]
    assert "confirm pkg/net.py::Net: ok" in proc.stderr, proc.stderr
