"""What the project model and the regex name index hold in memory, before any file is linted.

    python bench/model_memory.py DIR [DIR ...]            # resident size after each step (no tracing)
    python bench/model_memory.py --trace DIR [DIR ...]    # + tracemalloc by line and a per-field breakdown
    python bench/model_memory.py --trace-propagation DIR  # tracemalloc over the propagation alone

Builds the two the way ``fusionlint.runner.run`` does without the findings cache (read, index,
summarise each file, then propagate and drop the function bodies) and prints, after each step, the
resident set size (``VmRSS``), and with ``--trace`` the traced bytes, the allocation lines that hold
the most, and the bytes reachable from each summary field (each object counted once, at the first
field that reaches it, so shared values count where they are first met).
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import sys
import time
import tracemalloc
from pathlib import Path


def _rss_mib() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _deep(value, seen: set[int]) -> int:
    """Bytes of ``value`` and what it reaches (containers and slotted dataclasses), once per object."""
    total = 0
    stack = [value]
    while stack:
        v = stack.pop()
        if id(v) in seen:
            continue
        seen.add(id(v))
        total += sys.getsizeof(v)
        if isinstance(v, dict):
            stack.extend(v.keys())
            stack.extend(v.values())
        elif isinstance(v, (list, tuple, set, frozenset)):
            stack.extend(v)
        elif dataclasses.is_dataclass(v) and not isinstance(v, type):
            stack.extend(getattr(v, f.name) for f in dataclasses.fields(v))
    return total


def _fields(project) -> collections.Counter:
    """Bytes per (class, field), walking every summary; the objects a field holds count under it."""
    from fusionlint.project.summary import ClassSummary, FileSummary, FunctionSummary

    seen: set[int] = set()
    out: collections.Counter = collections.Counter()
    # the containers of the model itself
    out["Project.files/modules (dicts)"] += sys.getsizeof(project.files) + sys.getsizeof(project.modules)
    for summary in project.files.values():
        seen.add(id(summary))
        out["FileSummary (object)"] += sys.getsizeof(summary)
        for f in dataclasses.fields(FileSummary):
            value = getattr(summary, f.name)
            if f.name in ("classes", "functions"):
                out[f"FileSummary.{f.name} (dict)"] += sys.getsizeof(value) if id(value) not in seen else 0
                seen.add(id(value))
                for key in value:
                    out[f"FileSummary.{f.name} (keys)"] += _deep(key, seen)
                continue
            out[f"FileSummary.{f.name}"] += _deep(value, seen)
        for cls in summary.classes.values():
            seen.add(id(cls))
            out["ClassSummary (object)"] += sys.getsizeof(cls)
            for f in dataclasses.fields(ClassSummary):
                out[f"ClassSummary.{f.name}"] += _deep(getattr(cls, f.name), seen)
        for fn in summary.functions.values():
            seen.add(id(fn))
            out["FunctionSummary (object)"] += sys.getsizeof(fn)
            for f in dataclasses.fields(FunctionSummary):
                out[f"FunctionSummary.{f.name}"] += _deep(getattr(fn, f.name), seen)
    return out


def _index_fields(index) -> collections.Counter:
    seen: set[int] = set()
    out: collections.Counter = collections.Counter()
    for f in dataclasses.fields(index):
        out[f"ProjectIndex.{f.name}"] += _deep(getattr(index, f.name), seen)
    return out


def _report(step: str, trace: bool, project, index, top: int) -> None:
    print(f"\n## {step}: RSS {_rss_mib():.1f} MiB", end="")
    if not trace:
        print()
        return
    current, _ = tracemalloc.get_traced_memory()
    print(f", traced {current / 2**20:.1f} MiB")
    snap = tracemalloc.take_snapshot().filter_traces([tracemalloc.Filter(False, tracemalloc.__file__)])
    print(f"\n| allocated at | MiB | blocks |\n|---|---|---|")
    for stat in snap.statistics("lineno")[:top]:
        frame = stat.traceback[0]
        where = f"{Path(frame.filename).parent.name}/{Path(frame.filename).name}:{frame.lineno}"
        print(f"| {where} | {stat.size / 2**20:.2f} | {stat.count:,} |")
    fields = _fields(project) + _index_fields(index)
    total = sum(fields.values())
    print(f"\n| field (deep, each object once) | MiB | share |\n|---|---|---|")
    for name, size in fields.most_common(top):
        print(f"| {name} | {size / 2**20:.2f} | {size / total:.0%} |")
    print(f"| all of the above | {total / 2**20:.2f} | |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("roots", nargs="+", type=Path)
    parser.add_argument("--trace", action="store_true", help="tracemalloc snapshots and the per-field breakdown")
    parser.add_argument("--trace-propagation", action="store_true", help="tracemalloc over the propagation only (cheap)")
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    if args.trace:
        tracemalloc.start()

    from fusionlint.analysis.project import ProjectIndex
    from fusionlint.files import CurrentText, display_path, read_source_encoded
    from fusionlint.project.model import Project

    root = Path.cwd()
    files = sorted({p for r in args.roots for p in (r.rglob("*.py") if r.is_dir() else [r])})
    _report("start (imports done)", args.trace, Project(), ProjectIndex(), args.top)
    index, model = ProjectIndex(), Project()
    model.name_index = index
    t0 = time.process_time()
    lines = 0
    for path in files:
        text, _ = read_source_encoded(path)
        lines += text.count("\n")
        shown = display_path(path, root)
        index.add_file(shown, text, reread=CurrentText(path))
        model.add(shown, path, text)
        del text
    print(f"{len(files):,} files, {lines:,} lines, {len(model.files):,} summaries, "
          f"{sum(len(s.functions) for s in model.files.values()):,} functions, "
          f"{sum(len(s.classes) for s in model.files.values()):,} classes; built in {time.process_time() - t0:.1f} CPU s")
    _report("model and index built", args.trace, model, index, args.top)
    if args.trace_propagation:
        tracemalloc.start()
    t0 = time.process_time()
    model.propagate()
    print(f"{len(model.export_facts()):,} compiled functions; propagated in {time.process_time() - t0:.1f} CPU s")
    if args.trace_propagation:
        current, peak = tracemalloc.get_traced_memory()
        print(f"\npropagation alone: holds {current / 2**20:.1f} MiB traced after it, {peak / 2**20:.1f} MiB at its peak")
        snap = tracemalloc.take_snapshot().filter_traces([tracemalloc.Filter(False, tracemalloc.__file__)])
        print(f"\n| allocated at | MiB | blocks |\n|---|---|---|")
        for stat in snap.statistics("lineno")[: args.top]:
            frame = stat.traceback[0]
            print(f"| {Path(frame.filename).parent.name}/{Path(frame.filename).name}:{frame.lineno} | {stat.size / 2**20:.2f} | {stat.count:,} |")
        tracemalloc.stop()
    _report("after the propagation", args.trace, model, index, args.top)
    model.drop_bodies()
    _report("after drop_bodies (what the lint phase keeps)", args.trace, model, index, args.top)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
