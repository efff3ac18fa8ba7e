"""Fix round-trip over real code: `--fix --unsafe-fixes` on a copy of timm + transformers.

    python bench/roundtrip.py                 # the pinned wheels of bench/zoo.py (downloaded once into .zoo/)
    python bench/roundtrip.py --corpus DIR    # or any directory of Python sources

On a scratch copy: one `check --select ALL --unsafe-fixes --format json` run records every fix edit,
one `check --select ALL --fix --unsafe-fixes` run applies them, and a second `--fix` run must change
nothing. Every file the fix changed must still parse (CPython), keep its encoding and BOM, and
differ from the original only inside the reported fix edits (the same check as bench/fuzz.py's
"damaged"). Prints a table; writes it to bench/results/roundtrip-<date>.txt with --write.
"""

from __future__ import annotations

import argparse
import collections
import datetime
import hashlib
import importlib.util
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _bench_module(name: str):
    spec = importlib.util.spec_from_file_location(f"fusionlint_bench_{name}", HERE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


zoo = _bench_module("zoo")  # the pinned corpus and its download
fuzz = _bench_module("fuzz")  # damage check, subprocess runner


def snapshot(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*.py"))}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, action="append", help="directory to fix (repeatable)")
    parser.add_argument("--timeout", type=float, default=3600, help="seconds per fusionlint run (a hang guard)")
    parser.add_argument("--memory-mb", type=int, default=8192)
    parser.add_argument("--write", action="store_true", help="also write bench/results/roundtrip-<date>.txt")
    args = parser.parse_args()
    roots = args.corpus or zoo.fetch()
    t0 = time.perf_counter()
    lines_out = []

    def say(text: str = "") -> None:
        print(text, flush=True)
        lines_out.append(text)

    with tempfile.TemporaryDirectory(prefix="fusionlint-roundtrip-") as tmp:
        work = Path(tmp)
        names = []
        for root in roots:
            label = root.parent.name if root.name == root.parent.name.split("-")[0] else root.name
            shutil.copytree(root, work / label)
            names.append(label)
        originals = {str(p.relative_to(work)): p.read_bytes() for p in sorted(work.rglob("*.py"))}

        runs = {}
        for step, extra in (("json", ["--format", "json"]), ("fix", ["--fix"]), ("fix again", ["--fix"])):
            before = snapshot(work) if step == "fix again" else None
            proc = fuzz.run_python(["-m", "fusionlint.cli", "check", "--select", "ALL", "--unsafe-fixes", *extra, *names],
                                   work, args.timeout, args.memory_mb)
            symptoms, doc = fuzz.classify("json" if step == "json" else "fix", proc.returncode, proc.stdout, proc.stderr, args.timeout)
            runs[step] = (proc, symptoms, doc, before)
            print(f"{step}: exit {proc.returncode}, {proc.seconds:.0f} s, peak {proc.maxrss_mb:.0f} MB {symptoms or ''}",
                  file=sys.stderr, flush=True)
            if step == "fix":
                after_fix = {str(p.relative_to(work)): p.read_bytes() for p in sorted(work.rglob("*.py"))}
        json_doc = runs["json"][2] or {"findings": [], "errors": []}
        by_file = collections.defaultdict(list)
        for f in json_doc["findings"]:
            by_file[f["path"]].append(f)
        changed = [p for p, data in after_fix.items() if originals.get(p) != data]
        damaged = []
        for path in changed:
            case = fuzz.Case(0, "roundtrip", path, originals[path])
            why = fuzz.damage(case, after_fix[path], by_file.get(path, []))
            if why:
                damaged.append((path, why))
        unparseable = [p for p, why in damaged if why.startswith("unparseable")]
        second_changed = [p for p, h in snapshot(work).items() if runs["fix again"][3].get(p) != h]
        fixable = sum(1 for f in json_doc["findings"] if f.get("fix"))
        per_rule = collections.Counter(f["code"] for f in json_doc["findings"] if f.get("fix"))

    corpus = ", ".join(f"{r.parent.name}" for r in roots)
    say(f"fusionlint fix round-trip, {datetime.datetime.now().isoformat(timespec='seconds')}: {corpus}")
    say("command: python bench/roundtrip.py (check --select ALL --unsafe-fixes; --fix twice)")
    say("")
    say("| files | findings with a fix | files changed by --fix | unparseable | changed outside fix edits | changed by a second --fix | tracebacks / internal errors |")
    say("|---|---|---|---|---|---|---|")
    problems = [s for _, syms, _, _ in runs.values() for s in syms]
    say(f"| {len(originals)} | {fixable} | {len(changed)} | {len(unparseable)} | {len(damaged) - len(unparseable)} | "
        f"{len(second_changed)} | {len(problems)} |")
    say("")
    say("| rule | findings with a fix |")
    say("|---|---|")
    for code, n in sorted(per_rule.items()):
        say(f"| {code} | {n} |")
    for step, (proc, syms, _, _) in runs.items():
        say(f"- `{step}` run: exit {proc.returncode}, {proc.seconds:.0f} s wall, peak RSS {proc.maxrss_mb:.0f} MB"
            + (f"; {'; '.join(syms)}" if syms else ""))
    for path, why in damaged:
        say(f"- damaged: {path}: {why}")
    for path in second_changed:
        say(f"- not idempotent: {path}")
    say(f"- total {time.perf_counter() - t0:.0f} s")
    if args.write:
        out = HERE / "results" / f"roundtrip-{datetime.date.today().isoformat()}.txt"
        out.parent.mkdir(exist_ok=True)
        out.write_text("\n".join(lines_out) + "\n", encoding="utf-8")
        print(f"wrote {out}", file=sys.stderr)
    return 1 if damaged or second_changed or problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
