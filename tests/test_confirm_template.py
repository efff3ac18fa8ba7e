"""The warm template confirm workers are forked from (fusionlint/confirm/template.py).

Every test here starts templates of its own: the session's shared one (tests/conftest.py) is taken
out of the environment, except where a test checks which template a run uses.
"""

from __future__ import annotations

import os
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from tests.helpers import need, process_running

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the template is Linux-only")

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "confirm_data"

SLEEPER = '''\
import os
import subprocess
import sys
import time

import torch
from torch import nn


class Model(nn.Module):
    def forward(self, x):
        return x + 1


def example_inputs():
    # what the job saw of its environment, and a process of its own that would outlive it
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"], start_new_session=True)
    with open({out!r}, "w") as fh:
        fh.write(f"{{os.getpid()}} {{child.pid}} {{os.environ.get('PYTEST_CURRENT_TEST')}}\\n")
    time.sleep(300)
    return (torch.randn(2, 4),)
'''


@pytest.fixture
def no_shared(monkeypatch):
    from fusionlint.confirm import template

    monkeypatch.delenv(template.TEMPLATE_ENV, raising=False)
    need("torch", "the template imports torch")


@pytest.fixture(scope="module")
def module_templates():
    """One owned template for the tests below that only need one to fork from (4.4 CPU s to start
    here); the test that checks closing it ends its workers runs last and closes it."""
    from fusionlint.confirm.template import Templates

    templates = Templates()
    yield templates
    templates.close()


def _job(path: Path, root: Path) -> dict:
    from fusionlint.confirm import orchestrate as orch

    unit = orch.Unit(path=path.name, abs_path=str(path), target="Model")
    return orch.build_job(unit, root=root, device="cpu", examples={}, user_files=[], timing_runs=0,
                          timeline=False, memory_mb=0, threads=1, variants=[], backend="eager")


def _parent(pid: int) -> int:
    with open(f"/proc/{pid}/stat", "rb") as fh:
        stat = fh.read()
    return int(stat[stat.rfind(b")") + 2 :].split()[1])


def _wait_gone(pids, seconds: float = 15.0) -> list[int]:
    deadline = time.monotonic() + seconds
    while any(process_running(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return [p for p in pids if process_running(p)]


def test_the_template_outlives_the_pool_thread_that_started_it(no_shared, module_templates):
    """A parent-death signal would end the template with the thread that started it (prctl(2)): in a
    run, a pool slot's thread, which finishes when the queue is empty while other slots still work."""
    from fusionlint.confirm import orchestrate as orch
    from fusionlint.confirm.pool import WorkerProcess
    from fusionlint.confirm.template import ForkedWorker

    env = orch._worker_env(None)
    templates = module_templates
    templates.close()  # the slot's thread must start it: a no-op where this test is the first to ask
    worker = WorkerProcess(env, templates=templates)
    try:
        slot = threading.Thread(target=lambda: worker.run(_job(DATA / "ok.py", ROOT), timeout=300))
        slot.start()
        slot.join()
        worker.close()  # that slot is done
        template = templates.for_env(env)
        time.sleep(0.5)
        assert template.proc.poll() is None
        answer = worker.run(_job(DATA / "ok.py", ROOT), timeout=300)  # another slot's next worker
        assert answer["ok"], answer
        assert isinstance(worker.proc, ForkedWorker) and _parent(worker.proc.pid) == template.proc.pid
    finally:
        worker.close()


def test_a_forked_worker_ends_with_its_run_and_takes_its_jobs_processes(no_shared, module_templates, tmp_path):
    """The worker's parent is the template, which lives on: it watches its request pipe instead."""
    from fusionlint.confirm import orchestrate as orch
    from fusionlint.confirm.pool import WorkerProcess

    out = tmp_path / "seen.txt"
    module = tmp_path / "sleeper.py"
    module.write_text(SLEEPER.format(out=str(out)))
    templates = module_templates
    worker = WorkerProcess(orch._worker_env(None), templates=templates)
    answer: dict = {}
    runner = threading.Thread(target=lambda: answer.update(worker.run(_job(module, tmp_path), timeout=300)))
    runner.start()
    try:
        deadline = time.monotonic() + 120
        while not out.exists() or not out.read_text().endswith("\n"):
            assert time.monotonic() < deadline and runner.is_alive(), answer
            time.sleep(0.05)
        job_pid, child_pid, seen_test = out.read_text().split(" ", 2)
        job_pid, child_pid = int(job_pid), int(child_pid)
        # the job ran in the run's environment, not the template's (pytest changes this one per test)
        assert seen_test.strip() == os.environ["PYTEST_CURRENT_TEST"]
        assert job_pid == worker.proc.pid and process_running(child_pid)
        template_pid = templates.for_env(worker.env).proc.pid
        worker.proc.stdin.close()  # what the run's death does to the pipe
        assert _wait_gone([job_pid, child_pid]) == []
        runner.join(30)
        assert answer.get("ok") is False and "SIGKILL" in answer.get("reason", ""), answer
        assert process_running(template_pid)  # the template itself serves on
    finally:
        worker.kill()


def test_two_workers_fork_from_one_template_and_it_ends_them(no_shared, module_templates):
    from fusionlint.confirm import orchestrate as orch
    from fusionlint.confirm.pool import WorkerProcess
    from fusionlint.confirm.template import ForkedWorker

    templates = module_templates  # its last user: closed below
    env = orch._worker_env(None)
    workers = [WorkerProcess(env, templates=templates) for _ in range(2)]
    try:
        results = [w.run(_job(DATA / "ok.py", ROOT), timeout=300) for w in workers]
        assert all(r["ok"] for r in results), results
        assert results[0]["measurement"]["break_sites"] == results[1]["measurement"]["break_sites"]
        template = templates.for_env(env)
        assert template is not None and template.owned and templates.for_env(dict(env)) is template
        pids = [w.proc.pid for w in workers]
        assert all(isinstance(w.proc, ForkedWorker) for w in workers)
        assert [_parent(p) for p in pids] == [template.proc.pid] * 2
        assert all(process_running(p) for p in pids)
    finally:
        templates.close()  # with the workers still running: the template ends them
    assert _wait_gone(pids) == []
    assert template.proc.poll() is not None
    for w in workers:
        w.close()


def test_a_shared_template_serves_only_runs_of_its_environment(no_shared, tmp_path, monkeypatch):
    from fusionlint.confirm import orchestrate as orch
    from fusionlint.confirm.template import TEMPLATE_ENV, Template, TemplateError, Templates

    env = orch._worker_env(None)
    path = str(tmp_path / "t.sock")
    shared = Template.start(env, listen_path=path)
    try:
        other = dict(env, FUSIONLINT_SOME_SETTING="1")
        with pytest.raises(TemplateError, match="another environment"):
            Template.connect(path, other)
        monkeypatch.setenv(TEMPLATE_ENV, path)
        templates = Templates()
        try:
            same = templates.for_env(dict(env, PYTEST_CURRENT_TEST="another test"))
            assert same is not None and not same.owned  # PYTEST_CURRENT_TEST is not compared
            own = templates.for_env(other)
            assert own is not None and own.owned
        finally:
            templates.close()
        assert shared.proc.poll() is None  # closing a client leaves a shared template running
    finally:
        shared.close()
    assert shared.proc.poll() is not None
    with pytest.raises(TemplateError, match="no template"):
        Template.connect(path, env)


def test_a_template_that_cannot_import_torch_is_the_jobs_answer(no_shared, tmp_path):
    from fusionlint.confirm import orchestrate as orch
    from fusionlint.confirm.pool import WorkerProcess
    from fusionlint.confirm.template import Templates

    broken = tmp_path / "site" / "torch"
    broken.mkdir(parents=True)
    (broken / "__init__.py").write_text("raise ImportError('this torch is broken')\n")
    env = dict(orch._worker_env(None))
    env["PYTHONPATH"] = os.pathsep.join([str(broken.parent), env["PYTHONPATH"]])
    templates = Templates()
    worker = WorkerProcess(env, templates=templates)
    try:
        first = worker.run(_job(DATA / "ok.py", ROOT), timeout=120)
        again = worker.run(_job(DATA / "ok.py", ROOT), timeout=120)
    finally:
        worker.close()
        templates.close()
    for answer in (first, again):
        assert answer == {"ok": False, "reason": "the worker could not start: ImportError: this torch is broken"}
    assert worker.started == 0


def test_the_cli_forks_its_workers_from_the_shared_template(tmp_path):
    """A run under FUSIONLINT_CONFIRM_TEMPLATE (the session's, see conftest) starts no template."""
    need("torch", "the confirm pass runs modules under torch.compile")
    import subprocess

    from fusionlint.confirm.template import TEMPLATE_ENV

    if not os.environ.get(TEMPLATE_ENV):
        pytest.skip("no shared template in this session")
    (tmp_path / "ok.py").write_text((DATA / "ok.py").read_text())
    code = textwrap.dedent("""\
        import sys
        from fusionlint.confirm import template
        started = []
        real = template.Template.start
        template.Template.start = classmethod(lambda cls, *a, **k: started.append(1) or real(*a, **k))
        from fusionlint.cli import main
        try:
            main(["check", "ok.py", "--confirm", "--device", "cpu", "--no-confirm-cache"], standalone_mode=False)
        finally:
            print("templates started:", len(started), file=sys.stderr)
    """)
    # as in a process that compiled with inductor before: inductor writes an address of its own into
    # os.environ, which the workers' environment leaves out (with it, this run started its own template)
    env = dict(os.environ, PYTHONPATH=str(ROOT), _TORCHINDUCTOR_PYOBJECT_TENSOR_DATA_PTR="140524982553632")
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=600,
                          env=env)
    assert "confirm ok.py::Model: ok" in proc.stderr, proc.stderr[-3000:]
    assert "templates started: 0" in proc.stderr, proc.stderr[-3000:]
