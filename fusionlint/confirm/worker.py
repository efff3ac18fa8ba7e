"""One confirm job in its own process: ``python -P -m fusionlint.confirm.worker JOB.json RESULT.json``.

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

    m = measure(
        example.model_factory,
        example.inputs_factory,
        device=device,
        exercise=exercise,
        user_files=user_files,
        timing_runs=int(job.get("timing_runs") or 0),
        timeline=bool(job.get("timeline")),
        grad=bool(getattr(example, "grad", False)),
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

    for variant in job.get("variants") or []:
        tag = variant.get("name", "variant")
        vres: dict = {}
        try:
            filename = os.path.realpath(job["path"]) + f".fusionlint-{tag}.py"
            vmod = ex.exec_variant(variant["source"], filename, module, tag)
            vexample = _variant_example(ex, vmod, job, sys_path)
            if vexample is None:
                vres["error"] = "the registered example lives in another module and builds the original class"
            else:
                if vexample.exercise is None and job.get("exercise") == "batch-sweep":
                    vexample.exercise = ex.batch_sweep_exercise(vexample.inputs_factory)
                vres["measurement"] = _measure_one(vexample, job, [filename], device, vexample.exercise)
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


def main(argv: Optional[list[str]] = None) -> int:
    args = sys.argv[1:] if argv is None else argv
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
