"""A warm template for confirm workers: torch imported once, every worker forked from it.

Importing torch, dynamo and inductor costs a confirm worker about 7 CPU-seconds (torch 2.13 CPU, the
2-core machine), more than most modules then cost to measure. A run that starts more than one worker
(``--jobs N``, a worker recycled after ``modules-per-worker`` jobs, one replaced after a crash, a
timeout or an out-of-memory answer) paid that for each. The template is one process that imports
them once and then only forks: each worker is a copy of it with torch already imported, sharing its
memory pages until it writes to them.

Protocol: the template runs ``main(OWNER_FD, READY_FD, LISTEN_FD)`` in ``python -P``. It writes
``ready`` (or ``failed <why>``) on the pipe READY_FD once its imports are done. It answers requests,
one JSON object per message, on AF_UNIX SOCK_SEQPACKET sockets: OWNER_FD (one end of a socket pair
its starter keeps) and the connections accepted on LISTEN_FD (-1: none). ``fork`` carries three file
descriptors (the worker's request pipe, its log, its control pipe) and the worker's environment, and
is answered with the worker's pid; ``status`` answers a worker's exit status once it has ended
(Popen's convention: -N for signal N). When OWNER_FD closes (its starter is done or died) the template
SIGKILLs the workers still alive and exits.

Sharing between runs: a process that keeps a template alive (a test session, an editor) names its
listening socket in ``FUSIONLINT_CONFIRM_TEMPLATE``. A run whose worker environment matches the
template's (the same interpreter and the same variables, apart from that one and
``PYTEST_CURRENT_TEST``, which pytest changes per test) forks its workers there instead of starting
a template of its own. Such a worker's parent is the template, so the kernel does not tell it when
its run dies; it watches its request pipe instead and ends its job's processes and itself when the
run's end closes (``worker.serve``).

Only on Linux (file descriptors passed over SOCK_SEQPACKET, the subreaper); elsewhere workers start
as before. The template never initialises CUDA (importing torch does not), and refuses to fork if
something did, since a forked child cannot use a CUDA context it inherited.
"""

from __future__ import annotations

import hashlib
import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from typing import Mapping, Optional

from fusionlint.confirm import procs

TEMPLATE_ENV = "FUSIONLINT_CONFIRM_TEMPLATE"
# Variables that may differ between a shared template and the runs it serves: they name the
# template itself, or change with every test (pytest), and nothing reads them while torch imports.
_NOT_COMPARED = frozenset({TEMPLATE_ENV, "PYTEST_CURRENT_TEST"})
_MAX_MESSAGE = 1 << 20  # a request holds the worker's whole environment
_ENTRY = "import sys; from fusionlint.confirm.template import main; sys.exit(main(sys.argv[1:]))"


class TemplateError(Exception):
    """The template cannot fork this worker (not started, gone, another environment)."""


class TemplateTimeout(TemplateError):
    """The template did not finish importing torch in time."""


def supported() -> bool:
    return sys.platform.startswith("linux") and hasattr(socket, "send_fds")


def env_digest(env: Mapping[str, str], executable: Optional[str] = None) -> str:
    """What a worker's start depends on: the interpreter and the environment it imports torch in."""
    h = hashlib.sha256((executable or sys.executable).encode("utf-8", "surrogateescape") + b"\0")
    for key in sorted(env):
        if key not in _NOT_COMPARED:
            h.update(key.encode("utf-8", "surrogateescape") + b"=" + env[key].encode("utf-8", "surrogateescape") + b"\0")
    return h.hexdigest()


# ---------------------------------------------------------------------------- the client side
class ForkedWorker:
    """A worker forked by a template, with the part of ``subprocess.Popen`` that ``pool`` uses."""

    def __init__(self, template: "Template", pid: int, stdin) -> None:
        self._template = template
        self.pid = pid
        self.stdin = stdin
        self.returncode: Optional[int] = None

    def poll(self) -> Optional[int]:
        if self.returncode is None:
            self.returncode = self._template.returncode(self.pid)
        return self.returncode

    def wait(self, timeout: Optional[float] = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() >= deadline:
                raise subprocess.TimeoutExpired(f"confirm worker {self.pid}", timeout)
            time.sleep(0.01)
        return self.returncode


class Template:
    """One template process as its clients see it: started by this process (``start``) or shared by
    another one (``connect``). Thread-safe: the pool's slots fork and poll through one socket."""

    def __init__(self, sock: socket.socket, digest: str, *, proc: Optional[subprocess.Popen] = None,
                 ready_fd: Optional[int] = None, home: Optional[tempfile.TemporaryDirectory] = None) -> None:
        self._sock = sock
        self.digest = digest
        self.proc = proc
        self._ready_fd = ready_fd
        self._home = home
        self._lock = threading.Lock()
        self.failed: Optional[str] = None

    @property
    def owned(self) -> bool:
        return self.proc is not None

    @classmethod
    def start(cls, env: Mapping[str, str], *, listen_path: Optional[str] = None) -> "Template":
        """Start a template in ``env`` (a worker's environment); it imports torch in the background.
        ``listen_path``: also accept other processes' runs on that socket (see the module docstring)."""
        home = tempfile.TemporaryDirectory(prefix="fusionlint-template-")
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        listen = None
        read_fd, write_fd = os.pipe()
        try:
            if listen_path is not None:
                listen = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
                listen.bind(listen_path)
                listen.listen(64)
            fds = [theirs.fileno(), write_fd] + ([listen.fileno()] if listen else [])
            # -c, not -m: the package imports this module, and running it again as __main__ would
            # make a second copy of it.
            cmd = [sys.executable, "-P", "-c", _ENTRY, str(theirs.fileno()), str(write_fd),
                   str(listen.fileno() if listen else -1)]
            with open(os.path.join(home.name, "template.log"), "wb") as log:
                proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=log, cwd=home.name,
                                        env=dict(env), pass_fds=fds, start_new_session=True)
        except BaseException:
            ours.close()
            os.close(read_fd)
            home.cleanup()
            raise
        finally:
            theirs.close()
            os.close(write_fd)
            if listen is not None:
                listen.close()
        return cls(ours, env_digest(env), proc=proc, ready_fd=read_fd, home=home)

    @classmethod
    def connect(cls, path: str, env: Mapping[str, str], *, timeout: float = 60.0) -> "Template":
        """A template another process keeps at ``path``, if it was started in ``env``; else TemplateError.
        A template still importing torch answers once it is done: waiting for it costs less than
        starting another (``timeout``, as for a worker's import)."""
        digest = env_digest(env)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            sock.settimeout(timeout)
            sock.connect(path)
            template = cls(sock, digest)
            answer = template._ask({"op": "hello", "digest": digest})
        except (OSError, ValueError) as e:
            sock.close()
            raise TemplateError(f"no template at {path}: {e}") from None
        if not answer.get("ok"):
            sock.close()
            raise TemplateError(answer.get("error") or "the template refused")
        sock.settimeout(None)
        return template

    # ------------------------------------------------------------------ requests
    def _ask(self, request: dict, fds: tuple = ()) -> dict:
        """One request, one answer (the caller holds the lock, or is the only user yet)."""
        data = json.dumps(request).encode("utf-8")
        if fds:
            socket.send_fds(self._sock, [data], list(fds))
        else:
            self._sock.send(data)
        answer = self._sock.recv(_MAX_MESSAGE)
        if not answer:
            raise OSError("the template closed the connection")
        return json.loads(answer)

    def _wait_ready(self, deadline: float) -> None:
        """Block until the template has imported torch (the first fork waits; later ones do not)."""
        if self.failed is not None:
            raise TemplateError(self.failed)
        if self._ready_fd is None:
            return
        line = b""
        while not line.endswith(b"\n"):
            left = deadline - time.monotonic()
            if left <= 0:
                raise TemplateTimeout("timed out importing torch")
            import select

            ready, _, _ = select.select([self._ready_fd], [], [], min(left, 0.2))
            if ready:
                chunk = os.read(self._ready_fd, 4096)
                if not chunk:
                    break
                line += chunk
        os.close(self._ready_fd)
        self._ready_fd = None
        text = line.decode("utf-8", "replace").strip()
        if text != "ready":
            self.failed = text[len("failed "):] if text.startswith("failed ") else (
                f"the template exited: {self._log_tail() or 'no message'}")
            raise TemplateError(self.failed)

    def fork(self, env: Mapping[str, str], *, requests: int, log: int, control: int, cwd: str,
             memory_mb: Optional[int], deadline: float) -> int:
        """Fork a worker that reads requests on the pipe ``requests``, writes its output to ``log``
        and answers on ``control``; returns its pid. TemplateError (TemplateTimeout) if it cannot."""
        with self._lock:
            self._wait_ready(deadline)
            try:
                answer = self._ask({"op": "fork", "digest": env_digest(env), "env": dict(env), "cwd": cwd,
                                    "memory_mb": memory_mb}, (requests, log, control))
            except (OSError, ValueError) as e:
                raise TemplateError(f"the template did not answer: {e}") from None
        if "pid" not in answer:
            raise TemplateError(answer.get("error") or "the template refused")
        return int(answer["pid"])

    def returncode(self, pid: int) -> Optional[int]:
        """A forked worker's exit status once it has ended, else None."""
        with self._lock:
            try:
                answer = self._ask({"op": "status", "pid": pid})
            except (OSError, ValueError):
                answer = None
        if answer is not None and "error" not in answer:
            return answer.get("returncode")
        # The template is gone, and its workers with it (they die with their parent).
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return -signal.SIGKILL
        except PermissionError:  # pragma: no cover - the pid was reused by another user's process
            return -signal.SIGKILL
        return None

    def close(self) -> None:
        """Forget the template; one this process started ends with its workers."""
        try:
            self._sock.close()
        except OSError:  # pragma: no cover
            pass
        if self._ready_fd is not None:
            os.close(self._ready_fd)
            self._ready_fd = None
        if self.proc is not None:
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                procs.kill_group_and_tree(self.proc.pid)
                self.proc.wait()
        if self._home is not None:
            self._home.cleanup()
            self._home = None

    def _log_tail(self) -> str:
        if self._home is None:
            return ""
        try:
            with open(os.path.join(self._home.name, "template.log"), "rb") as fh:
                lines = [ln for ln in fh.read()[-4000:].decode("utf-8", "replace").splitlines() if ln.strip()]
        except OSError:
            return ""
        return lines[-1][:300] if lines else ""


class Templates:
    """The templates of one confirm run, one per worker environment (per GPU), made when first asked."""

    def __init__(self) -> None:
        self._by_digest: dict[str, Optional[Template]] = {}
        self._lock = threading.Lock()

    def for_env(self, env: Mapping[str, str]) -> Optional[Template]:
        if not supported():
            return None
        digest = env_digest(env)
        with self._lock:
            if digest not in self._by_digest:
                self._by_digest[digest] = self._make(env)
            return self._by_digest[digest]

    @staticmethod
    def _make(env: Mapping[str, str]) -> Optional[Template]:
        shared = os.environ.get(TEMPLATE_ENV)
        if shared:
            try:
                return Template.connect(shared, env)
            except TemplateError:
                pass  # another environment, or gone: a template of our own
        try:
            return Template.start(env)
        except OSError:
            return None  # workers start on their own, as without a template

    def close(self) -> None:
        with self._lock:
            templates = [t for t in self._by_digest.values() if t is not None]
            self._by_digest.clear()
        for t in templates:
            t.close()


# ---------------------------------------------------------------------------- the template process
class _Server:
    def __init__(self, owner: socket.socket, listen: Optional[socket.socket], digest: str) -> None:
        self.owner = owner
        self.listen = listen
        self.digest = digest
        self.children: dict[int, Optional[int]] = {}  # pid -> exit status, None while running
        self.selector = selectors.DefaultSelector()
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_r, False)
        os.set_blocking(self.wake_w, False)

    def run(self) -> int:
        signal.set_wakeup_fd(self.wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)  # a handler, so the wakeup fd hears of exits
        self.selector.register(self.owner, selectors.EVENT_READ, "conn")
        self.selector.register(self.wake_r, selectors.EVENT_READ, "wake")
        if self.listen is not None:
            self.selector.register(self.listen, selectors.EVENT_READ, "listen")
        try:
            while True:
                for key, _ in self.selector.select():
                    if key.data == "wake":
                        self._drain_wake()
                        self._reap()
                    elif key.data == "listen":
                        try:
                            conn, _ = self.listen.accept()
                        except OSError:
                            continue
                        self.selector.register(conn, selectors.EVENT_READ, "conn")
                    elif not self._serve_one(key.fileobj) and key.fileobj is self.owner:
                        return 0
        finally:
            self._end_children()

    def _drain_wake(self) -> None:
        try:
            while os.read(self.wake_r, 4096):
                pass
        except BlockingIOError:
            pass

    def _reap(self) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if pid in self.children:
                self.children[pid] = os.waitstatus_to_exitcode(status)

    def _serve_one(self, conn: socket.socket) -> bool:
        """Answer one request of ``conn``; False once it has closed."""
        try:
            data, fds, _flags, _addr = socket.recv_fds(conn, _MAX_MESSAGE, 3)
        except OSError:
            data, fds = b"", []
        try:
            if not data:
                self.selector.unregister(conn)
                conn.close()
                return False
            try:
                request = json.loads(data)
                answer = self._answer(request, fds)
            except (ValueError, TypeError, KeyError, AttributeError) as e:
                answer = {"error": f"bad request: {type(e).__name__}: {e}"}
            try:
                conn.send(json.dumps(answer).encode("utf-8"))
            except OSError:
                pass
            return True
        finally:
            for fd in fds:
                os.close(fd)

    def _answer(self, request: dict, fds: list) -> dict:
        op = request.get("op")
        if op == "hello":
            if request.get("digest") != self.digest:
                return {"error": "the template was started in another environment or interpreter"}
            return {"ok": True}
        if op == "status":
            self._reap()
            pid = int(request["pid"])
            if pid not in self.children:
                return {"error": f"no worker {pid}"}
            code = self.children[pid]
            if code is not None:
                del self.children[pid]  # reported once: the client keeps it
            return {"returncode": code}
        if op == "fork":
            if request.get("digest") != self.digest:
                return {"error": "the template was started in another environment or interpreter"}
            if len(fds) != 3:
                return {"error": "a fork needs three file descriptors"}
            torch = sys.modules.get("torch")
            if torch is not None and torch.cuda.is_initialized():  # pragma: no cover - nothing here does
                return {"error": "CUDA was initialised in the template; a forked worker could not use it"}
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                self._become_worker(request, fds)  # never returns
            self.children[pid] = None
            return {"pid": pid}
        return {"error": f"unknown request {op!r}"}

    def _become_worker(self, request: dict, fds: list) -> None:
        """In the forked child: drop the template's descriptors and state, then serve as a worker."""
        code = 1
        try:
            signal.set_wakeup_fd(-1)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            os.setsid()  # its own session and process group, as a worker started with start_new_session
            requests, log, control = fds
            os.dup2(requests, 0)
            os.dup2(log, 1)
            os.dup2(log, 2)
            for fd in (requests, log, self.wake_r, self.wake_w):
                os.close(fd)
            for key in list(self.selector.get_map().values()):
                if isinstance(key.fileobj, socket.socket):
                    key.fileobj.close()
            self.selector.close()
            os.environ.clear()
            os.environ.update(request["env"])
            tempfile.tempdir = None  # computed again from this environment's TMPDIR
            os.chdir(request["cwd"])
            from fusionlint.confirm import worker

            sys.argv = [worker.__file__, "--serve", str(control)]
            code = worker.serve(control, request.get("memory_mb"), watch_requests=True)
        except BaseException:
            import traceback

            traceback.print_exc()
        finally:
            import atexit

            try:
                atexit._run_exitfuncs()  # what the worker's interpreter would run at its exit
                sys.stdout.flush()
                sys.stderr.flush()
            finally:
                os._exit(code)

    def _end_children(self) -> None:
        self._reap()
        for pid, code in list(self.children.items()):
            if code is None:
                procs.kill_group_and_tree(pid)
        deadline = time.monotonic() + 5
        while any(c is None for c in self.children.values()) and time.monotonic() < deadline:
            self._reap()
            time.sleep(0.01)


def main(argv: Optional[list[str]] = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 3:
        print("usage: main([OWNER_FD, READY_FD, LISTEN_FD])", file=sys.stderr)
        return 2
    owner_fd, ready_fd, listen_fd = (int(a) for a in args)
    from fusionlint.confirm import worker

    # No parent-death signal here: it fires when the *thread* that started this process ends, and a
    # run's pool thread that started it may finish long before the run. The owner's socket closes
    # when the owner ends or dies, whichever thread started us, and then this process ends.
    # The environment as started: importing inductor adds TORCHINDUCTOR_CACHE_DIR to it.
    digest = env_digest(os.environ)
    ready = os.fdopen(ready_fd, "w", encoding="utf-8", buffering=1)
    try:
        # What every worker needs before its first job: torch, the measurement, dynamo (every backend
        # traces with it) and AOTAutograd (aot_eager's and inductor's). Inductor itself is left to the
        # jobs that compile with it: on the CPU most use aot_eager (``orchestrate.auto_backend``).
        import torch  # noqa: F401
        import torch._dynamo  # noqa: F401
        import torch._functorch.aot_autograd  # noqa: F401

        from fusionlint.confirm import measure  # noqa: F401
    except BaseException as e:
        ready.write(f"failed {worker._one_line(e)}\n")
        return 1
    owner = socket.socket(fileno=owner_fd)
    listen = socket.socket(fileno=listen_fd) if listen_fd >= 0 else None
    server = _Server(owner, listen, digest)
    ready.write("ready\n")
    ready.close()
    return server.run()


if __name__ == "__main__":
    sys.exit(main())
