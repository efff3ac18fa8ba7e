"""The confirm pass: find the modules to run, run them on pooled workers, match the results.

``confirm_findings(result, settings=..., device=..., ...)`` runs every module of the run that has
an example (``scope="all"``; ``"flagged"``: only modules with findings), fills
``Finding.confirmation`` for every finding of the selected shard and appends FL900 (graph break)
and FL902 (recompile) findings for what no static finding explains. Each result is cached as soon
as its module finishes, so a run that is interrupted or killed keeps what it measured.
torch is never imported here: workers do that (``python -m fusionlint.confirm.worker``), and the
device is probed in a subprocess too, so the static pass stays torch-free.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from fusionlint.confirm import match
from fusionlint.confirm.cache import ResultCache, file_digest, job_key, torch_version
from fusionlint.confirm.pool import DEFAULT_MAX_JOBS, WorkerProcess
from fusionlint.confirm.template import Templates
from fusionlint.rule import Effect, Finding, RunResult

DEFAULT_TIMEOUT = 120.0
DEFAULT_MEMORY_MB = 8192
DEFAULT_TIMING_RUNS = 10
# Effects that only inductor's output shows (fused kernels, syncs in generated code, numerics).
# Breaks and recompiles need no code generation: "aot_eager" (Dynamo + AOT autograd, no codegen)
# shows the same ones as inductor at a fraction of the cost. Plain "eager" is not enough: a float
# attribute that changes between calls recompiles up to the limit under AOT autograd (its
# tensorify pass specializes it again) but only once under "eager" (measured on the FL201 fixture,
# torch 2.13 CPU: eager 1 recompile; aot_eager and inductor 8 and the limit, 3.8 s vs 46.7 s).
# On a CPU a host sync is counted by its sync-prone ops (`.item()`, `nonzero`), which run the same
# under aot_eager: the FL101-FL103 fixtures count 1 (bad) and 0 (good) with either backend (torch
# 2.13 CPU); on CUDA the DtoH copies inside inductor's code are part of the count.
_INDUCTOR_EFFECTS = frozenset({Effect.EXTRA_KERNEL, Effect.HOST_SYNC, Effect.SILENT_DIVERGENCE, Effect.RUNTIME_ERROR})
_INDUCTOR_EFFECTS_CPU = _INDUCTOR_EFFECTS - {Effect.HOST_SYNC}
BACKENDS = ("auto", "eager", "aot_eager", "inductor")
BUDGET_REASON = "not run: the --confirm-budget of {budget:g} s was spent before this module started"
INSTALL_HINT = "the confirm pass needs torch: install fusionlint[confirm] (pip install 'fusionlint[confirm]')"


def auto_backend(effects, device: str = "cuda") -> str:
    """The backend that shows ``effects`` on ``device`` (``--confirm-backend auto``): Dynamo alone
    decides graph breaks and recompiles, and AOTAutograd's guards come with aot_eager, so only
    kernels, numerics and (on CUDA) syncs need inductor's code."""
    needs = _INDUCTOR_EFFECTS if device.startswith("cuda") else _INDUCTOR_EFFECTS_CPU
    return "inductor" if {Effect(e) for e in effects} & needs else "aot_eager"


class ConfirmError(Exception):
    """The confirm pass cannot run at all (no torch, no GPU...): exit 2 with this message."""


@dataclass
class Unit:
    """One module (class or compiled function) of one file, with the findings inside it."""

    path: str  # as shown in findings (root-relative)
    abs_path: str
    target: Optional[str]  # "Model", "Outer.Inner", "step"; None: not inside any compiled code
    findings: list[Finding] = field(default_factory=list)
    source: str = "flagged"  # "flagged" (it has findings), or how discover found its example

    @property
    def label(self) -> str:
        return f"{self.path}::{self.target}" if self.target else self.path

    @property
    def sort_key(self) -> tuple:
        return (self.path, self.target or "")


@dataclass
class UnitResult:
    unit: Unit
    worker: dict
    cached: bool = False
    seconds: float = 0.0


# ---------------------------------------------------------------------------- environment
def check_available() -> None:
    import importlib.util

    if importlib.util.find_spec("torch") is None:
        raise ConfirmError(INSTALL_HINT)


def probe_torch(timeout: float = 120.0) -> dict:
    """torch's version and the visible CUDA devices, asked of a fresh interpreter."""
    code = (
        "import json, torch\n"
        "cuda = torch.cuda.is_available()\n"
        "print(json.dumps({'version': torch.__version__, 'cuda': cuda,"
        " 'devices': [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())] if cuda else []}))\n"
    )
    try:
        with tempfile.TemporaryDirectory(prefix="fusionlint-probe-") as scratch:
            # -P and a scratch cwd: a project file named json.py (or torch.py) must not be imported.
            proc = subprocess.run(
                [sys.executable, "-P", "-c", code],
                capture_output=True, text=True, timeout=timeout, env=_worker_env(None), cwd=scratch,
            )
    except subprocess.TimeoutExpired:
        raise ConfirmError("importing torch timed out") from None
    if proc.returncode != 0:
        tail = (proc.stderr or "").strip().splitlines()[-1:] or ["unknown error"]
        if "No module named 'torch'" in (proc.stderr or ""):
            raise ConfirmError(INSTALL_HINT)
        raise ConfirmError(f"cannot import torch: {tail[0]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def device_info(requested: Optional[str], *, require_gpu: bool = False) -> dict:
    """What ``resolve_device`` needs to know of torch: for the CPU, the installed version from package
    metadata; otherwise ``probe_torch``. Nothing is asked of a fresh interpreter for the CPU: importing
    torch there costs seconds, most of a run served from the cache, and a torch that cannot start shows
    in each module's answer."""
    if (requested or "").strip().lower() == "cpu" and not require_gpu:
        return {"version": torch_version(), "cuda": False, "devices": []}
    return probe_torch()


def resolve_device(requested: Optional[str], info: dict, *, require_gpu: bool = False) -> str:
    req = (requested or "auto").strip().lower()
    if req not in ("auto", "cpu", "cuda") and not (req.startswith("cuda:") and req[5:].isdigit()):
        raise ConfirmError(f"unknown device {requested!r}: use cpu, cuda or cuda:N")
    has_gpu = bool(info.get("cuda"))
    if require_gpu and not has_gpu:
        raise ConfirmError(
            f"--confirm-on-gpu needs a CUDA GPU, but torch {info.get('version')} sees none; "
            "run `fusionlint check --confirm --device cpu` instead"
        )
    if require_gpu and req == "cpu":
        raise ConfirmError("--confirm-on-gpu conflicts with --device cpu")
    if req == "auto":
        return "cuda" if has_gpu else "cpu"
    if req.startswith("cuda"):
        if not has_gpu:
            raise ConfirmError(
                f"--device {req}: torch {info.get('version')} sees no CUDA GPU; use --device cpu"
            )
        if ":" in req and int(req[5:]) >= len(info.get("devices") or []):
            raise ConfirmError(f"--device {req}: only {len(info.get('devices') or [])} CUDA device(s) visible")
    return req


def parse_shard(text: Optional[str]) -> Optional[tuple[int, int]]:
    """``"2/4"`` -> (2, 4); K is 1-based."""
    if text is None:
        return None
    try:
        k, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise ConfirmError(f"--shard {text!r}: expected K/N, e.g. 1/4") from None
    if n < 1 or not 1 <= k <= n:
        raise ConfirmError(f"--shard {text!r}: need 1 <= K <= N")
    return (k, n)


# ---------------------------------------------------------------------------- grouping
def _target_from_chain(chain: Optional[str]) -> Optional[str]:
    if not chain:
        return None
    root = chain.split("→")[0].strip()
    if "." in root:
        head, last = root.rsplit(".", 1)
        if last in ("forward", "backward"):
            return head.split(".<locals>")[0]
    return root.split(".<locals>")[0]


def _file_default_target(abs_path: str, cache: dict) -> Optional[str]:
    """For a finding outside any class (e.g. at a ``torch.compile(...)`` call): the file's example."""
    _enclosing_class(abs_path, 0, cache)
    names = cache.get(("toplevel", abs_path), set())
    if "fusionlint_example" in names:
        from fusionlint.confirm.examples import EXAMPLE_TARGET

        return EXAMPLE_TARGET
    if "Model" in names and "example_inputs" in names:
        return "Model"
    return None


def _enclosing_class(abs_path: str, line: int, cache: dict) -> Optional[str]:
    if abs_path not in cache:
        spans = []
        try:
            tree = ast.parse(Path(abs_path).read_text(encoding="utf-8"))
        except (OSError, SyntaxError, ValueError, UnicodeDecodeError):
            tree = None
        if tree is not None:
            _class_spans(tree.body, "", spans)
            cache[("toplevel", abs_path)] = {
                n.name for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            }
        cache[abs_path] = spans
    inside = [s for s in cache[abs_path] if s[0] <= line <= s[1]]
    return max(inside, key=lambda s: s[0])[2] if inside else None


def _class_spans(body: list, prefix: str, spans: list) -> None:
    """(first line, last line, dotted name) of each class in ``body``, nested ones included (a module-level
    function, not a closure calling itself: that would keep the file's tree alive in a reference cycle)."""
    for node in body:
        if isinstance(node, ast.ClassDef):
            name = f"{prefix}{node.name}"
            spans.append((node.lineno, node.end_lineno or node.lineno, name))
            _class_spans(node.body, name + ".", spans)


def collect_units(findings: list[Finding], root: Path, paths: Optional[list[str]] = None) -> list[Unit]:
    """One unit per (file, module to run) for the findings.

    A finding's chain can start in another file (``Gate.forward → models.helpers.soft_limit``, from
    the project model): the module to run is then the chain's first class, in the file of the run
    (``paths``) that defines it, and the finding is matched against what running it records.
    """
    from fusionlint.files import display_path

    units: dict[tuple, Unit] = {}
    spans: dict = {}
    for f in findings:
        ap = match.abs_path(f.path, root)
        shown = f.path
        target = _target_from_chain(f.context)
        if target and not _defines(ap, target, spans):
            home = next((p for p in sorted(paths or ()) if _defines(p, target, spans)), None)
            if home is not None:
                ap, shown = home, display_path(Path(home), root)
        target = target or _enclosing_class(ap, f.line, spans) or _file_default_target(ap, spans)
        key = (shown, target)
        if key not in units:
            units[key] = Unit(shown, ap, target)
        units[key].findings.append(f)
    return sorted(units.values(), key=lambda u: u.sort_key)


def _defines(abs_path: str, class_name: str, cache: dict) -> bool:
    """Does this file define ``class_name`` (possibly nested, ``Outer.Inner``)?"""
    _enclosing_class(abs_path, 0, cache)
    return any(name == class_name for _, _, name in cache[abs_path])


def shard_units(units: list[Unit], shard: Optional[tuple[int, int]]) -> list[Unit]:
    """Deterministic split: the i-th unit in (path, target) order goes to shard i mod N."""
    if shard is None:
        return units
    k, n = shard
    return [u for i, u in enumerate(sorted(units, key=lambda u: u.sort_key)) if i % n == k - 1]


# ---------------------------------------------------------------------------- jobs
def _sys_path(root: Path) -> list[str]:
    out = [str(Path(root).resolve())]
    src = Path(root) / "src"
    if src.is_dir():
        out.append(str(src.resolve()))
    return out


def _registered_example(unit: Unit, examples: dict, sys_path: list[str]) -> Optional[str]:
    from fusionlint.confirm.examples import module_name_for

    if not unit.target or not examples:
        return None
    mod = module_name_for(unit.abs_path, sys_path)
    for key, spec in examples.items():
        if ":" not in key:
            continue
        kmod, kattr = key.split(":", 1)
        if kattr == unit.target and (kmod == mod or (mod and mod.endswith("." + kmod)) or (
            mod is None and kmod == Path(unit.abs_path).stem
        )):
            return spec
    return None


def _example_file(spec: Optional[str], sys_path: list[str]) -> list[str]:
    if not spec:
        return []
    mod = spec.split(":", 1)[0].replace(".", os.sep)
    out = []
    for base in sys_path:
        for cand in (Path(base) / f"{mod}.py", Path(base) / mod / "__init__.py"):
            if cand.is_file():
                out.append(str(cand))
    return out


def fixed_variant(text: str, findings: list[Finding], effect: Effect, also: Optional[list[Finding]] = None) -> Optional[str]:
    """The file with the fixes of the findings claiming ``effect`` applied (None: no such fix);
    ``also``: findings whose fixes are applied too (and not counted as the variant's)."""
    from fusionlint.fixes import apply_edits

    fixes = [f.fix.edits for f in findings if f.fix is not None and effect in tuple(Effect(e) for e in f.effects)]
    if not fixes:
        return None
    fixes += [f.fix.edits for f in also or [] if f.fix is not None]
    try:
        new, count = apply_edits(text, fixes)
    except Exception:  # an edit that no longer fits the file: no variant
        return None
    return new if count and new != text else None


def _wants_mode_switch(findings) -> bool:
    from fusionlint.registry import all_rules

    rules = all_rules()
    return any(getattr(rules.get(f.code), "confirm_exercise", "") == "mode-switch" for f in findings)


def build_job(
    unit: Unit,
    *,
    root: Path,
    device: str,
    examples: dict,
    user_files: list[str],
    timing_runs: int,
    timeline: bool,
    memory_mb: int,
    threads: int,
    variants: Optional[list[dict]] = None,
    backend: str = "auto",
) -> dict:
    from fusionlint.confirm.examples import module_name_for

    sys_path = _sys_path(root)
    effects = {Effect(e) for f in unit.findings for e in f.effects}
    if backend == "auto":
        backend = "inductor" if timeline else auto_backend(effects, device)
    if backend != "inductor":
        timing_runs = 0  # times of eager fragments would say nothing about compiled speed
    job = {
        "path": unit.abs_path,
        "module": module_name_for(unit.abs_path, sys_path),
        "sys_path": sys_path,
        # The user's PYTHONPATH: the worker starts without it and adds it after sys_path.
        "extra_path": _user_pythonpath(),
        "target": unit.target,
        "example": _registered_example(unit, examples, sys_path),
        "device": device,
        "timing_runs": timing_runs,
        "timeline": timeline,
        "exercise": "batch-sweep" if Effect.RECOMPILE in effects else None,
        "mode_switch": _wants_mode_switch(unit.findings),
        "user_files": sorted({unit.abs_path, *user_files}),
        # Any file under these (outside installed packages) is the user's: a break in a helper of
        # another project file is reported in that file.
        "user_roots": sys_path,
        "backend": backend,
        "memory_mb": memory_mb,
        "threads": threads,
        "compile_threads": threads,
    }
    chosen_by_caller = variants is not None
    if variants is None and Effect.EXTRA_KERNEL in effects:
        try:
            text = Path(unit.abs_path).read_text(encoding="utf-8")
        except OSError:
            text = None
        # When the module fails because of a runtime-error finding, its safe fix is in both the
        # module measured (the safe-fix rerun) and its "fixed" variant, so the two compare.
        also = [f for f in unit.findings if f in _failing_with_safe_fix(unit)]
        new = fixed_variant(text, unit.findings, Effect.EXTRA_KERNEL, also=also) if text is not None else None
        variants = [{"name": "fixed", "source": new}] if new else []
    variants = list(variants or [])
    if not chosen_by_caller:
        safe = safe_fix_variant(unit)
        if safe is not None:
            variants.append(safe)
    job["variants"] = variants
    return job


def _failing_with_safe_fix(unit: Unit) -> list[Finding]:
    """The unit's runtime-error findings that have a safe fix (FL301)."""
    from fusionlint.rule import Applicability

    return [
        f for f in unit.findings
        if Effect.RUNTIME_ERROR in tuple(Effect(e) for e in f.effects)
        and f.fix is not None and f.fix.applicability is Applicability.SAFE
    ]


def safe_fix_variant(unit: Unit) -> Optional[dict]:
    """A rerun with the safe fixes of the unit's runtime-error findings applied in memory.

    When the example raises because of such a finding (FL301 ``.view()`` after ``.permute()``),
    nothing else in the module can be measured; the worker then runs this variant, in place of
    the file and under its name, and the other findings are confirmed on it. Only fixes that keep
    every line where it was qualify, so the measured lines are the file's lines.
    """
    from fusionlint.fixes import apply_edits

    failing = _failing_with_safe_fix(unit)
    if not failing or len(failing) == len(unit.findings):
        return None
    try:
        text = Path(unit.abs_path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    try:
        new, count = apply_edits(text, [f.fix.edits for f in failing])
    except Exception:  # an edit that no longer fits the file: no rerun
        return None
    if not count or new == text or new.count("\n") != text.count("\n"):
        return None
    return {
        "name": "safe-fixes", "source": new, "in_place": True, "when_failed": True,
        "fixes": [{"code": f.code, "line": f.line} for f in failing],
    }


def _fusionlint_dir() -> str:
    """The directory holding the fusionlint package (site-packages, or a source checkout)."""
    return str(Path(__file__).resolve().parent.parent.parent)


def _user_pythonpath() -> list[str]:
    return [os.path.abspath(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]


def _worker_env(gpu: Optional[str]) -> dict:
    """The environment of the probe and the workers: only fusionlint's own directory on PYTHONPATH.

    The user's PYTHONPATH entries travel in the job instead (``extra_path``) and are added once
    torch and fusionlint are imported, so none of their modules can shadow the standard library.
    """
    env = dict(os.environ)
    env["PYTHONPATH"] = _fusionlint_dir()
    env.pop("PYTHONSTARTUP", None)
    # An address in this process that inductor writes into os.environ before it loads a compiled
    # library (every process sets its own): worthless to a worker, and it made the workers' environment
    # differ from the one a shared template started in after any in-process inductor compile.
    env.pop("_TORCHINDUCTOR_PYOBJECT_TENSOR_DATA_PTR", None)
    env.setdefault("PYTHONHASHSEED", "0")
    env["PYTHONUNBUFFERED"] = "1"
    if gpu is not None:
        env["CUDA_VISIBLE_DEVICES"] = gpu
    return env


def run_worker(job: dict, timeout: float, gpu: Optional[str] = None, templates: Optional[Templates] = None) -> dict:
    """Run one job on a worker of its own, then end it: see ``pool.WorkerProcess`` for the box
    (own session, scratch cwd, ``-P``, result via a file, the process tree ended). ``templates``:
    fork the worker from one (torch imported already) instead of starting an interpreter."""
    worker = WorkerProcess(_worker_env(gpu), memory_mb=_job_memory(job), max_jobs=1, templates=templates)
    try:
        return worker.run(job, timeout)
    finally:
        worker.close()


def _job_memory(job: dict) -> Optional[int]:
    """The address-space cap of a CPU worker (CUDA: none, the driver maps far more than it uses)."""
    if str(job.get("device", "cpu")).startswith("cuda"):
        return None
    return int(job.get("memory_mb") or 0) or None


# ---------------------------------------------------------------------------- the pass
def confirm_findings(
    result: RunResult,
    *,
    settings: Any,
    device: Optional[str] = "auto",
    jobs: Optional[int] = None,
    shard: Optional[tuple[int, int]] = None,
    timeout: Optional[float] = None,
    report_path: Optional[Path] = None,
    require_gpu: bool = False,
    use_cache: bool = True,
    progress: Any = None,
    scope: str = "all",
    inferred: Optional[bool] = None,
    budget: Optional[float] = None,
    backend: Optional[str] = None,
) -> list[UnitResult]:
    """Confirm the findings of ``result`` in place (``Finding.confirmation``) and add FL900/FL902.

    ``scope="all"`` also runs the modules of ``result.paths`` that have an example and no finding;
    ``inferred`` (default: the config's ``inferred``) lets that include guessed inputs; ``budget``
    (seconds) stops starting modules once spent (the rest: ``unconfirmed``, reason "budget").
    ``progress`` is a line callback or a :class:`progress.Progress`.
    Raises ConfirmError when the pass cannot run at all (exit 2). Returns per-module results.
    """
    from fusionlint.confirm import discover
    from fusionlint.confirm.progress import as_progress

    check_available()
    info = device_info(device, require_gpu=require_gpu)
    device = resolve_device(device, info, require_gpu=require_gpu)
    cfg = dict(getattr(settings, "confirm", {}) or {})
    root = Path(getattr(settings, "root", Path.cwd()))
    timeout = float(timeout or cfg.get("timeout", DEFAULT_TIMEOUT))
    timing_runs = int(cfg.get("timing-runs", cfg.get("timing_runs", DEFAULT_TIMING_RUNS)))
    memory_mb = int(cfg.get("memory-mb", cfg.get("memory_mb", DEFAULT_MEMORY_MB)))
    max_jobs = int(cfg.get("modules-per-worker", DEFAULT_MAX_JOBS))
    backend = backend or cfg.get("backend") or "auto"
    if inferred is None:
        inferred = bool(cfg.get("inferred", False))
    if budget is None and cfg.get("budget"):
        budget = float(cfg["budget"])
    examples = getattr(settings, "examples", {}) or {}
    gpus: list[Optional[str]] = [None]
    if device == "cuda" and len(info.get("devices") or []) > 1:
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        ids = [x for x in visible.split(",") if x.strip()] if visible else [str(i) for i in range(len(info["devices"]))]
        gpus = ids
    if jobs is None or jobs < 1:
        jobs = min(len(gpus) * _WORKERS_PER_GPU, default_cpu_jobs()) if device.startswith("cuda") else default_cpu_jobs()

    flagged = collect_units(result.findings, root, list(getattr(result, "paths", []) or []))
    units = list(flagged)
    if scope == "all":
        units += discovered_units(
            flagged, discover.candidates(list(getattr(result, "paths", []) or []), examples=examples,
                                         sys_path=_sys_path(root), inferred=inferred), root,
        )
    units = shard_units(sorted(units, key=lambda u: u.sort_key), shard)
    # Modules with findings first: under a budget, the ones that answer a finding matter most.
    runnable = sorted((u for u in units if u.target), key=lambda u: (not u.findings, u.sort_key))
    for u in units:
        if not u.target:
            for f in u.findings:
                f.confirmation = {
                    "status": match.UNCONFIRMED,
                    "reason": "not inside a module or function that torch.compile traces",
                    "summary": "not inside a module or function that torch.compile traces",
                }
    finding_files = sorted({match.abs_path(f.path, root) for f in result.findings})
    cache = ResultCache(root, enabled=use_cache)
    tv = torch_version()
    jobs = max(1, min(jobs, len(runnable) or 1))
    threads = worker_threads(device, jobs)
    reporter = as_progress(progress)

    from fusionlint import __version__

    def job_for(unit: Unit, gpu: Optional[str]) -> tuple[dict, str]:
        job = build_job(
            unit,
            root=root,
            device="cuda:0" if gpu is not None else device,
            examples=examples,
            user_files=finding_files,
            timing_runs=timing_runs,
            timeline=report_path is not None,
            memory_mb=memory_mb,
            threads=threads,
            backend=backend,
        )
        # The key covers the module's own file and its example's; the other project files it
        # imported are checked on each hit (``deps``), so an edit to a helper re-runs it.
        files = [unit.abs_path] + _example_file(job["example"], job["sys_path"])
        return job, job_key(job, files, tv, __version__)

    queue = list(runnable)
    lock = threading.Lock()
    done: dict[int, UnitResult] = {}
    order = {id(u): i for i, u in enumerate(runnable)}
    stop = threading.Event()
    live: list[WorkerProcess] = []
    deadline = time.monotonic() + budget if budget else None

    def one(unit: Unit, worker: WorkerProcess, gpu: Optional[str]) -> UnitResult:
        job, key = job_for(unit, gpu)
        hit = cache.get(key)
        if hit is not None and deps_unchanged(hit):
            return UnitResult(unit, hit, cached=True)
        if deadline is not None and time.monotonic() >= deadline:
            return UnitResult(unit, {"ok": False, "reason": BUDGET_REASON.format(budget=budget), "budget": True})
        reporter.running(unit.label)
        t0 = time.perf_counter()
        res = worker.run(job, timeout)
        res.setdefault("device", device)
        res.setdefault("torch", info.get("version"))
        if res.get("ok"):
            res["dep_digests"] = {p: file_digest(p) for p in res.get("deps") or []}
        cache.put(key, res)  # now, not at the end: a killed run keeps it
        return UnitResult(unit, res, seconds=round(time.perf_counter() - t0, 2))

    def slot(index: int) -> None:
        gpu = gpus[index % len(gpus)] if device == "cuda" and len(gpus) > 1 else None
        env = _worker_env(gpu)
        worker = WorkerProcess(env, memory_mb=None if device.startswith("cuda") else memory_mb or None,
                               max_jobs=max_jobs, templates=templates)
        with lock:
            live.append(worker)
        try:
            while not stop.is_set():
                with lock:
                    if not queue:
                        return
                    unit = queue.pop(0)
                try:
                    ur = one(unit, worker, gpu)
                except Exception as exc:  # a bug of ours: this module's answer, not the run's end
                    worker.kill()
                    ur = UnitResult(unit, {"ok": False, "reason": f"internal error: {type(exc).__name__}: {exc}"})
                with lock:
                    done[order[id(unit)]] = ur
                reporter.finished(ur)
        finally:
            worker.close()

    reporter.start(len(runnable))
    threads_ = [threading.Thread(target=slot, args=(i,), daemon=True) for i in range(jobs)] if runnable else []
    # Workers fork from a template that imports torch once (one per GPU's environment); it starts
    # with the first worker process, so a run answered from the cache starts none.
    templates = Templates()
    try:
        for t in threads_:
            t.start()
        for t in threads_:
            while t.is_alive():
                t.join(0.2)  # short joins: Ctrl-C reaches this thread
    except BaseException:
        stop.set()
        with lock:
            for w in live:
                w.terminate()
        raise
    finally:
        reporter.stop()
        templates.close()
    results = [done[i] for i in sorted(done)]
    apply_results(result, results, root, settings)
    if report_path is not None:
        from fusionlint.report.html import write_report

        write_report(Path(report_path), result, results, root=root, docs_url=getattr(settings, "docs_url", None))
    return results


# Workers sharing one GPU: compiling is CPU work, so one worker per GPU leaves the GPU idle most of
# the time. Measured on an H200 (torch 2.11, 16 cores) over fixtures/: 1 worker 134 s, 4 workers 56 s.
_WORKERS_PER_GPU = 4
_WORKER_MEMORY_MB = 1024  # per CPU worker: torch imported + two tiny modules measured was 340-370 MB RSS (torch 2.13 CPU); room for real models


JOBS_ENV = "FUSIONLINT_CONFIRM_JOBS"


def worker_threads(device: str, jobs: int) -> int:
    """torch's (and inductor's compile) threads per worker: the cores shared out among the workers;
    one on CUDA, and one under ``FUSIONLINT_CONFIRM_JOBS``, which says other work shares the machine
    (more than one compile thread also starts inductor's pool of compile processes)."""
    if device.startswith("cuda") or os.environ.get(JOBS_ENV, "").strip():
        return 1
    return max(1, (os.cpu_count() or 1) // jobs)


def default_cpu_jobs() -> int:
    """One worker per CPU core, but no more than the free memory holds (each imports torch);
    ``FUSIONLINT_CONFIRM_JOBS`` sets the number instead (a machine shared with other jobs: each
    worker costs seconds of CPU to import torch and dynamo before it runs anything)."""
    wanted = os.environ.get(JOBS_ENV, "").strip()
    if wanted:
        if not wanted.isdigit() or int(wanted) < 1:
            raise ConfirmError(f"{JOBS_ENV}={wanted!r}: expected a whole number of workers, 1 or more")
        return int(wanted)
    cores = max(1, os.cpu_count() or 1)
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            avail_kb = next(int(ln.split()[1]) for ln in fh if ln.startswith("MemAvailable:"))
    except (OSError, StopIteration, ValueError, IndexError):
        return cores
    return max(1, min(cores, avail_kb // 1024 // _WORKER_MEMORY_MB))


def discovered_units(flagged: list[Unit], found: list, root: Path) -> list[Unit]:
    """Units for the modules with an example that no finding already brings in."""
    from fusionlint.confirm.discover import CONVENTION, FIXTURE
    from fusionlint.files import display_path

    have = {(u.abs_path, u.target) for u in flagged}
    files_with_units = {u.abs_path for u in flagged if u.target}
    out = []
    for c in found:
        if (c.abs_path, c.target) in have:
            continue
        if c.source in (CONVENTION, FIXTURE) and c.abs_path in files_with_units:
            continue  # the file's example already runs for its findings
        out.append(Unit(display_path(Path(c.abs_path), root), c.abs_path, c.target, source=c.source))
    return out


def deps_unchanged(cached: dict) -> bool:
    """A cached result still holds when no project file its module imported has changed."""
    return all(file_digest(p) == d for p, d in (cached.get("dep_digests") or {}).items())


def apply_results(result: RunResult, results: list[UnitResult], root: Path, settings: Any = None) -> None:
    """Fill confirmations and append FL900 findings (selection and suppression comments honoured)."""
    from fusionlint.config import is_selected
    from fusionlint.files import display_path
    from fusionlint.suppress import Suppressions

    texts: dict[str, Optional[str]] = {}

    def text_of(path: str) -> Optional[str]:
        if path not in texts:
            try:
                texts[path] = Path(path).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                texts[path] = None
        return texts[path]

    root_real = os.path.realpath(root)

    def display(path: str) -> Optional[str]:
        if not (path == root_real or path.startswith(root_real.rstrip(os.sep) + os.sep)):
            return None
        return display_path(Path(path), Path(root))

    existing = {(f.path, f.line, f.code) for f in result.findings}
    new: list[Finding] = []
    for ur in results:
        for f in ur.unit.findings:
            f.confirmation = match.confirmation_for(f, ur.worker, root, ur.unit.label)
            if ur.cached:
                f.confirmation["cached"] = True
        lines_of = lambda p: (text_of(p) or "").splitlines()  # noqa: E731
        runtime = match.runtime_break_findings(ur.worker, result.findings, root, ur.unit.label, display, lines_of)
        runtime += match.runtime_recompile_findings(
            ur.worker, result.findings, root, ur.unit.label, display, lines_of, ur.unit.findings
        )
        for f in runtime:
            key = (f.path, f.line, f.code)
            if key in existing:
                continue
            if settings is not None and not is_selected(f.code, settings, default_enabled=True, path=f.path):
                continue
            text = text_of(match.abs_path(f.path, root))
            if text is not None and Suppressions.from_source(text).is_suppressed(f.code, f.line, f.end_line):
                continue
            existing.add(key)
            new.append(f)
    result.findings.extend(new)
    result.findings.sort(key=lambda f: f.sort_key)


# ---------------------------------------------------------------------------- merging shards
def merge_documents(docs: list[dict]) -> dict:
    """Merge JSON reports of several shards: union of findings, the best confirmation of each."""
    if not docs:
        raise ConfirmError("nothing to merge")
    out = {k: v for k, v in docs[0].items() if k not in ("findings", "errors")}
    findings: dict[tuple, dict] = {}
    errors: dict[tuple, dict] = {}
    for doc in docs:
        if not isinstance(doc, dict) or not isinstance(doc.get("findings"), list):
            raise ConfirmError("not a fusionlint JSON report (no 'findings' list)")
        for f in doc["findings"]:
            key = (f.get("path"), f.get("line"), f.get("column"), f.get("end_line"), f.get("end_column"), f.get("code"))
            if key in findings:
                best = match.better(findings[key].get("confirmation"), f.get("confirmation"))
                if best is not None:
                    findings[key]["confirmation"] = best
            else:
                findings[key] = dict(f)
        for e in doc.get("errors") or []:
            errors.setdefault((e.get("path"), e.get("line"), e.get("message")), e)
    out["findings"] = sorted(
        findings.values(), key=lambda f: (f.get("path") or "", f.get("line") or 0, f.get("column") or 0, f.get("code") or "")
    )
    out["errors"] = list(errors.values())
    return out


def merge_files(paths: list[Path]) -> dict:
    docs = []
    for p in paths:
        try:
            docs.append(json.loads(Path(p).read_text(encoding="utf-8")))
        except OSError as e:
            raise ConfirmError(f"cannot read {p}: {e.strerror or e}") from None
        except ValueError as e:
            raise ConfirmError(f"{p}: not JSON ({e})") from None
    return merge_documents(docs)
