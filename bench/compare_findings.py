"""Compare the findings of two ``python bench/zoo.py --json OUT`` runs, field for field.

    python bench/compare_findings.py BEFORE.json AFTER.json

Exit status 0 when the findings (every field, in order) and the file errors are identical, 1 otherwise.
"""

from __future__ import annotations

import collections
import json
import sys


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    try:
        before, after = (json.load(open(path)) for path in argv)
    except (OSError, ValueError) as exc:
        print(f"compare_findings: cannot read {exc}", file=sys.stderr)
        return 2
    fa, fb = before["findings"], after["findings"]
    rows = sum(1 for x, y in zip(fa, fb) if x != y) + abs(len(fa) - len(fb))
    fields = collections.Counter(k for x, y in zip(fa, fb) for k in x if x[k] != y.get(k))
    same_errors = before["errors"] == after["errors"]
    print(f"findings: {len(fa)} before, {len(fb)} after; rows differing: {rows}; fields differing: {dict(fields) or 'none'}")
    print(f"errors: {len(before['errors'])} before, {len(after['errors'])} after, identical: {same_errors}")
    print("per rule (after):", ", ".join(f"{c} {n}" for c, n in sorted(collections.Counter(f["code"] for f in fb).items())))
    return 0 if rows == 0 and same_errors else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
