"""Long-lived confirm workers: each runs many modules, with torch imported before the first.

Importing torch and warming up dynamo costs seconds per process; a tiny module's measurement costs
about as much again. A :class:`WorkerProcess` therefore keeps one worker process (``worker.serve``)
and hands it one job at a time. The process is forked from the run's template, which has imported
torch already (``template``), or, without one, is a fresh ``python -P -m fusionlint.confirm.worker
--serve`` that imports it. It is replaced
(recycled) after a crash, a timeout, an out-of-memory answer, or ``max_jobs`` jobs, so a module
that breaks its process costs only its own result and a leaked resource cannot pile up.

The isolation of a one-shot worker is kept per job: its own session and process group, a scratch
working directory per job (``cwd``), ``-P`` and no user PYTHONPATH, the result through a file, and
every process the job's code started ended when the job ends (the worker is a subreaper, see
``procs``). The worker also dies with its parent (``PR_SET_PDEATHSIG``: the run, or the run's
template) and exits when its request pipe closes, so neither Ctrl-C nor ``kill -9`` of fusionlint
leaves workers behind.
torch is never imported here.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional

from fusionlint.confirm import procs
from fusionlint.confirm.template import ForkedWorker, Templates, TemplateError, TemplateTimeout

DEFAULT_MAX_JOBS = 20  # modules per worker before it is replaced (bounds leaks in user code / torch caches)
_LOG_TAIL_BYTES = 64_000
_POLL_S = 0.2  # how often a wait checks that the worker is still alive


class WorkerProcess:
    """One pooled worker. Not thread-safe: each pool slot (thread) owns one."""

    def __init__(self, env: dict, *, memory_mb: Optional[int] = None, max_jobs: int = DEFAULT_MAX_JOBS,
                 templates: Optional[Templates] = None) -> None:
        self.env = env
        # Where each process is forked from (torch imported already); asked when the first process
        # starts, so a run answered from the cache starts no template. None: a fresh interpreter.
        self.templates = templates
        self.memory_mb = memory_mb
        self.max_jobs = max(1, int(max_jobs))
        self.proc: Optional[subprocess.Popen | ForkedWorker] = None
        self.jobs_done = 0
        self.started = 0  # processes started so far (recycling count + 1)
        self._control: Optional[int] = None
        self._home: Optional[tempfile.TemporaryDirectory] = None
        self._log_path: Optional[Path] = None
        self._ready = False

    # ------------------------------------------------------------------ life cycle
    def _start(self, deadline: float) -> None:
        """Start the process: forked from the template when there is one (TemplateTimeout when it
        has not imported torch by ``deadline``), else a fresh interpreter."""
        self._home = tempfile.TemporaryDirectory(prefix="fusionlint-worker-")
        home = Path(self._home.name)
        (home / "cwd").mkdir()
        self._log_path = home / "worker.log"
        read_fd, write_fd = os.pipe()
        try:
            with open(self._log_path, "wb") as log:
                self.proc = self._fork(log.fileno(), write_fd, home / "cwd", deadline) or self._spawn(log, write_fd, home / "cwd")
        except BaseException:
            os.close(read_fd)
            self._home.cleanup()
            self._home = None
            raise
        finally:
            os.close(write_fd)
        self._control = read_fd
        self._buffer = b""
        self._ready = False
        self.jobs_done = 0
        self.started += 1

    def _spawn(self, log, control_fd: int, cwd: Path) -> subprocess.Popen:
        cmd = [sys.executable, "-P", "-m", "fusionlint.confirm.worker", "--serve", str(control_fd)]
        if self.memory_mb:
            cmd += ["--memory-mb", str(int(self.memory_mb))]
        return subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE,
            stdout=log,
            stderr=log,
            cwd=cwd,
            env=self.env,
            pass_fds=(control_fd,),
            start_new_session=True,  # its own process group and session
        )

    def _fork(self, log_fd: int, control_fd: int, cwd: Path, deadline: float) -> Optional[ForkedWorker]:
        """A worker forked from the template; None when there is none or it cannot fork this one
        (gone, another environment), so a fresh process starts instead. A template that failed to
        import torch or timed out raises: a fresh process would only repeat that."""
        template = self.templates.for_env(self.env) if self.templates is not None else None
        if template is None:
            return None
        requests_r, requests_w = os.pipe()
        try:
            pid = template.fork(self.env, requests=requests_r, log=log_fd, control=control_fd, cwd=str(cwd),
                                memory_mb=self.memory_mb, deadline=deadline)
        except TemplateTimeout:
            os.close(requests_w)
            raise
        except TemplateError:
            os.close(requests_w)
            if template.failed is not None:
                raise
            return None
        finally:
            os.close(requests_r)
        return ForkedWorker(template, pid, os.fdopen(requests_w, "wb"))

    def _read_line(self, deadline: float) -> Optional[str]:
        """The next control line; None when the worker died (or the deadline passed: see alive)."""
        while b"\n" not in self._buffer:
            if time.monotonic() >= deadline:
                return None
            ready, _, _ = select.select([self._control], [], [], min(_POLL_S, max(0.0, deadline - time.monotonic())))
            if ready:
                chunk = os.read(self._control, 4096)
                if not chunk:  # the worker closed the pipe: it has exited
                    self._wait_exit(2.0)
                    return None
                self._buffer += chunk
            elif self.proc is not None and self.proc.poll() is not None:
                return None
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line.decode("utf-8", "replace")

    def _wait_exit(self, seconds: float) -> None:
        try:
            self.proc.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            pass

    def kill(self) -> None:
        """End the worker, its process group and every process below it; forget it."""
        if self.proc is not None:
            if self.proc.poll() is None:
                procs.kill_group_and_tree(self.proc.pid)
            else:
                procs.kill_group(self.proc.pid)
            self.proc.wait()
        self._cleanup()

    def terminate(self) -> None:
        """End the worker's processes now, from any thread (Ctrl-C): the thread that owns this
        worker sees it die and cleans up itself."""
        proc = self.proc
        if proc is not None and proc.poll() is None:
            procs.kill_group_and_tree(proc.pid)

    def close(self) -> None:
        """Ask the worker to exit (its request pipe closes), then end whatever is left."""
        if self.proc is not None and self.proc.poll() is None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
            self._wait_exit(5.0)
        self.kill()

    def _cleanup(self) -> None:
        if self.proc is not None and self.proc.stdin is not None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
        self.proc = None
        if self._control is not None:
            os.close(self._control)
            self._control = None
        if self._home is not None:
            self._home.cleanup()
            self._home = None
        self._ready = False

    # ------------------------------------------------------------------ one job
    def run(self, job: dict, timeout: float) -> dict:
        """Run one job; a crash, hang, OOM or import failure becomes ``{"ok": False, "reason": ...}``."""
        # Importing torch has its own limit (the job's): a worker that cannot start is the job's
        # failure, reported the same way.
        start_deadline = time.monotonic() + max(timeout, 60.0)
        if self.proc is None:
            try:
                self._start(start_deadline)
            except TemplateTimeout:
                return {"ok": False, "reason": f"timed out after {timeout:g} s importing torch (raise --confirm-timeout)"}
            except TemplateError as e:
                return {"ok": False, "reason": f"the worker could not start: {e}"}
        if not self._ready:
            line = self._read_line(start_deadline)
            if line != "ready":
                return self._fail(line, timed_out=line is None and self.proc.poll() is None, timeout=timeout, starting=True)
            self._ready = True
        offset = self._log_path.stat().st_size if self._log_path.exists() else 0
        with tempfile.TemporaryDirectory(prefix="fusionlint-confirm-") as scratch:
            private = Path(scratch)
            cwd = private / "cwd"
            cwd.mkdir()
            job_file, result_file = private / "job.json", private / "result.json"
            job_file.write_text(json.dumps(job), encoding="utf-8")
            request = json.dumps({"job": str(job_file), "result": str(result_file), "cwd": str(cwd)})
            try:
                self.proc.stdin.write((request + "\n").encode("utf-8"))
                self.proc.stdin.flush()
            except OSError:  # died between jobs
                return self._fail(None, timed_out=False, timeout=timeout, offset=offset)
            line = self._read_line(time.monotonic() + timeout)
            if line == "done":
                try:
                    result = json.loads(result_file.read_text(encoding="utf-8"))
                except (OSError, ValueError):
                    result = None
                if isinstance(result, dict):
                    self.jobs_done += 1
                    if self._should_recycle(result):
                        self.close()
                    return result
                self.kill()
                return {"ok": False, "reason": "the worker's answer could not be read"}
            if line is not None and line.startswith("bad "):
                return {"ok": False, "reason": f"worker could not run the job: {line[4:]}"}
            return self._fail(line, timed_out=line is None and self.proc.poll() is None, timeout=timeout, offset=offset)

    def _should_recycle(self, result: dict) -> bool:
        reason = str(result.get("reason") or "")
        return self.jobs_done >= self.max_jobs or "out of memory" in reason

    def _fail(self, line: Optional[str], *, timed_out: bool, timeout: float, offset: int = 0, starting: bool = False) -> dict:
        """Why the worker gave no answer; the worker is ended (the next job starts a fresh one)."""
        log = self._tail(offset)
        if timed_out:
            self.kill()
            what = "importing torch" if starting else ""
            return {"ok": False, "reason": f"timed out after {timeout:g} s{' ' + what if what else ''} (raise --confirm-timeout)"}
        if line is not None and line.startswith("failed "):
            self.kill()
            return {"ok": False, "reason": f"the worker could not start: {line[7:]}"}
        self._wait_exit(2.0)
        rc = self.proc.returncode if self.proc is not None else None
        self.kill()
        if rc is not None and rc < 0:
            try:
                name = signal.Signals(-rc).name
            except ValueError:
                name = str(-rc)
            why = f"worker killed by {name}" + (" (out of memory?)" if name == "SIGKILL" else "")
        else:
            why = f"worker exited with status {rc}"
        tail = [ln for ln in log.strip().splitlines() if ln.strip()][-1:]
        if any(m in log.lower() for m in ("out of memory", "can't allocate memory", "memoryerror")):
            why = "out of memory: " + why
        return {"ok": False, "reason": why + (f": {tail[0][:300]}" if tail else "")}

    def _tail(self, offset: int) -> str:
        if self._log_path is None:
            return ""
        try:
            with open(self._log_path, "rb") as fh:
                fh.seek(0, os.SEEK_END)
                fh.seek(max(offset, fh.tell() - _LOG_TAIL_BYTES))
                return fh.read().decode("utf-8", "replace")
        except OSError:
            return ""
