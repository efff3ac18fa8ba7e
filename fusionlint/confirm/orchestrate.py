"""The confirm pass: group findings by module, run one worker process per module, match results.

``confirm_findings(result, settings=..., device=..., ...)`` fills ``Finding.confirmation`` for
every finding of the selected shard and appends FL900 findings for break sites no rule explains.
torch is never imported here: workers do that (``python -m fusionlint.confirm.worker``), and the
device is probed in a subprocess too, so the static pass stays torch-free.
"""

from __future__ import annotations

import ast
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from fusionlint.confirm import match, procs
from fusionlint.confirm.cache import ResultCache, job_key, torch_version
from fusionlint.rule import Effect, Finding, RunResult

DEFAULT_TIMEOUT = 120.0
DEFAULT_MEMORY_MB = 8192
DEFAULT_TIMING_RUNS = 10
INSTALL_HINT = "the confirm pass needs torch: install fusionlint[confirm] (pip install 'fusionlint[confirm]')"


class ConfirmError(Exception):
    """The confirm pass cannot run at all (no torch, no GPU...): exit 2 with this message."""


@dataclass
class Unit:
    """One module (class or compiled function) of one file, with the findings inside it."""

    path: str  # as shown in findings (root-relative)
    abs_path: str
    target: Optional[str]  # "Model", "Outer.Inner", "step"; None: not inside any compiled code
    findings: list[Finding] = field(default_factory=list)

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
            def walk(body, prefix):
                for node in body:
                    if isinstance(node, ast.ClassDef):
                        name = f"{prefix}{node.name}"
                        spans.append((node.lineno, node.end_lineno or node.lineno, name))
                        walk(node.body, name + ".")
            walk(tree.body, "")
            cache[("toplevel", abs_path)] = {
                n.name for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            }
        cache[abs_path] = spans
    inside = [s for s in cache[abs_path] if s[0] <= line <= s[1]]
    return max(inside, key=lambda s: s[0])[2] if inside else None


def collect_units(findings: list[Finding], root: Path) -> list[Unit]:
    units: dict[tuple, Unit] = {}
    spans: dict = {}
    for f in findings:
        ap = match.abs_path(f.path, root)
        target = (
            _target_from_chain(f.context) or _enclosing_class(ap, f.line, spans) or _file_default_target(ap, spans)
        )
        key = (f.path, target)
        if key not in units:
            units[key] = Unit(f.path, ap, target)
        units[key].findings.append(f)
    return sorted(units.values(), key=lambda u: u.sort_key)


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


def fixed_variant(text: str, findings: list[Finding], effect: Effect) -> Optional[str]:
    """The file with the fixes of the findings claiming ``effect`` applied (None: no such fix)."""
    from fusionlint.fixes import apply_edits

    fixes = [f.fix.edits for f in findings if f.fix is not None and effect in tuple(Effect(e) for e in f.effects)]
    if not fixes:
        return None
    new, count = apply_edits(text, fixes)
    return new if count and new != text else None


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
) -> dict:
    from fusionlint.confirm.examples import module_name_for

    sys_path = _sys_path(root)
    effects = {Effect(e) for f in unit.findings for e in f.effects}
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
        "user_files": sorted({unit.abs_path, *user_files}),
        "memory_mb": memory_mb,
        "threads": threads,
        "compile_threads": threads,
    }
    if variants is None and Effect.EXTRA_KERNEL in effects:
        try:
            text = Path(unit.abs_path).read_text(encoding="utf-8")
        except OSError:
            text = None
        new = fixed_variant(text, unit.findings, Effect.EXTRA_KERNEL) if text is not None else None
        variants = [{"name": "fixed", "source": new}] if new else []
    job["variants"] = variants or []
    return job


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
    env.setdefault("PYTHONHASHSEED", "0")
    env["PYTHONUNBUFFERED"] = "1"
    if gpu is not None:
        env["CUDA_VISIBLE_DEVICES"] = gpu
    return env


_LOG_TAIL_BYTES = 64_000


def _tail(path: Path) -> str:
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - _LOG_TAIL_BYTES))
            return fh.read().decode("utf-8", "replace")
    except OSError:
        return ""


def run_worker(job: dict, timeout: float, gpu: Optional[str] = None) -> dict:
    """Run one job in a fresh process; a crash, hang or OOM becomes ``{"ok": False, "reason": ...}``.

    Isolation, each for a reason seen in practice: a scratch working directory (a module that
    writes into "." must not touch the project), ``-P`` (the cwd is not on ``sys.path``), its own
    session (``killpg`` reaches every compile worker), the result in a file of our own (a process
    the module started that keeps stderr open cannot delay the answer), and the whole process
    tree ended when the job ends, whether it answered or timed out.
    """
    with tempfile.TemporaryDirectory(prefix="fusionlint-confirm-") as scratch:
        private = Path(scratch)
        cwd = private / "cwd"
        cwd.mkdir()
        job_file, result_file, log_file = private / "job.json", private / "result.json", private / "worker.log"
        job_file.write_text(json.dumps(job), encoding="utf-8")
        with open(log_file, "wb") as log:
            proc = subprocess.Popen(
                [sys.executable, "-P", "-m", "fusionlint.confirm.worker", str(job_file), str(result_file)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                cwd=cwd,
                env=_worker_env(gpu),
                start_new_session=True,  # its own process group and session
            )
            timed_out = False
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                timed_out = True
            finally:
                if proc.poll() is None:  # timed out (or interrupted): end the worker and its tree
                    procs.kill_group_and_tree(proc.pid)
                else:  # it answered; what a crashed worker left in its group goes too
                    procs.kill_group(proc.pid)
                proc.wait()
        if timed_out:
            return {"ok": False, "reason": f"timed out after {timeout:g} s (raise --confirm-timeout)"}
        try:
            result = json.loads(result_file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            result = None
        if isinstance(result, dict):
            return result
        err_text = _tail(log_file)
    rc = proc.returncode
    if rc is not None and rc < 0:
        try:
            name = signal.Signals(-rc).name
        except ValueError:
            name = str(-rc)
        why = f"worker killed by {name}" + (" (out of memory?)" if name == "SIGKILL" else "")
    else:
        why = f"worker exited with status {rc}"
    tail = [ln for ln in err_text.strip().splitlines() if ln.strip()][-1:]
    if any(m in err_text.lower() for m in ("out of memory", "can't allocate memory", "memoryerror")):
        why = "out of memory: " + why
    return {"ok": False, "reason": why + (f": {tail[0][:300]}" if tail else "")}


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
    progress: Optional[Callable[[str], None]] = None,
) -> list[UnitResult]:
    """Confirm the findings of ``result`` in place (``Finding.confirmation``) and add FL900 findings.

    Raises ConfirmError when the pass cannot run at all (exit 2). Returns per-module results.
    """
    from fusionlint import __version__

    check_available()
    info = probe_torch()
    device = resolve_device(device, info, require_gpu=require_gpu)
    cfg = dict(getattr(settings, "confirm", {}) or {})
    root = Path(getattr(settings, "root", Path.cwd()))
    timeout = float(timeout or cfg.get("timeout", DEFAULT_TIMEOUT))
    timing_runs = int(cfg.get("timing-runs", cfg.get("timing_runs", DEFAULT_TIMING_RUNS)))
    memory_mb = int(cfg.get("memory-mb", cfg.get("memory_mb", DEFAULT_MEMORY_MB)))
    gpus: list[Optional[str]] = [None]
    if device == "cuda" and len(info.get("devices") or []) > 1:
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        ids = [x for x in visible.split(",") if x.strip()] if visible else [str(i) for i in range(len(info["devices"]))]
        gpus = ids
    if jobs is None or jobs < 1:
        jobs = len(gpus) if device.startswith("cuda") else 1
    threads = 1 if device.startswith("cuda") else max(1, (os.cpu_count() or 1) // jobs)

    units = shard_units(collect_units(result.findings, root), shard)
    runnable = [u for u in units if u.target]
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

    def one(i_unit: tuple[int, Unit]) -> UnitResult:
        i, unit = i_unit
        gpu = gpus[i % len(gpus)] if device == "cuda" and len(gpus) > 1 else None
        job = build_job(
            unit,
            root=root,
            device="cuda:0" if gpu is not None else device,
            examples=getattr(settings, "examples", {}) or {},
            user_files=finding_files,
            timing_runs=timing_runs,
            timeline=report_path is not None,
            memory_mb=memory_mb,
            threads=threads,
        )
        files = job["user_files"] + _example_file(job["example"], job["sys_path"])
        key = job_key(job, files, tv, __version__)
        hit = cache.get(key)
        if hit is not None:
            return UnitResult(unit, hit, cached=True)
        t0 = time.perf_counter()
        res = run_worker(job, timeout, gpu)
        res.setdefault("device", device)
        res.setdefault("torch", info.get("version"))
        cache.put(key, res)
        return UnitResult(unit, res, seconds=round(time.perf_counter() - t0, 2))

    results: list[UnitResult] = []
    if runnable:
        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            for ur in pool.map(one, list(enumerate(runnable))):
                results.append(ur)
                if progress:
                    status = "ok" if ur.worker.get("ok") else f"unconfirmed: {ur.worker.get('reason')}"
                    progress(f"confirm {ur.unit.label}: {status}" + (" (cached)" if ur.cached else f" ({ur.seconds} s)"))
    apply_results(result, results, root, settings)
    if report_path is not None:
        from fusionlint.report.html import write_report

        write_report(Path(report_path), result, results, root=root)
    return results


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
        for f in match.runtime_break_findings(
            ur.worker, result.findings, root, ur.unit.label, display, lambda p: (text_of(p) or "").splitlines()
        ):
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
