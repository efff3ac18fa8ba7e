"""Measure what torch.compile really does to one module: the evidence behind a finding.

``measure(model_factory, inputs_factory, ...)`` builds the module twice (eager reference and the
compiled copy), compiles it with the default backend (inductor), calls it, optionally exercises it
(repeated calls with mutated state or new shapes), profiles one forward in each mode and returns a
:class:`Measurement`: a plain dataclass that ``dataclasses.asdict`` turns into JSON.

How each number is obtained (see ``shared/truth/README.md``, "How the confirm pass should measure"):

- graph-break sites: records of the ``graph_breaks`` log artifact (the loggers
  ``torch._dynamo.{symbolic_convert,convert_frame}.__graph_breaks`` at DEBUG), not ``explain()``
  (it misses breaks that close an empty graph) and not ``counters["graph_break"]`` (one per frame
  level). A site is the innermost frame of the logged user traceback that lies in ``user_files``.
- compiled regions: "Torch-Compiled Region" profiler events in one forward after the exercise
  (0 means the frame runs eager, e.g. after the recompile limit was hit).
- recompiles: ``get_compilation_metrics()`` entries with a ``recompile_reason``; the limit from the
  WARNING "hit config.recompile_limit" (or ``cache_size_limit`` on older torch).
- kernels per forward: CPU: ``cpp_fused`` events (needs ``cpp.enable_kernel_profile``) plus the
  outermost non-view aten ops (extern kernels, eager leftovers); CUDA: device kernel events,
  Memcpy/Memset excluded.
- host syncs: CUDA: ``set_sync_debug_mode("warn")`` warnings, synchronize runtime calls beyond the
  harness's own, DtoH copies; CPU: a *proxy* (sync-prone aten ops outside guard evaluation).

torch is imported inside the functions only: importing this module costs nothing.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import logging
import os
import re
import statistics
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, NamedTuple, Optional, Sequence

# Aten ops that force a device->host copy (and so a sync on CUDA): the CPU proxy counts them.
SYNC_OPS = frozenset(
    {
        "aten::_local_scalar_dense",
        "aten::nonzero",
        "aten::nonzero_static",
        "aten::masked_select",
        "aten::unique",
        "aten::_unique",
        "aten::_unique2",
        "aten::unique_consecutive",
        "aten::unique_dim",
    }
)
# Aten ops that launch no kernel by themselves (metadata, views, allocation); an outermost one
# counts as a launch only if a copy runs under it.
_NO_KERNEL_OPS = frozenset(
    "aten::" + n
    for n in (
        "view t transpose permute expand slice select as_strided detach alias unsqueeze squeeze "
        "reshape _reshape_alias _unsafe_view flatten unflatten split chunk narrow lift_fresh "
        "resolve_conj resolve_neg numpy_T contiguous empty empty_strided empty_like to "
        "lift_fresh_copy _to_copy result_type is_nonzero item split_with_sizes unbind "
        "diagonal movedim _local_scalar_dense set_ zeros_like ones_like"
    ).split()
)
_COPY_OPS = frozenset({"aten::clone", "aten::copy_", "aten::_to_copy"})
_FRAME_RE = re.compile(r'File "(.*?)", line (\d+), in (\S+)')
_GB_RE = re.compile(r"gb(\d{4})", re.I)
_MSG_LIMIT = 400


class BreakSite(NamedTuple):
    """One distinct graph-break site. ``file``/``line`` point into the user's code when found."""

    gb: Optional[str]  # "GB0124", or None on torch without the graph-break registry
    file: Optional[str]
    line: Optional[int]
    reason: str  # the gb_type line, e.g. "Unsupported Tensor.item() call with capture_scalar_outputs=False"
    # The user frames of the break's traceback, outermost first: [file, line, function] each
    # (the forward, then the helpers it called, down to the site).
    frames: tuple = ()


class CallArgs(NamedTuple):
    """What an inputs factory may return when the forward needs keyword arguments."""

    args: tuple
    kwargs: dict


@dataclass
class Measurement:
    torch_version: str = ""
    device: str = "cpu"
    device_name: str = ""
    user_files: list = field(default_factory=list)
    # eager reference
    eager_ok: Optional[bool] = None
    eager_error_type: Optional[str] = None
    eager_error: Optional[str] = None
    # compiled (default backend), first call
    compiled_ok: Optional[bool] = None
    compiled_error_type: Optional[str] = None
    compiled_error: Optional[str] = None
    exercise_error: Optional[str] = None
    first_call_s: Optional[float] = None
    outputs_allclose: Optional[bool] = None  # eager vs compiled, first call
    inputs_allclose: Optional[bool] = None  # the inputs after the call (in-place ops on inputs)
    # graph breaks
    break_sites: list = field(default_factory=list)  # [BreakSite], distinct, in log order
    other_break_sites: list = field(default_factory=list)  # breaks with no frame in user_files
    frame_skips: int = 0  # records saying a whole frame falls back to eager
    # compiles
    compiles_per_call: list = field(default_factory=list)  # frame compiles during each call
    recompiles: int = 0  # compiles with a recompile_reason, all calls together
    recompile_reasons: list = field(default_factory=list)
    # One entry per recompile: {"guard": the failing guard (first line), "frames": the guard's user
    # frames [[file, line, function], ...] outermost first (empty when torch gives none, e.g. an
    # input's size), "function": [file, first line, name] of the frame that recompiled}.
    recompile_events: list = field(default_factory=list)
    backend: str = "inductor"  # the torch.compile backend the compiled copy used
    recompile_limit_hit: bool = False
    compile_failures: list = field(default_factory=list)  # fail_type: fail_reason of metrics entries
    generated_kernels: Optional[int] = None  # inductor's generated_kernel_count (CPU: loop nests)
    # one profiled forward per mode (the compiled one after the exercise)
    compiled_regions: Optional[int] = None
    kernels_eager: Optional[int] = None
    kernels_compiled: Optional[int] = None
    kernel_names_eager: dict = field(default_factory=dict)
    kernel_names_compiled: dict = field(default_factory=dict)
    profiled_call_compiled: Optional[bool] = None  # the profiled forward itself (re)compiled
    # host syncs
    sync_method: str = ""  # "cuda" (sync-debug mode + profiler) or "cpu-proxy"
    host_syncs_eager: Optional[int] = None
    host_syncs_compiled: Optional[int] = None
    sync_detail: dict = field(default_factory=dict)
    # timing (median µs per forward), when timing_runs > 0
    eager_us: Optional[float] = None
    compiled_us: Optional[float] = None
    # launches over time for the HTML report: {"eager": [[name, start_us, dur_us]...], "compiled": [...]}
    timeline: Optional[dict] = None
    notes: list = field(default_factory=list)  # parts of the measurement that failed, and why

    @property
    def has_graph_break(self) -> bool:
        return bool(self.break_sites) or self.frame_skips > 0

    def break_lines(self, path: Optional[str] = None) -> set:
        want = _norm(path) if path else None
        return {s.line for s in self.break_sites if want is None or _norm(s.file) == want}


def _norm(path: Optional[str]) -> Optional[str]:
    return os.path.realpath(path) if path else path


def _short(text: Any, limit: int = _MSG_LIMIT) -> str:
    text = str(text).strip()
    first = text.splitlines()[0] if text else ""
    return " ".join(first.split())[:limit]


def gb_code(text: Optional[str]) -> Optional[str]:
    m = _GB_RE.search(text or "")
    return f"GB{m.group(1)}" if m else None


# ---------------------------------------------------------------------------- log capture
class _BreakLog(logging.Handler):
    """Receives the ``graph_breaks`` artifact records and resolves each to a user site."""

    def __init__(self, user_files: Sequence[str], user_roots: Sequence[str] = ()):
        super().__init__(logging.DEBUG)
        self.is_user = UserCode(user_files, user_roots)
        self.user_files = self.is_user.files
        self.sites: list[BreakSite] = []
        self.others: list[BreakSite] = []
        self.frame_skips = 0
        self._by_location: dict = {}  # (gb/reason, "file:line" of a record) -> resolved site

    def _user_frame(self, frames: list) -> Optional[tuple]:
        for fname, line, _fn in reversed(frames):  # innermost first
            if self.is_user(fname):
                return fname, int(line)
        return None

    def _chain(self, frames: list) -> tuple:
        return tuple((_norm(f), int(ln), fn) for f, ln, fn in frames if self.is_user(f))

    def emit(self, record: logging.LogRecord) -> None:  # pragma: no cover - exercised via torch
        try:
            self._handle(record)
        except Exception:  # never let a parsing problem break the compile
            pass

    def _handle(self, record: logging.LogRecord) -> None:
        msg = record.getMessage()
        exc_text = ""
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            exc_text = str(exc)
            gb_type = getattr(exc, "gb_type", None)
        else:
            gb_type = None
        if "skip tracing the frame" in msg:
            self.frame_skips += 1
            reason = _short(gb_type or exc_text or "frame skipped")
            frames = _FRAME_RE.findall(msg)
            at = frames[-1][:2] if frames else (None, None)
            gb = gb_code(exc_text)
        else:
            body = msg.split("Graph Break Reason:", 1)[-1].splitlines()
            reason = next(
                (
                    ln.strip()
                    for ln in body
                    if ln.strip() and not ln.strip().startswith(("Encountered graph break", "Graph break"))
                ),
                "",
            )
            reason = _short(reason)
            gb = gb_code(msg)
            m = re.search(r"in user code at (.*?):(\d+)", msg)
            at = m.groups() if m else (None, None)
            trace = msg.split("User code traceback:", 1)
            frames = _FRAME_RE.findall(trace[1]) if len(trace) > 1 else []
        key = (gb or reason, at)
        found = self._user_frame(frames)
        if found is None and at[0] is not None and self.is_user(at[0]):
            found = (at[0], int(at[1]))
        if found is None and key in self._by_location:  # a duplicate record without its traceback
            return
        if found is not None:
            site = BreakSite(gb, found[0], found[1], reason, self._chain(frames))
            self._by_location[key] = site
            self._add(site)
        else:
            site = BreakSite(gb, at[0], int(at[1]) if at[1] else None, reason)
            self._by_location[key] = site
            if site not in self.others:
                self.others.append(site)


    _VAGUE = "Failed to handle graph break gracefully"  # an outer frame's echo of an inner break

    def _add(self, site: BreakSite) -> None:
        """One site per (GB id, file, line): an outer frame's record of the same break ("failed to
        handle graph break gracefully") gives way to the inner one's reason and longer chain."""
        for i, old in enumerate(self.sites):
            if old[:3] == site[:3] and (old.gb or old.reason.startswith(self._VAGUE) or site.reason.startswith(self._VAGUE)):
                better_reason = old.reason if site.reason.startswith(self._VAGUE) else site.reason
                frames = old.frames if len(old.frames) >= len(site.frames) else site.frames
                self.sites[i] = old._replace(reason=better_reason, frames=frames)
                return
            if old[:4] == site[:4]:
                return
        self.sites.append(site)


class UserCode:
    """Which source files are the user's: the files named, and any file under a user root that is
    not an installed package (site-packages, a virtual environment) — so a break in a helper of
    another project file is reported there, not at the call in ``forward``."""

    _INSTALLED = ("site-packages", "dist-packages", ".venv", "venv", ".tox", ".nox")

    def __init__(self, files: Sequence[str], roots: Sequence[str] = ()):
        self.files = {_norm(f) for f in files}
        self.roots = [_norm(r).rstrip(os.sep) + os.sep for r in roots if r]
        self._seen: dict = {}

    def __call__(self, path: Optional[str]) -> bool:
        if not path:
            return False
        if path not in self._seen:
            real = _norm(path)
            ok = real in self.files
            if not ok and real.endswith(".py") and any(real.startswith(r) for r in self.roots):
                rel_parts = real.split(os.sep)
                ok = not any(p in self._INSTALLED for p in rel_parts) and not real.startswith(_HARNESS)
            self._seen[path] = ok
        return self._seen[path]


_HARNESS = os.path.dirname(os.path.dirname(os.path.realpath(__file__))) + os.sep  # fusionlint itself
_USER_STACK_RE = re.compile(r'File "(.*?)", line (\d+), in (\S+)')


def recompile_event(metric: Any, is_user: Callable[[str], bool]) -> dict:
    """A compilation-metrics entry with a recompile reason -> {"guard", "frames", "function"}.

    torch (2.5+) appends "User stack trace:" with the frames where the guarded value was read;
    guards on inputs (a size mismatch) carry none, and then the frame that recompiled is the place.
    """
    reason = str(getattr(metric, "recompile_reason", "") or "")
    head, _, stack = reason.partition("User stack trace:")
    frames = [[_norm(f), int(ln), fn] for f, ln, fn in _USER_STACK_RE.findall(stack) if is_user(f)]
    guard = head.strip().splitlines()[0] if head.strip() else reason.strip()
    # "0/0: self.t == 1.0   # self.t = ...  # path:13 in forward": keep the guard, drop torch's
    # abbreviated location (the frames say where, with the full path).
    guard = " ".join(guard.split("#", 1)[0].split()) or _short(guard, 200)
    guard = re.sub(r"^\d+/\d+: ", "", guard)  # the compile id ("0/0: ") says nothing to the user
    fn = [getattr(metric, "co_filename", None), getattr(metric, "co_firstlineno", None), getattr(metric, "co_name", None)]
    if fn[0]:
        fn[0] = _norm(fn[0])
    return {"guard": _short(guard, 300), "frames": frames, "function": fn}


class _LimitLog(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.hits: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            msg = record.getMessage()
        except Exception:  # pragma: no cover
            return
        if "hit config." in msg:
            self.hits.append(_short(msg, 200))


@contextlib.contextmanager
def _capture_logs(user_files: Sequence[str], user_roots: Sequence[str] = ()):
    breaks, limit = _BreakLog(user_files, user_roots), _LimitLog()
    saved = []
    for name in ("torch._dynamo.symbolic_convert.__graph_breaks", "torch._dynamo.convert_frame.__graph_breaks"):
        lg = logging.getLogger(name)
        saved.append((lg, lg.level, lg.propagate))
        lg.setLevel(logging.DEBUG)
        lg.propagate = False  # keep the (long) records off stderr
        lg.addHandler(breaks)
    dyn = logging.getLogger("torch._dynamo")
    dyn.addHandler(limit)
    try:
        yield breaks, limit
    finally:
        for lg, level, prop in saved:
            lg.removeHandler(breaks)
            lg.setLevel(level)
            lg.propagate = prop
        dyn.removeHandler(limit)


# ---------------------------------------------------------------------------- torch helpers
def _reset_torch() -> None:
    import torch

    reset = getattr(getattr(torch, "compiler", None), "reset", None) or torch._dynamo.reset
    reset()
    try:
        from torch._dynamo.utils import counters

        counters.clear()
    except Exception:  # pragma: no cover - very old torch
        pass
    try:
        from torch._dynamo.utils import clear_compilation_metrics

        clear_compilation_metrics()
    except Exception:  # pragma: no cover
        pass
    try:
        import torch._inductor.metrics as im

        im.reset()
    except Exception:  # pragma: no cover
        pass


def _compilation_metrics() -> list:
    try:
        from torch._dynamo.utils import get_compilation_metrics
    except Exception:  # pragma: no cover
        return []
    try:
        return list(get_compilation_metrics())
    except Exception:  # pragma: no cover
        return []


def _generated_kernel_count() -> Optional[int]:
    try:
        import torch._inductor.metrics as im

        return int(im.generated_kernel_count)
    except Exception:  # pragma: no cover
        return None


def _flat(obj: Any) -> list:
    import torch

    if isinstance(obj, torch.Tensor):
        return [obj]
    if isinstance(obj, (bool, int, float)):
        return [torch.tensor(float(obj))]
    if isinstance(obj, (list, tuple)):
        return [t for x in obj for t in _flat(x)]
    if isinstance(obj, dict):
        return [t for k in sorted(obj, key=str) for t in _flat(obj[k])]
    if hasattr(obj, "__dataclass_fields__"):
        return [t for k in obj.__dataclass_fields__ for t in _flat(getattr(obj, k))]
    return []


def _snapshot(obj: Any) -> list:
    return [t.detach().clone() for t in _flat(obj)]


def allclose(a: Sequence, b: Sequence, rtol: float = 1e-4, atol: float = 1e-4) -> bool:
    """Element-wise comparison of two flattened snapshots (lists of tensors)."""
    import torch

    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if x.shape != y.shape:
            return False
        if x.is_complex() or y.is_complex():
            x, y = torch.view_as_real(x.resolve_conj()), torch.view_as_real(y.resolve_conj())
        x, y = x.detach().cpu().double(), y.detach().cpu().double()
        if not torch.allclose(x, y, rtol=rtol, atol=atol, equal_nan=True):
            return False
    return True


def _to_device(obj: Any, device: str) -> Any:
    import torch

    if isinstance(obj, torch.Tensor):
        return obj if obj.device == torch.device(device) else obj.to(device)
    if isinstance(obj, tuple) and not hasattr(obj, "_fields"):
        return tuple(_to_device(x, device) for x in obj)
    if isinstance(obj, list):
        return [_to_device(x, device) for x in obj]
    if isinstance(obj, dict):
        return {k: _to_device(v, device) for k, v in obj.items()}
    return obj


def _sync(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()


@contextlib.contextmanager
def _quiet():
    """User prints go nowhere: the worker's stdout carries JSON."""
    with contextlib.redirect_stdout(io.StringIO()):
        yield


@contextlib.contextmanager
def _on_device(device: str):
    import torch

    if device == "cpu" or not hasattr(torch, "device") or not hasattr(torch.device, "__enter__"):
        yield
        return
    with torch.device(device):
        yield


class _Runner:
    """Builds models and inputs on the device with fixed seeds, and calls them."""

    def __init__(self, model_factory, inputs_factory, device: str):
        self.model_factory, self.inputs_factory, self.device = model_factory, inputs_factory, device

    def model(self):
        import torch

        torch.manual_seed(0)
        with _on_device(self.device):
            m = self.model_factory()
        if isinstance(m, torch.nn.Module):
            m = m.to(self.device)
        return m

    def inputs(self) -> CallArgs:
        import torch

        torch.manual_seed(1)
        with _on_device(self.device):
            raw = self.inputs_factory()
        return self.normalize(raw)

    def normalize(self, raw: Any) -> CallArgs:
        if isinstance(raw, CallArgs):
            args, kwargs = tuple(raw.args), dict(raw.kwargs)
        elif isinstance(raw, tuple):
            args, kwargs = raw, {}
        elif isinstance(raw, list):
            args, kwargs = tuple(raw), {}
        else:
            args, kwargs = (raw,), {}
        return CallArgs(_to_device(args, self.device), _to_device(kwargs, self.device))


def _error(e: BaseException) -> tuple[str, str]:
    """(type name, one-line message); a wrapper's "...raised:" line is joined with the wrapped cause."""
    lines = [ln.strip() for ln in f"{type(e).__name__}: {e}".splitlines() if ln.strip()]
    text = lines[0] if lines else type(e).__name__
    if text.endswith(":") and len(lines) > 1:
        text = f"{text} {lines[1]}"
    return type(e).__name__, " ".join(text.split())[:_MSG_LIMIT]


# ---------------------------------------------------------------------------- profiling
def _profile(fn: Callable[[], Any], device: str, timeline: bool) -> dict:
    """One call under torch.profiler -> regions, kernel launches, sync evidence (+ launch timeline)."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    cuda = device.startswith("cuda")
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with profile(activities=acts) as prof, _quiet():
        fn()
        _sync(device)
    events = list(prof.events())
    cpu_type = torch.autograd.DeviceType.CPU
    cpu_ev = [e for e in events if e.device_type == cpu_type]

    def under(e, prefix: str) -> bool:
        p = e.cpu_parent
        while p is not None:
            if p.name.startswith(prefix):
                return True
            p = p.cpu_parent
        return False

    def outermost_aten(e) -> bool:
        p = e.cpu_parent
        while p is not None:
            if p.name.startswith("aten::"):
                return False
            p = p.cpu_parent
        return True

    res: dict = {
        "regions": sum(e.name.startswith("Torch-Compiled Region") for e in cpu_ev),
        "proxy_syncs": sum(
            e.name in SYNC_OPS and not under(e, "TorchDynamo Cache Lookup") for e in cpu_ev
        ),
    }
    launches = []  # (name, start_us, dur_us)
    if cuda:
        for e in events:
            if e.device_type == cpu_type:
                continue
            low = e.name.lower()
            if "memcpy" in low or "memset" in low:
                continue
            launches.append((e.name, e.time_range.start, e.time_range.elapsed_us()))
        res["dtoh"] = sum(e.device_type != cpu_type and "dtoh" in e.name.lower() for e in events)
        res["sync_calls"] = sum(
            ("cudaDeviceSynchronize" in e.name or "cudaStreamSynchronize" in e.name) for e in cpu_ev
        )
    else:
        for e in cpu_ev:
            if under(e, "TorchDynamo Cache Lookup"):
                continue
            if "cpp_fused" in e.name:
                launches.append((e.name, e.time_range.start, e.time_range.elapsed_us()))
            elif e.name.startswith("aten::") and outermost_aten(e):
                if e.name not in _NO_KERNEL_OPS or any(c.name in _COPY_OPS for c in e.cpu_children):
                    launches.append((e.name, e.time_range.start, e.time_range.elapsed_us()))
    launches.sort(key=lambda x: x[1])
    res["kernels"] = len(launches)
    names: dict = {}
    for name, _s, _d in launches:
        key = "inductor:cpp_fused" if "cpp_fused" in name else re.sub(r"_\d+$", "", name.split("(")[0])[:60]
        names[key] = names.get(key, 0) + 1
    res["names"] = names
    if timeline:
        t0 = launches[0][1] if launches else 0
        res["timeline"] = [[n[:80], round(s - t0, 2), round(d, 2)] for n, s, d in launches[:2000]]
    return res


def _backward(out: Any) -> None:
    """Backward of the sum of the outputs that require grad (nothing when none does)."""
    import torch

    parts = [t.float().sum() for t in _flat(out) if isinstance(t, torch.Tensor) and t.requires_grad]
    if parts:
        torch.stack(parts).sum().backward()


def _sync_baseline(device: str) -> int:
    """Synchronize runtime calls that the profiling harness itself makes."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        torch.cuda.synchronize()
    return sum(
        ("cudaDeviceSynchronize" in e.name or "cudaStreamSynchronize" in e.name)
        for e in prof.events()
        if e.device_type == torch.autograd.DeviceType.CPU
    )


def _sync_debug_warnings(fn: Callable[[], Any]) -> int:
    """Syncs flagged by ``set_sync_debug_mode("warn")`` in one call.

    The call is made twice and only the second counts: the first use of sync-debug mode in a
    process reported one warning that no repeat showed (measured on torch 2.11, H200).
    """
    import torch

    counts = []
    for _ in range(2):
        with warnings.catch_warnings(record=True) as caught, _quiet():
            warnings.simplefilter("always")
            torch.cuda.set_sync_debug_mode("warn")
            try:
                fn()
            finally:
                torch.cuda.set_sync_debug_mode("default")
        counts.append(sum("synchroniz" in str(w.message).lower() for w in caught))
    return counts[-1]


def _time(fn: Callable[[], Any], device: str, runs: int) -> float:
    with _quiet():
        for _ in range(2):
            fn()
        samples = []
        for _ in range(runs):
            _sync(device)
            t0 = time.perf_counter()
            fn()
            _sync(device)
            samples.append(time.perf_counter() - t0)
    return round(statistics.median(samples) * 1e6, 1)


def default_user_files(model: Any) -> list[str]:
    """The file that defines the model's class (where its ``forward`` lives)."""
    import sys

    cls = type(model)
    candidates = []
    try:
        candidates.append(inspect.getsourcefile(cls))
    except (TypeError, OSError):
        pass
    fwd = getattr(cls, "forward", None)
    code = getattr(fwd, "__code__", None)
    if code is not None:
        candidates.append(code.co_filename)
    mod = sys.modules.get(getattr(cls, "__module__", ""), None)
    candidates.append(getattr(mod, "__file__", None))
    for path in candidates:
        if path and os.path.isfile(path):
            return [os.path.realpath(path)]
    return []


@contextlib.contextmanager
def isolated_torch_config():
    """Restore torch._dynamo / torch._inductor config afterwards (user code may change it)."""
    import torch._dynamo.config as dynamo_config
    import torch._inductor.config as inductor_config

    saved = []
    for cfg in (dynamo_config, inductor_config):
        if hasattr(cfg, "save_config") and hasattr(cfg, "load_config"):
            try:
                saved.append((cfg, cfg.save_config()))
            except Exception:  # pragma: no cover - config with unpicklable entries
                pass
    try:
        yield
    finally:
        for cfg, blob in saved:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # load_config re-sets deprecated keys noisily
                try:
                    cfg.load_config(blob)
                except Exception:  # pragma: no cover
                    pass


# ---------------------------------------------------------------------------- entry point
def measure(
    model_factory: Callable[[], Any],
    inputs_factory: Callable[[], Any],
    *,
    device: str = "cpu",
    exercise: Optional[Callable[[Any, Callable[..., Any]], Any]] = None,
    user_files: Optional[Sequence[str]] = None,
    timing_runs: int = 0,
    grad: bool = False,
    timeline: bool = False,
    compile_kwargs: Optional[dict] = None,
    user_roots: Sequence[str] = (),
) -> Measurement:
    """Measure eager vs ``torch.compile`` behaviour of the module that ``model_factory`` builds.

    ``inputs_factory()`` returns the forward's positional args (a tuple), or a :class:`CallArgs`.
    ``exercise(model, call)``, when given, drives repeated calls: ``call(*args, **kwargs)`` runs the
    compiled module (``model`` is the module it wraps, so mutating it changes the next call).
    Without it the compiled module is called a second time with fresh example inputs.
    Nothing raises out of here except KeyboardInterrupt: failures land in the result.
    ``user_roots``: directories whose files (outside installed packages) count as the user's code
    too, for break sites and recompile guards. ``compile_kwargs={"backend": "eager"}`` observes
    breaks and recompiles (Dynamo decides both) at a fraction of inductor's cost; kernel counts
    and times then describe eager fragments, not fused kernels.
    """
    import torch

    m = Measurement(torch_version=str(torch.__version__), device=device)
    m.device_name = _device_name(device)
    cuda = device.startswith("cuda")
    m.sync_method = "cuda" if cuda else "cpu-proxy"
    _configure_inductor(m)
    runner = _Runner(model_factory, inputs_factory, device)
    grad_ctx = torch.enable_grad if grad else torch.no_grad

    _reset_torch()
    # ---- eager reference: outputs and inputs after one call
    ref = None
    try:
        eager_model = runner.model()
    except Exception as e:
        m.eager_ok = m.compiled_ok = False
        m.eager_error_type, m.eager_error = _error(e)
        m.compiled_error_type, m.compiled_error = m.eager_error_type, m.eager_error
        m.notes.append("the model could not be built")
        return m
    files = [os.path.realpath(f) for f in (user_files or default_user_files(eager_model))]
    m.user_files = files
    m.backend = str((compile_kwargs or {}).get("backend", "inductor"))
    try:
        with grad_ctx(), _quiet():
            ins = runner.inputs()
            out = eager_model(*ins.args, **ins.kwargs)
            ref = (_snapshot(out), _snapshot((ins.args, ins.kwargs)))
        m.eager_ok = True
        if grad:
            _backward(out)  # autograd errors (e.g. in-place on a saved tensor) show only here in eager
    except Exception as e:
        m.eager_ok = False
        m.eager_error_type, m.eager_error = _error(e)
        if ref is not None:
            m.eager_error = "in backward: " + m.eager_error

    # ---- compiled: a fresh module, a fresh torch.compile wrapper (resets the break-log dedup set)
    _reset_torch()
    with _capture_logs(files, user_roots) as (breaks, limit), grad_ctx():
        metrics_seen: set = set()

        def new_metrics() -> list:
            now = _compilation_metrics()
            fresh = [x for x in now if id(x) not in metrics_seen]
            metrics_seen.update(id(x) for x in now)
            return fresh

        recompile_ids: dict = {}
        recompile_events: dict = {}

        def account(fresh: list) -> int:
            ids = set()
            for x in fresh:
                cid = str(getattr(x, "compile_id", None) or id(x))
                ids.add(cid)
                reason = getattr(x, "recompile_reason", None)
                if reason:
                    recompile_ids.setdefault(cid, _short(reason, 200))
                    if cid not in recompile_events:
                        recompile_events[cid] = recompile_event(x, breaks.is_user)
                fail = getattr(x, "fail_type", None)
                if fail:
                    entry = _short(f"{fail}: {getattr(x, 'fail_reason', '') or ''}", 200)
                    if entry not in m.compile_failures:
                        m.compile_failures.append(entry)
            return len(ids)

        compiled_model = None
        compiled = None
        try:
            compiled_model = runner.model()
            compiled = torch.compile(compiled_model, **(compile_kwargs or {}))
        except Exception as e:
            m.compiled_ok = False
            m.compiled_error_type, m.compiled_error = _error(e)
        if compiled is not None:
            try:
                ins = runner.inputs()
                t0 = time.perf_counter()
                with _quiet():
                    out = compiled(*ins.args, **ins.kwargs)
                _sync(device)
                m.first_call_s = round(time.perf_counter() - t0, 3)
                m.compiled_ok = True
                m.compiles_per_call.append(account(new_metrics()))
                m.generated_kernels = _generated_kernel_count()
                if ref is not None:
                    m.outputs_allclose = allclose(_snapshot(out), ref[0])
                    m.inputs_allclose = allclose(_snapshot((ins.args, ins.kwargs)), ref[1])
                if grad:
                    try:
                        _backward(out)
                    except Exception as e:
                        m.compiled_ok = False
                        m.compiled_error_type, m.compiled_error = _error(e)
                        m.compiled_error = "in backward: " + m.compiled_error
            except Exception as e:
                m.compiled_ok = False
                m.compiled_error_type, m.compiled_error = _error(e)
                account(new_metrics())

        if m.compiled_ok:
            # ---- exercise: repeated calls (mutated state, new shapes) -> compiles per call
            def call(*args, **kwargs):
                a = CallArgs(_to_device(args, device), _to_device(kwargs, device))
                with _quiet():
                    result = compiled(*a.args, **a.kwargs)
                m.compiles_per_call.append(account(new_metrics()))
                return result

            try:
                if exercise is not None:
                    exercise(compiled_model, call)
                else:
                    ins = runner.inputs()
                    call(*ins.args, **ins.kwargs)
            except Exception as e:
                m.exercise_error = _error(e)[1]
                account(new_metrics())

            # ---- one profiled forward per mode
            def compiled_fwd(a=None):
                a = a or runner.inputs()
                return compiled(*a.args, **a.kwargs)

            try:
                with _quiet():
                    compiled_fwd()  # settle: a call that compiles is not profiled
                account(new_metrics())
                fixed = runner.inputs()  # made outside the profiled call: its kernels do not count
                prof = _profile(lambda: compiled_fwd(fixed), device, timeline)
                fresh = new_metrics()
                m.profiled_call_compiled = bool(fresh)
                account(fresh)
                m.compiled_regions = prof["regions"]
                m.kernels_compiled = prof["kernels"]
                m.kernel_names_compiled = prof["names"]
                m.host_syncs_compiled, detail = _syncs(prof, device, lambda: compiled_fwd(fixed))
                m.sync_detail["compiled"] = detail
                if timeline:
                    m.timeline = {"compiled": prof["timeline"]}
            except Exception as e:
                m.notes.append(f"compiled profile failed: {_error(e)[1]}")
            if timing_runs > 0:
                try:
                    fixed = runner.inputs()
                    m.compiled_us = _time(lambda: compiled_fwd(fixed), device, timing_runs)
                except Exception as e:
                    m.notes.append(f"compiled timing failed: {_error(e)[1]}")
                account(new_metrics())
        m.recompiles = len(recompile_ids)
        m.recompile_reasons = list(dict.fromkeys(recompile_ids.values()))[:8]
        m.recompile_events = list(recompile_events.values())[:32]
        m.recompile_limit_hit = bool(limit.hits)
        m.break_sites = list(breaks.sites)
        m.other_break_sites = list(breaks.others)
        m.frame_skips = breaks.frame_skips

    if m.eager_ok:
        def eager_fwd(a=None):
            a = a or runner.inputs()
            return eager_model(*a.args, **a.kwargs)

        try:
            with grad_ctx():
                with _quiet():
                    eager_fwd()  # warm-up: first-call setup is not a launch pattern
                fixed = runner.inputs()
                prof = _profile(lambda: eager_fwd(fixed), device, timeline)
                m.kernels_eager = prof["kernels"]
                m.kernel_names_eager = prof["names"]
                m.host_syncs_eager, detail = _syncs(prof, device, lambda: eager_fwd(fixed))
                m.sync_detail["eager"] = detail
                if timeline:
                    m.timeline = dict(m.timeline or {}, eager=prof["timeline"])
                if timing_runs > 0:
                    m.eager_us = _time(lambda: eager_fwd(fixed), device, timing_runs)
        except Exception as e:
            m.notes.append(f"eager profile failed: {_error(e)[1]}")
    _reset_torch()
    if cuda:
        try:
            torch.cuda.empty_cache()
        except Exception:  # pragma: no cover
            pass
    return m


def _syncs(prof: dict, device: str, fn: Callable[[], Any]) -> tuple[int, dict]:
    if not device.startswith("cuda"):
        return prof["proxy_syncs"], {"sync_prone_ops": prof["proxy_syncs"]}
    extra_calls = max(0, prof["sync_calls"] - _sync_baseline(device))
    warned = _sync_debug_warnings(fn)
    detail = {
        "sync_debug_warnings": warned,
        "dtoh_copies": prof["dtoh"],
        "synchronize_calls": extra_calls,
        "sync_prone_ops": prof["proxy_syncs"],
    }
    # Each source sees a different subset (sync-debug mode misses torch.cuda.synchronize() and
    # some in-graph DtoH copies); the largest is a lower bound on the number of syncs.
    return max(warned, prof["dtoh"], extra_calls), detail


def _device_name(device: str) -> str:
    import platform

    import torch

    if device.startswith("cuda"):
        try:
            return torch.cuda.get_device_name(torch.device(device))
        except Exception:  # pragma: no cover
            return device
    return platform.processor() or platform.machine() or "cpu"


def _configure_inductor(m: Measurement) -> None:
    try:
        import torch._inductor.config as ic

        ic.cpp.enable_kernel_profile = True  # CPU: C++ kernels show up as profiler events
    except Exception as e:  # pragma: no cover
        m.notes.append(f"could not enable C++ kernel profiling: {_error(e)[1]}")


def measurement_to_dict(m: Measurement) -> dict:
    """``asdict`` plus plain lists for the named tuples (stable JSON shape)."""
    from dataclasses import asdict

    d = asdict(m)
    d["break_sites"] = [[*s[:4], [list(f) for f in s[4]]] for s in m.break_sites]
    d["other_break_sites"] = [list(s) for s in m.other_break_sites]
    return d


def measurement_from_dict(d: dict) -> Measurement:
    known = {f for f in Measurement.__dataclass_fields__}
    kwargs = {k: v for k, v in d.items() if k in known}
    kwargs["break_sites"] = [BreakSite(*s) for s in d.get("break_sites", [])]
    kwargs["other_break_sites"] = [BreakSite(*s) for s in d.get("other_break_sites", [])]
    return Measurement(**kwargs)
