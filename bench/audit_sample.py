"""Draw the hand-audit sample of docs/zoo-audit.md from a `bench/zoo.py --json` file.

    python bench/audit_sample.py zoo.json -n 60 --seed 20261202 > sample.md

The findings are sorted by (path, line, column, rule) first, so the same JSON and seed always give
the same sample, whatever order the run wrote them in. A uniform sample of all findings estimates
the precision of all of them (rounds 1-4 sampled per rule, which weights small rules up).
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path


def sample(findings: list[dict], n: int, seed: int) -> list[dict]:
    ordered = sorted(findings, key=lambda f: (f["path"], f["line"], f["column"], f["code"]))
    return sorted(random.Random(seed).sample(ordered, min(n, len(ordered))), key=lambda f: (f["path"], f["line"]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("json", type=Path, help="the output of bench/zoo.py --json")
    parser.add_argument("-n", type=int, default=60, help="sample size")
    parser.add_argument("--seed", type=int, default=20261202)
    args = parser.parse_args()
    findings = json.loads(args.json.read_text(encoding="utf-8"))["findings"]
    print(f"{min(args.n, len(findings))} of {len(findings)} findings, random.Random({args.seed})\n")
    for i, f in enumerate(sample(findings, args.n, args.seed), 1):
        chain = " -> ".join(f.get("chain") or [])
        print(f"{i}. `{f['path']}:{f['line']}:{f['column']}` {f['code']} ({f.get('context') or '-'}): {f['message']}")
        if chain:
            print(f"   chain: {chain}")


if __name__ == "__main__":
    main()
