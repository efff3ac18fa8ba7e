"""Run the static pass over real model zoos and print speed and findings per rule.

    python bench/zoo.py                 # downloads pinned timm + transformers wheels (no deps) once
    python bench/zoo.py --zoo all       # the four pinned zoos: also MONAI and open_clip
    python bench/zoo.py --zoo monai --zoo open_clip_torch
    python bench/zoo.py --corpus DIR    # or any directory of Python sources

Wheels are unpacked under .zoo/ (git-ignored); nothing is installed or imported from them.
Speed is lines per CPU-second of this process (static pass only: discovery, read, index, lint).
"""

from __future__ import annotations

import argparse
import collections
import json
import subprocess
import sys
import time
import zipfile
from pathlib import Path

# distribution -> (pinned version, the package directories inside its wheel that are linted).
# MONAI's pin is the one bench/recall.py builds models from; open_clip_torch was the newest on the
# registry when it was added (2026-12-01). The default stays timm + transformers so that speed and
# finding counts stay comparable with the earlier results under bench/results/.
ZOO = {
    "timm": ("1.0.31", ("timm",)),
    "transformers": ("5.24.0", ("transformers",)),
    "monai": ("1.6.1", ("monai",)),
    "open_clip_torch": ("3.3.0", ("open_clip",)),
}
DEFAULT_ZOO = ("timm", "transformers")
HERE = Path(__file__).resolve().parent.parent
CACHE = HERE / ".zoo"


def fetch(names: tuple[str, ...] = DEFAULT_ZOO) -> list[Path]:
    roots = []
    for name in names:
        version, packages = ZOO[name]
        dest = CACHE / f"{name}-{version}"
        if not dest.exists():
            CACHE.mkdir(exist_ok=True)
            subprocess.run(
                [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(CACHE), f"{name}=={version}"],
                check=True,
            )
            # Wheel file names normalise the distribution name (open_clip_torch-3.3.0-py3-none-any.whl).
            (wheel,) = CACHE.glob(f"{name.replace('-', '_')}-{version}-*.whl")
            tmp = dest.with_name(dest.name + ".partial")
            with zipfile.ZipFile(wheel) as zf:
                zf.extractall(tmp)
            tmp.rename(dest)  # only a complete unpack counts as fetched
        roots.extend(dest / package for package in packages)
    return roots


def _zoo_names(chosen: list[str] | None) -> tuple[str, ...]:
    if not chosen:
        return DEFAULT_ZOO
    if "all" in chosen:
        return tuple(ZOO)
    unknown = [c for c in chosen if c not in ZOO]
    if unknown:
        raise SystemExit(f"bench/zoo.py: unknown zoo {', '.join(unknown)} (choose from {', '.join(ZOO)}, all)")
    return tuple(dict.fromkeys(chosen))


def _cpu() -> float:
    """CPU seconds of this process and of its finished children (the --jobs workers)."""
    import resource

    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, action="append", help="directory to lint (repeatable)")
    parser.add_argument("--zoo", action="append", help=f"pinned zoo to fetch and lint (repeatable): {', '.join(ZOO)}, all; default timm + transformers")
    parser.add_argument("--select", default=None, help="rule selection, e.g. ALL")
    parser.add_argument("--show", type=int, default=0, help="print N findings per rule for inspection")
    parser.add_argument("--json", type=Path, default=None, help="write every finding to this JSON file (to diff runs)")
    parser.add_argument("--jobs", type=int, default=1, help="static-pass worker processes (default 1: CPU per line)")
    parser.add_argument("--full-parse", action="store_true", help="give libcst every file whole (no sparse parse)")
    args = parser.parse_args()
    roots = args.corpus or fetch(_zoo_names(args.zoo))

    from fusionlint.config import Settings
    from fusionlint.runner import RunOptions, run

    if args.full_parse:
        import functools

        from fusionlint import engine, runner

        runner.Engine = functools.partial(engine.Engine, sparse=False)

    settings = Settings(root=Path.cwd(), select=args.select.split(",") if args.select else None)
    lines = sum(p.read_bytes().count(b"\n") for root in roots for p in root.rglob("*.py"))
    t0, c0 = time.perf_counter(), _cpu()
    outcome = run([str(r) for r in roots], settings, RunOptions(jobs=args.jobs))
    wall, cpu = time.perf_counter() - t0, _cpu() - c0
    result = outcome.result
    per_rule = collections.Counter(f.code for f in result.findings)

    print(f"| corpus | files | lines | CPU s | wall s | lines / CPU s | findings | errors |")
    print(f"|---|---|---|---|---|---|---|---|")
    label = ", ".join(f"{r.parent.name}" for r in roots)
    print(
        f"| {label} | {result.files_checked} | {lines:,} | {cpu:.2f} | {wall:.2f} | {lines / cpu:,.0f} | "
        f"{len(result.findings)} | {len(result.errors)} |"
    )
    print()
    print("| rule | findings |")
    print("|---|---|")
    for code, n in sorted(per_rule.items()):
        print(f"| {code} | {n} |")
    for err in result.errors[:20]:
        print(f"error: {err.path}: {err.message}", file=sys.stderr)
    if args.json:
        rows = [
            {"path": f.path, "line": f.line, "column": f.column, "end_line": f.end_line, "end_column": f.end_column,
             "code": f.code, "message": f.message, "context": f.context, "effects": [str(e) for e in f.effects], "severity": str(f.severity), "chain": list(f.chain or ()),
             "fix": None if f.fix is None else [str(f.fix.applicability), f.fix.title, [[e.line, e.column, e.end_line, e.end_column, e.content, e.original] for e in f.fix.edits]]}
            for f in result.findings
        ]
        errors = [[e.path, e.message, e.line, e.column] for e in result.errors]
        args.json.write_text(json.dumps({"lines": lines, "cpu_s": cpu, "findings": rows, "errors": errors}, indent=1))
    if args.show:
        shown = collections.Counter()
        for f in result.findings:
            if shown[f.code] < args.show:
                shown[f.code] += 1
                print(f"{f.path}:{f.line}:{f.column}: {f.code} {f.message} [{f.context}]")
    return 1 if outcome.internal_errors else 0


if __name__ == "__main__":
    raise SystemExit(main())
