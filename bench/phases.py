"""CPU seconds of each phase of a cold static pass (no findings cache, one process).

    python bench/phases.py .zoo/timm-1.0.31/timm
    python bench/phases.py --full-parse .zoo/transformers-5.24.0/transformers/models/[a-c]*

Each phase is a function of fusionlint wrapped to add its process CPU time, less the time of the
phases it calls (so the rows add up to the run). No profiler runs: cProfile's per-call cost inflates
the pure-Python phases (the summaries, the walks) about threefold against libcst's native parser and
gives a misleading split. Also prints the peak RSS and how many lines libcst was handed.
"""

from __future__ import annotations

import argparse
import collections
import functools
import resource
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(HERE))  # this checkout's fusionlint, not an installed one

import libcst as cst  # noqa: E402

from fusionlint import engine, positions, runner, sparse  # noqa: E402
from fusionlint.analysis import index as index_mod  # noqa: E402
from fusionlint.analysis import project as name_index  # noqa: E402
from fusionlint.config import Settings  # noqa: E402
from fusionlint.project import model as model_mod  # noqa: E402
from fusionlint.project import summary  # noqa: E402

_spent: collections.Counter = collections.Counter()
_calls: collections.Counter = collections.Counter()
_inner: list[float] = []
_parsed_lines = [0]


def _timed(owner, name: str, label: str):
    original = getattr(owner, name)

    @functools.wraps(original)
    def wrapper(*args, **kwargs):
        start = time.process_time()
        _inner.append(0.0)
        try:
            return original(*args, **kwargs)
        finally:
            spent = time.process_time() - start
            nested = _inner.pop()
            _spent[label] += spent - nested
            _calls[label] += 1
            if _inner:
                _inner[-1] += spent

    setattr(owner, name, wrapper)
    return wrapper


def _instrument() -> None:
    model_mod.summarize = _timed(summary, "summarize", "CPython parse + summary")
    _timed(summary, "outline_of", "outline (of the summary's tree)")
    _timed(name_index.ProjectIndex, "add_file", "regex name index")
    _timed(model_mod.Project, "propagate", "project linking (propagation)")
    _timed(engine.Engine, "_screen", "screen (rules per file)")
    _timed(engine.Engine, "_plan", "sparse plan (what libcst parses)")
    engine.parse_outline = _timed(engine, "parse_outline", "CPython parse + outline (linted files)")
    engine.mark_compiled = _timed(engine, "mark_compiled", "per-file setup (compiled marks, project facts, eager/dead code)")
    engine.apply_project = _timed(engine, "apply_project", "per-file setup (compiled marks, project facts, eager/dead code)")
    engine.eager_nodes = _timed(engine, "eager_nodes", "per-file setup (compiled marks, project facts, eager/dead code)")
    engine.dead_nodes = _timed(engine, "dead_nodes", "per-file setup (compiled marks, project facts, eager/dead code)")
    _timed(model_mod.Project, "drop_bodies", "dropping the summaries' bodies")
    parse = _timed(cst, "parse_module", "libcst parse")

    def counting_parse(text, *args, **kwargs):
        _parsed_lines[0] += text.count("\n")
        return parse(text, *args, **kwargs)

    engine.cst.parse_module = counting_parse
    _timed(index_mod.Collector, "collect", "collect walk")
    _timed(engine.Engine, "_run_rules", "rules")
    engine.sparse_mod.still_exact = _timed(sparse, "still_exact", "sparse checks")
    _timed(positions.Positions, "__init__", "positions (reported files)")
    _timed(engine.Engine, "_to_findings", "findings")
    _timed(engine.Suppressions, "from_source", "suppressions")
    _timed(runner, "read_source_encoded", "read")
    _timed(runner, "discover", "discover")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("paths", nargs="+", type=Path)
    parser.add_argument("--full-parse", action="store_true", help="give libcst every file whole (no sparse parse)")
    args = parser.parse_args()
    missing = [str(p) for p in args.paths if not p.exists()]
    if missing:
        parser.error(f"no such file or directory: {', '.join(missing)}")
    _instrument()
    if args.full_parse:
        runner.Engine = functools.partial(engine.Engine, sparse=False)
    files = [p for root in args.paths for p in (sorted(root.rglob("*.py")) if root.is_dir() else [root])]
    lines = sum(p.read_bytes().count(b"\n") for p in files)
    start = time.process_time()
    outcome = runner.run([str(p) for p in args.paths], Settings(root=Path.cwd()), runner.RunOptions(jobs=1))
    cpu = time.process_time() - start
    result = outcome.result
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{result.files_checked} files, {lines:,} lines, {cpu:.2f} CPU s, {lines / cpu:,.0f} lines/CPU-s, "
          f"{len(result.findings)} findings, {len(result.errors)} errors, peak RSS {peak:.0f} MiB; "
          f"libcst parsed {_parsed_lines[0]:,} lines ({100 * _parsed_lines[0] / max(lines, 1):.0f} %)")
    print()
    print("| phase | CPU s | % | calls |")
    print("|---|---|---|---|")
    for label, spent in sorted(_spent.items(), key=lambda kv: -kv[1]):
        print(f"| {label} | {spent:.2f} | {100 * spent / cpu:.1f} | {_calls[label]} |")
    rest = cpu - sum(_spent.values())
    print(f"| everything else | {rest:.2f} | {100 * rest / cpu:.1f} | |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
