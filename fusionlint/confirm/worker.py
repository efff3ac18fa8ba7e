"""Confirm jobs in a process of their own.

Two modes: ``python -P -m fusionlint.confirm.worker JOB.json RESULT.json`` runs one job;
``python -P -m fusionlint.confirm.worker --serve FD [--memory-mb N]`` is a long-lived worker of the
pool (``fusionlint/confirm/pool.py``; a worker forked from a template, ``template.py``, runs the same
``serve``): it imports torch once, then reads one request per line on
stdin (``{"job": path, "result": path, "cwd": path}``), runs it in that scratch directory, writes the
result file, ends what the job's code started, forgets the job's modules and ``sys.path`` entries,
and writes ``done`` on the control pipe FD. Between jobs torch's compile caches and dynamo/inductor
config are reset, so a job cannot see the previous one's compiled code.

The job (a JSON file) names a user file and a target class/function, how to get an example,
the device and what to measure; the result (a JSON file, written whole or not at all) holds the
measurement, or why there is none. The parent reads that file, never this process's stdout or
stderr, so a process the user's code starts and leaves holding them cannot stall the run.
Everything the user's code prints goes to stderr (file descriptor 1 is redirected there).

The parent (``orchestrate.run_worker``) enforces the timeout and starts this process in a scratch
working directory, with the user's directories off ``sys.path`` (``-P``, no user PYTHONPATH) until
the job's own ``sys_path`` is added just before the user's module is imported: a project file named
``json.py`` must not replace the standard library's here. This process caps its own address space
on CPU (``RLIMIT_AS``) so a runaway allocation ends as a MemoryError here, not as the machine
swapping, and ends every process the user's code started before it exits (``procs``).
"""

from __future__ import annotations

import functools
import json
import os
import sys
import traceback
from typing import Any, Optional

from fusionlint.confirm import procs

OOM_MARKERS = ("can't allocate memory", "out of memory", "cannot allocate memory", "bad_alloc")


def _limit_memory(mb: Optional[int]) -> Optional[str]:
    if not mb:
        return None
    try:
        import resource

        limit = int(mb) * 1024 * 1024
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
        return None
    except Exception as e:  # pragma: no cover - platform without RLIMIT_AS
        return f"memory cap not applied: {e}"


def _is_oom(e: BaseException) -> bool:
    if isinstance(e, MemoryError):
        return True
    text = f"{type(e).__name__}: {e}".lower()
    return "outofmemory" in type(e).__name__.lower() or any(m in text for m in OOM_MARKERS)


def _configure_torch(job: dict) -> None:
    import torch

    threads = job.get("threads")
    if threads:
        torch.set_num_threads(int(threads))
    try:
        import torch._inductor.config as ic

        if job.get("compile_threads"):
            ic.compile_threads = int(job["compile_threads"])
    except Exception:  # pragma: no cover
        pass


def _measure_one(example, job: dict, user_files: list[str], device: str, exercise) -> dict:
    from fusionlint.confirm.measure import measure, measurement_to_dict

    backend = job.get("backend") or "inductor"
    m = measure(
        example.model_factory,
        example.inputs_factory,
        device=device,
        exercise=exercise,
        user_files=user_files,
        timing_runs=int(job.get("timing_runs") or 0),
        timeline=bool(job.get("timeline")),
        grad=bool(getattr(example, "grad", False)),
        compile_kwargs=None if backend == "inductor" else {"backend": backend},
        user_roots=job.get("user_roots") or (),
    )
    return measurement_to_dict(m)


def _eager_outputs(example) -> Optional[list]:
    import torch

    from fusionlint.confirm.measure import CallArgs, _snapshot

    torch.manual_seed(0)
    model = example.model_factory()
    torch.manual_seed(1)
    raw = example.inputs_factory()
    args, kwargs = (raw.args, raw.kwargs) if isinstance(raw, CallArgs) else (tuple(raw), {})
    with torch.no_grad():
        out = model(*args, **kwargs)
    return _snapshot(out)


def run(job: dict) -> dict:
    """Execute one job; every failure becomes ``{"ok": False, "reason": ...}``."""
    from fusionlint.confirm import examples as ex

    result: dict = {"ok": False, "reason": None, "hint": None, "example": None, "variants": {}}
    device = job.get("device", "cpu")
    try:
        _configure_torch(job)
        # The project's directories, then the user's PYTHONPATH (kept off sys.path until now).
        sys_path = list(job.get("sys_path") or []) + [
            p for p in (job.get("extra_path") or []) if p not in (job.get("sys_path") or [])
        ]
        module = ex.import_file(job["path"], job.get("module"), sys_path)
        example = ex.find_example(module, job["target"], registered=job.get("example"), sys_path=sys_path)
    except ex.ExampleError as e:
        result["reason"], result["hint"] = str(e), e.hint
        return result
    except BaseException as e:  # importing user code may raise anything
        if isinstance(e, KeyboardInterrupt):
            raise
        result["reason"] = ("out of memory while importing: " if _is_oom(e) else "import failed: ") + _one_line(e)
        return result
    result["example"] = {"kind": example.kind, "detail": example.detail}
    if example.grad:
        result["example"]["grad"] = True
    exercise = example.exercise
    if exercise is None and job.get("exercise") == "batch-sweep":
        exercise = ex.batch_sweep_exercise(example.inputs_factory)
        result["exercise"] = "batch-sweep"  # new sizes were ours: their recompiles are not the code's
    if example.exercise is None and job.get("mode_switch"):
        exercise = ex.mode_switch_exercise(example.inputs_factory, before=exercise)
    user_files = [os.path.realpath(p) for p in (job.get("user_files") or [job["path"]])]
    try:
        result["measurement"] = _measure_one(example, job, user_files, device, exercise)
        result["ok"] = True
    except BaseException as e:
        if isinstance(e, KeyboardInterrupt):
            raise
        result["reason"] = ("out of memory: " if _is_oom(e) else "measurement failed: ") + _one_line(e)
        return result
    meas = result["measurement"]
    for err in (meas.get("eager_error"), meas.get("compiled_error")):
        if err and _is_oom(RuntimeError(err)):
            result["ok"] = False
            result["reason"] = "out of memory: " + err
            return result

    failed = not (meas.get("eager_ok") and meas.get("compiled_ok"))
    for variant in job.get("variants") or []:
        tag = variant.get("name", "variant")
        if variant.get("when_failed") and not failed:
            continue  # the safe-fix rerun is needed only when the module itself could not run
        vres: dict = {"fixes": variant["fixes"]} if variant.get("fixes") else {}
        try:
            # A variant measured in place of the file keeps its name, so break sites and guards
            # land on the file's own lines (its fixes keep the line count: see orchestrate).
            filename = os.path.realpath(job["path"]) + ("" if variant.get("in_place") else f".fusionlint-{tag}.py")
            vmod = ex.exec_variant(variant["source"], filename, module, tag)
            vexample = _variant_example(ex, vmod, job, sys_path)
            if vexample is None:
                vres["error"] = "the registered example lives in another module and builds the original class"
            else:
                if vexample.exercise is None and job.get("exercise") == "batch-sweep":
                    vexample.exercise = ex.batch_sweep_exercise(vexample.inputs_factory)
                files = user_files if variant.get("in_place") else [filename]
                vres["measurement"] = _measure_one(vexample, job, files, device, vexample.exercise)
                try:
                    from fusionlint.confirm.measure import allclose

                    a, b = _eager_outputs(example), _eager_outputs(vexample)
                    vres["eager_allclose"] = allclose(a, b)
                except BaseException as e:
                    if isinstance(e, KeyboardInterrupt):
                        raise
                    vres["eager_allclose"] = None
                    vres["eager_compare_error"] = _one_line(e)
        except BaseException as e:
            if isinstance(e, KeyboardInterrupt):
                raise
            vres["error"] = _one_line(e)
        result["variants"][tag] = vres
    return result


def _variant_example(ex, vmod, job: dict, sys_path: list[str]):
    """The variant's own example: a registered maker is taken from the variant when it lives in the file."""
    spec = job.get("example")
    if not spec:
        return ex.find_example(vmod, job["target"], registered=None, sys_path=sys_path)
    mod_name, _, attr = spec.partition(":")
    if mod_name != job.get("module"):
        return None
    make = ex.resolve_target(vmod, attr)
    example = ex._from_maker(make, spec + " (variant)", "registered", getattr(vmod, "exercise", None))
    example.grad = bool(getattr(vmod, "GRAD", False))
    return example


def _one_line(e: BaseException) -> str:
    text = " ".join(str(e).split())
    return f"{type(e).__name__}: {text}"[:400]


def _write_result(path: str, result: dict) -> None:
    """Write the whole result or nothing: the parent treats a missing file as a crash."""
    tmp = path + ".part"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(json.dumps(result, default=_json_default))
    os.replace(tmp, path)


_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def _die_with_parent() -> None:
    """SIGKILL this worker when fusionlint dies (kill -9, a CI timeout): no worker outlives a run."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes
        import signal

        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # pragma: no cover
        pass


def _user_deps(roots: list[str]) -> list[str]:
    """The project files this job imported (cache entries are checked against their contents)."""
    from fusionlint.confirm.measure import UserCode

    is_user = UserCode([], roots)
    out = set()
    for mod in list(sys.modules.values()):
        f = getattr(mod, "__file__", None)
        if f and is_user(f) and os.path.isfile(f):
            out.add(os.path.realpath(f))
    return sorted(out)


def _forget_job(job: dict, baseline_path: list[str], baseline_modules: set) -> None:
    """Drop the modules this job imported and the sys.path entries it added."""
    for name in [n for n in sys.modules if n not in baseline_modules]:
        mod = sys.modules.get(name)
        f = getattr(mod, "__file__", None) or ""
        if name.startswith("_fusionlint_user_") or "__fusionlint_" in name or not _installed(f):
            sys.modules.pop(name, None)
    sys.path[:] = baseline_path
    import importlib

    importlib.invalidate_caches()


def _installed(path: str) -> bool:
    """A module file of the standard library or an installed package (kept between jobs)."""
    if not path:
        return True  # built-in or namespace module
    real = os.path.realpath(path)
    return any(real.startswith(d) for d in _kept_dirs())


@functools.lru_cache(maxsize=1)
def _kept_dirs() -> tuple:
    import sysconfig

    dirs = {sysconfig.get_paths().get(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    dirs.add(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))  # the fusionlint package
    return tuple(os.path.realpath(d) + os.sep for d in dirs if d)


def _reset_between_jobs() -> None:
    import torch

    from fusionlint.confirm.measure import _reset_torch

    _reset_torch()
    torch.set_grad_enabled(True)
    try:
        torch.set_default_dtype(torch.float32)
        torch.set_default_device(None)
    except Exception:  # pragma: no cover - older torch
        pass


def _die_with_requests(fd: int) -> None:
    """End this worker, and every process its job started, once no one can write to the request
    pipe ``fd`` any more: a worker forked by a template (``template``) is not its run's child, so
    the kernel's parent-death signal cannot tell it that the run has died."""
    import select
    import signal
    import threading

    def watch() -> None:
        poller = select.poll()
        poller.register(fd, 0)  # no events asked: poll still reports the hang-up of the last writer
        while True:
            for _fd, event in poller.poll():
                if event & (select.POLLHUP | select.POLLERR | select.POLLNVAL):
                    procs.kill_descendants()
                    os.killpg(0, signal.SIGKILL)  # the worker's own group: it leads its session

    threading.Thread(target=watch, name="fusionlint-requests-watch", daemon=True).start()


def serve(control_fd: int, memory_mb: Optional[int], *, watch_requests: bool = False) -> int:
    """The pool worker's loop (see the module docstring). ``watch_requests``: see ``_die_with_requests``."""
    os.set_inheritable(control_fd, False)
    # Requests arrive on our stdin; the user's code gets /dev/null as stdin, so it cannot read them.
    requests = os.fdopen(os.dup(0), "r", encoding="utf-8")
    os.set_inheritable(requests.fileno(), False)
    if watch_requests:
        _die_with_requests(requests.fileno())
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    procs.become_subreaper()
    _die_with_parent()
    note = _limit_memory(memory_mb)
    control = os.fdopen(control_fd, "w", encoding="utf-8", buffering=1)
    try:
        import torch  # noqa: F401  - once per worker: the point of the pool

        from fusionlint.confirm import measure  # noqa: F401
        from fusionlint.confirm.measure import isolated_torch_config
    except BaseException as e:
        control.write(f"failed {_one_line(e)}\n")
        return 1
    baseline_path = list(sys.path)
    baseline_modules = set(sys.modules)
    home = os.getcwd()
    control.write("ready\n")
    for line in requests:
        try:
            req = json.loads(line)
            with open(req["job"], encoding="utf-8") as fh:
                job = json.load(fh)
        except (OSError, ValueError, KeyError, TypeError) as e:
            control.write(f"bad {_one_line(e)}\n")
            continue
        job["compile_threads"] = 1  # compile in-process: a compile pool would be ended with the job's processes
        try:
            os.chdir(req.get("cwd") or home)
            with isolated_torch_config():
                result = run(job)
            result["deps"] = _user_deps(job.get("user_roots") or [])
        except BaseException as e:  # last resort: still answer in JSON
            result = {"ok": False, "reason": f"worker error: {_one_line(e)}", "trace": traceback.format_exc()[-2000:]}
        if note:
            result.setdefault("notes", []).append(note)
        procs.kill_descendants()
        procs.reap_children()
        os.chdir(home)
        try:
            _write_result(req["result"], result)
            control.write("done\n")
        except OSError as e:
            control.write(f"bad cannot write the result: {e}\n")
        try:  # after answering: the parent reads the result while this process cleans up
            _forget_job(job, baseline_path, baseline_modules)
            _reset_between_jobs()
        except Exception:  # pragma: no cover - a broken reset: the next job still runs
            pass
    return 0


def main(argv: Optional[list[str]] = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["--serve"] and len(args) in (2, 4):
        memory = int(args[3]) if len(args) == 4 and args[2] == "--memory-mb" else None
        return serve(int(args[1]), memory)
    if len(args) != 2:
        print("usage: python -m fusionlint.confirm.worker JOB.json RESULT.json", file=sys.stderr)
        return 2
    job_path, result_path = args
    os.dup2(2, 1)  # the user's prints (and C-level writes) go to stderr
    sys.stdout = sys.stderr
    # Orphans of the user's code (setsid'd, double-forked) become our children, so we can end them.
    procs.become_subreaper()
    try:
        with open(job_path, encoding="utf-8") as fh:
            job = json.load(fh)
    except (OSError, ValueError) as e:
        _write_result(result_path, {"ok": False, "reason": f"bad job: {e}"})
        return 2
    note = None
    if not str(job.get("device", "cpu")).startswith("cuda"):
        note = _limit_memory(job.get("memory_mb"))
    try:
        result = run(job)
    except BaseException as e:  # last resort: still answer in JSON
        result = {"ok": False, "reason": f"worker error: {_one_line(e)}", "trace": traceback.format_exc()[-2000:]}
    if note:
        result.setdefault("notes", []).append(note)
    # End what the user's code started before answering, so nothing outlives the job.
    procs.kill_descendants()
    procs.reap_children()
    _write_result(result_path, result)
    return 0


def _json_default(obj: Any) -> Any:
    if isinstance(obj, (set, frozenset)):
        return sorted(obj)
    return str(obj)


if __name__ == "__main__":
    sys.exit(main())
