"""Measure models for the recall bench (runs inside the bench venv, started by recall.py).

    python bench/recall_worker.py --cache DIR --timeout S NAME...
    python bench/recall_worker.py --cache DIR --timeout S --condition float16 NAME...

For each model: build it (random weights), run it eagerly under a line tracer (coverage of the model
package's files), then compile it with Dynamo's cheap `eager` backend and call it at 3 batch sizes x the
model's sizes, in train mode and in eval mode, recording the `graph_breaks` and `recompiles`
log records. One JSON file per model is written to DIR as soon as it is done; `NAME.started` marks the
model in progress, so that recall.py can tell which model a crashed worker was on.

`--condition` runs the same compiled calls with a condition that some findings state for their break
met, and records only the breaks (no coverage, no recompiles): `float16`/`bfloat16` (the model and the
floating inputs in that dtype), `dynamic` (`torch.compile(..., dynamic=True)`: every size symbolic,
the sequence length included).
"""

from __future__ import annotations

import argparse
import copy
import json
import logging
import os
import signal
import sys
import sysconfig
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch  # noqa: E402

import recall_match  # noqa: E402
import recall_models  # noqa: E402

SITE = sysconfig.get_paths()["purelib"]
SITE_DIRS = [os.path.realpath(SITE), SITE]
BATCHES = (2, 3, 4)


class _Timeout(BaseException):
    pass


def _alarm(signum, frame):
    raise _Timeout()


class _Collect(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.breaks: list[dict] = []
        self.recompiles: list[dict] = []
        self.specializations: list[dict] = []

    def emit(self, record):
        name = record.name
        try:
            if name.endswith("__graph_breaks"):
                b = recall_match.parse_graph_break(record.getMessage(), SITE_DIRS, recall_models.PACKAGES)
                if b is not None:
                    self.breaks.append(b)
            elif name.endswith("__recompiles"):
                self.recompiles.extend(
                    recall_match.parse_recompile(record.getMessage(), SITE_DIRS, recall_models.PACKAGES)
                )
            elif name.endswith("symbolic_shapes") and "[guard added]" in record.getMessage():
                entry = str(torch._guards.CompileContext.current_trace_id())
                spec = recall_match.parse_specialization(record.getMessage(), entry, recall_models.PACKAGES)
                if spec is not None:
                    self.specializations.append(spec)
        except Exception:  # a record we cannot read must not stop the measurement
            pass


def _install_logging() -> _Collect:
    # `dynamic` at INFO: the guards that fix a symbolic size to a constant, with their source line
    torch._logging.set_logs(graph_breaks=True, recompiles=True, dynamic=logging.INFO)
    handler = _Collect()
    for name in ("torch", "torch._dynamo", "torch.fx.experimental.symbolic_shapes"):
        logging.getLogger(name).handlers = [handler]
    return handler


def _tracer(package_roots: tuple[str, ...], executed: dict[str, set[int]]):
    """sys.settrace function recording executed lines of files under `package_roots` only."""

    def local(frame, event, arg):
        if event == "line":
            executed[frame.f_code.co_filename].add(frame.f_lineno)
        return local

    def global_(frame, event, arg):
        filename = frame.f_code.co_filename
        if filename.startswith(package_roots):
            executed.setdefault(filename, set()).add(frame.f_lineno)
            return local
        return None

    return global_


def _cast(value, dtype):
    if dtype is not None and isinstance(value, torch.Tensor) and value.is_floating_point():
        return value.to(dtype)
    return value


def _call(model, built, b, s, train: bool, dtype=None):
    args, kwargs = built.make_inputs(b, s)
    args = tuple(_cast(a, dtype) for a in args)
    kwargs = {k: _cast(v, dtype) for k, v in kwargs.items()}
    # grad stays enabled in eval mode too: switching grad mode would recompile every frame (a
    # global-state guard) and double the compile time without adding a code-level cause
    model.train(train)
    return model(*args, **kwargs)


def _call_order(sizes: list[int]) -> list[tuple[int, int]]:
    """Every (batch, size) pair, the first ones changing batch and size together: Dynamo's automatic
    dynamic shapes then marks both dimensions dynamic in one recompile instead of one each (the tracing
    is what costs), while every pair is still called."""
    diagonal = [(BATCHES[i % len(BATCHES)], s) for i, s in enumerate(sizes)]
    return diagonal + [(b, s) for s in sizes for b in BATCHES if (b, s) not in diagonal]


_DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16}


def measure_condition(name: str, condition: str) -> dict:
    """The compiled calls of `measure` with `condition` met; only the graph breaks are kept."""
    t0 = time.perf_counter()
    torch.manual_seed(0)
    built = recall_models.build(name)
    dtype = _DTYPES.get(condition)
    model = built.model.to(dtype) if dtype is not None else built.model.float()
    torch._dynamo.reset()
    handler = _install_logging()
    compiled = torch.compile(model, backend="eager", dynamic=True if condition == "dynamic" else None)
    errors, calls = [], 0
    for train in (True, False):
        for b, s in _call_order(built.sizes[:3]):
            try:
                _call(compiled, built, b, s, train, dtype)
                calls += 1
            except Exception as exc:
                errors.append(f"train={train} b={b} s={s}: {type(exc).__name__}: {str(exc)[:200]}")
    torch._dynamo.reset()
    return {
        "name": name,
        "condition": condition,
        "status": "ok" if calls else "failed",
        "error": None if calls else ("compiled calls all failed: " + "; ".join(errors[:3])),
        "sizes": built.sizes[:3],
        "calls": calls,
        "call_errors": errors[:5],
        "breaks": handler.breaks,
        "seconds": round(time.perf_counter() - t0, 1),
    }


def measure(name: str) -> dict:
    t0 = time.perf_counter()
    torch.manual_seed(0)
    built = recall_models.build(name)
    model = built.model.float()
    roots = tuple(os.path.join(d, p) + os.sep for d in SITE_DIRS for p in recall_models.PACKAGES)
    # eager probe: keep the sizes the model accepts; the first one runs in both modes under the line
    # tracer (coverage of the package's files), the others once untraced (tracing costs several times)
    executed: dict[str, set[int]] = {}
    sizes, size_errors = [], {}
    # the eager probe runs on a copy: some forwards change their module on first use (big_bird's
    # `set_attention_type("original_full")` after its logger.warning), and the compiled run must see
    # the model as built, or a line the probe ran is one the compiled calls never reach
    try:
        probe = copy.deepcopy(model)
    except Exception:  # a module that cannot be copied: probe the original
        probe = model
    for s in built.sizes:
        try:
            if not sizes:
                sys.settrace(_tracer(roots, executed))
                try:
                    for train in (True, False):
                        _call(probe, built, 2, s, train)
                finally:
                    sys.settrace(None)
            else:
                _call(probe, built, 2, s, False)
            sizes.append(s)
        except Exception as exc:
            if not sizes:  # lines of a failed first attempt are not a forward that ran
                executed.clear()
            size_errors[s] = f"{type(exc).__name__}: {exc}"[:300]
        if len(sizes) == 3:
            break
    if not sizes:
        raise RuntimeError(f"eager forward failed at every size: {size_errors}")
    torch._dynamo.reset()
    handler = _install_logging()
    compiled = torch.compile(model, backend="eager")
    errors = []
    calls = 0
    for train in (True, False):
        for b, s in _call_order(sizes):
            try:
                _call(compiled, built, b, s, train)
                calls += 1
            except Exception as exc:
                errors.append(f"train={train} b={b} s={s}: {type(exc).__name__}: {str(exc)[:200]}")
    torch._dynamo.reset()
    coverage = {}
    for filename, lines in executed.items():
        rel = recall_match.relative_to_roots(filename, SITE_DIRS)
        if rel is not None:
            coverage.setdefault(rel, set()).update(lines)
    return {
        "name": name,
        "status": "ok" if calls else "failed",
        "error": None if calls else ("compiled calls all failed: " + "; ".join(errors[:3])),
        "sizes": sizes,
        "calls": calls,
        "call_errors": errors[:5],
        "breaks": handler.breaks,
        "recompiles": handler.recompiles,
        "specializations": handler.specializations,
        "coverage": {k: recall_match.compress_lines(v) for k, v in coverage.items()},
        "seconds": round(time.perf_counter() - t0, 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cache", type=Path, required=True)
    parser.add_argument("--timeout", type=int, default=240)
    parser.add_argument("--condition", choices=sorted(_DTYPES) + ["dynamic"])
    parser.add_argument("names", nargs="+")
    args = parser.parse_args()
    args.cache.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(1)
    signal.signal(signal.SIGALRM, _alarm)
    for name in args.names:
        safe = name.replace(":", "__").replace("/", "_")
        started = args.cache / f"{safe}.started"
        started.write_text(name)
        signal.alarm(args.timeout)
        try:
            result = measure_condition(name, args.condition) if args.condition else measure(name)
        except _Timeout:
            result = {"name": name, "status": "failed", "error": f"timeout after {args.timeout} s"}
        except BaseException as exc:  # noqa: BLE001 - a model that fails to build is reported and skipped
            tb = traceback.format_exception_only(type(exc), exc)[-1].strip()
            result = {"name": name, "status": "failed", "error": tb[:500]}
        finally:
            signal.alarm(0)
            sys.settrace(None)
        try:
            torch._dynamo.reset()
        except Exception:
            pass
        (args.cache / f"{safe}.json").write_text(json.dumps(result))
        started.unlink(missing_ok=True)
        print(f"{name}: {result['status']} {result.get('seconds', '')} {result.get('error') or ''}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
