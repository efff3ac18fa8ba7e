"""The confirm pass keeps the user's code in a box: no stdlib shadowing, no leftover processes,
no writes into the project, whatever the module does at import or in forward."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from fusionlint.confirm import orchestrate as orch
from tests.helpers import need, process_running

ROOT = Path(__file__).resolve().parent.parent

# A project file that shadows the standard library and refuses to be imported.
SHADOW_JSON = "raise RuntimeError('the project json.py was imported')\n"


@pytest.fixture(scope="module")
def torch_installed():
    need("torch", "the confirm pass runs modules under torch.compile")


def _job(path: Path, root: Path, target: str) -> dict:
    unit = orch.Unit(path=path.name, abs_path=str(path), target=target)
    return orch.build_job(
        unit, root=root, device="cpu", examples={}, user_files=[], timing_runs=0,
        timeline=False, memory_mb=0, threads=1, variants=[],
    )


# ---------------------------------------------------------------------------- (a) sys.path


def test_probe_ignores_a_project_json_py_in_cwd_and_pythonpath(torch_installed, tmp_path, monkeypatch):
    (tmp_path / "json.py").write_text(SHADOW_JSON)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    info = orch.probe_torch()
    assert info["version"].startswith("2.")


def test_user_pythonpath_reaches_the_worker_only_through_the_job(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "libs"))
    assert orch._worker_env(None)["PYTHONPATH"] == orch._fusionlint_dir()
    model = tmp_path / "model.py"
    model.write_text("x = 1\n")
    job = _job(model, tmp_path, "Model")
    assert job["extra_path"] == [str(tmp_path / "libs")]


def test_cli_confirm_in_a_project_with_json_py(torch_installed, tmp_path):
    # Before: the torch probe imported ./json.py and the run exited 2.
    (tmp_path / "json.py").write_text(SHADOW_JSON)
    (tmp_path / "pyproject.toml").write_text('[tool.fusionlint]\nselect = ["FL101"]\n')
    # A module with no example: the worker imports it and answers without compiling anything.
    (tmp_path / "model.py").write_text(textwrap.dedent("""\
        from torch import nn

        class NeedsArgs(nn.Module):
            def __init__(self, dim):
                super().__init__()

            def forward(self, x):
                return x * x.mean().item()
    """))
    # -P: like the `fusionlint` console script, the CLI process itself does not see the cwd.
    proc = subprocess.run(
        [sys.executable, "-P", "-m", "fusionlint.cli", "check", ".", "--confirm", "--device", "cpu",
         "--no-confirm-cache", "--format", "json"],
        cwd=tmp_path, capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 1, proc.stderr
    (finding,) = json.loads(proc.stdout)["findings"]
    assert finding["confirmation"]["status"] == "unconfirmed"
    assert "needs arguments (dim)" in finding["confirmation"]["reason"]


# ---------------------------------------------------------------------------- (b) processes

SPAWNER = '''\
import os, subprocess, sys
import torch
from torch import nn

PIDS = {pids!r}


def spawn(tag):
    # 1: in the worker's group, output redirected away; 2: its own session (setsid), holding
    # the worker's stderr open; 3: a grandchild whose parent exits at once (double fork + setsid).
    quiet = subprocess.Popen(["sleep", "300"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    held = subprocess.Popen(["sleep", "300"], start_new_session=True, stdout=sys.stderr)
    daemon = subprocess.Popen(
        [sys.executable, "-c",
         "import os, subprocess, sys; p = subprocess.Popen(['sleep', '300'], start_new_session=True);"
         " print(p.pid, flush=True); os._exit(0)"],
        stdout=subprocess.PIPE, text=True,
    )
    orphan = int(daemon.stdout.readline())
    daemon.wait()
    with open(PIDS, "a") as fh:
        fh.write(f"{{tag}} {{quiet.pid}} {{held.pid}} {{orphan}}\\n")


spawn("import")


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(2, 2)
        self.spawned = False

    @torch.compiler.disable
    def _spawn_once(self):
        if not self.spawned:
            self.spawned = True
            spawn("forward")

    def forward(self, x):
        self._spawn_once()
        return self.lin(x)


def example_inputs():
    return (torch.randn(1, 2),)
'''


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="setsid'd children are tracked through /proc")
def test_processes_started_by_user_code_do_not_outlive_the_job(torch_installed, tmp_path):
    pids_file = tmp_path / "pids.txt"
    model = tmp_path / "spawner.py"
    model.write_text(SPAWNER.format(pids=str(pids_file)))
    # The limit only turns a regression into a failure: a child holding stderr open used to
    # keep the result from arriving until the limit (the answer was "timed out").
    result = orch.run_worker(_job(model, tmp_path, "Model"), timeout=300)
    assert "timed out" not in str(result.get("reason")), result
    assert result.get("ok") is True, result
    lines = pids_file.read_text().split("\n")
    tags = [line.split()[0] for line in lines if line]
    assert tags[0] == "import" and "forward" in tags
    pids = [int(p) for line in lines if line for p in line.split()[1:]]
    assert [p for p in pids if process_running(p)] == []


def test_kill_descendants_ends_a_setsid_grandchild(tmp_path):
    # The mechanism on its own, without torch: a subreaper process, its setsid'd orphan, the kill.
    code = textwrap.dedent("""\
        import subprocess, sys
        from fusionlint.confirm import procs
        assert procs.become_subreaper()
        out = subprocess.run(
            [sys.executable, "-c",
             "import subprocess; p = subprocess.Popen(['sleep', '300'], start_new_session=True,"
             " stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); print(p.pid)"],
            capture_output=True, text=True, check=True,
        )
        orphan = int(out.stdout)
        print(orphan, orphan in procs.descendants(__import__("os").getpid()), procs.kill_descendants(), flush=True)
        procs.reap_children()
    """)
    if not sys.platform.startswith("linux"):
        pytest.skip("subreapers are Linux-only")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    orphan, found, killed = proc.stdout.split()
    assert found == "True" and killed == "1"
    assert not process_running(int(orphan))


# ---------------------------------------------------------------------------- (c) working directory


def test_worker_runs_in_a_scratch_directory_with_the_project_importable(torch_installed, tmp_path, monkeypatch):
    project = tmp_path / "proj"
    (project / "pkg").mkdir(parents=True)
    (project / "pkg" / "__init__.py").write_text("")
    (project / "pkg" / "helper.py").write_text("VALUE = 3\n")
    (project / "notes.txt").write_text("mine\n")
    writer = project / "writer.py"
    writer.write_text(textwrap.dedent("""\
        import os
        from pkg.helper import VALUE  # the user's package must stay importable

        with open("notes.txt", "a") as fh:  # a module that writes into the current directory
            fh.write("appended by the module\\n")
        CWD = os.getcwd()
    """))
    monkeypatch.chdir(project)
    before = sorted(p.name for p in project.iterdir())
    # No example for "Missing": the worker imports the module, then answers without compiling.
    result = orch.run_worker(_job(writer, project, "Missing"), timeout=300)
    assert "not found" in str(result.get("reason")), result  # imported fine, then no such class
    assert (project / "notes.txt").read_text() == "mine\n"
    assert sorted(p.name for p in project.iterdir() if p.name != "__pycache__") == [
        n for n in before if n != "__pycache__"
    ]


def test_scratch_directories_are_removed(torch_installed, tmp_path, monkeypatch):
    import tempfile

    scratch_root = tmp_path / "tmp"
    scratch_root.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch_root))
    model = tmp_path / "m.py"
    model.write_text("X = 1\n")
    orch.run_worker(_job(model, tmp_path, "Missing"), timeout=300)
    assert list(scratch_root.iterdir()) == []
