"""The recall bench's tables of several sets, summed into one.

    python bench/recall_total.py bench/results/recall-*-rescored-2026-12-05-at-9114084.txt

Each report of `bench/recall.py` ends with a table of `| measure | default rules | --select ALL |` rows
holding counts (`72/78 (92 %)`). This adds the counts of each measure over the reports given and prints
one table, so the totals quoted in the README come from a command instead of a hand sum. A set whose
report has no conditional passes gets, in the row that counts them, its plain precision: a finding
whose condition was never measured counts as not real.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

_ROW = re.compile(r"^\| (?P<measure>[^|]+?) \| (?P<a>\d+)/(?P<b>\d+)(?: \([^)]*\))? \| (?P<c>\d+)/(?P<d>\d+)(?: \([^)]*\))? \|$")
PLAIN = "precision: graph-break findings on executed lines that are real"
COUNTING = "precision, counting a conditional finding real when its condition's pass broke at its line"
NOT_EAGER = "... leaving out the findings that say their line runs eagerly today"
# derived: the conditional passes counted, and the findings that say their line runs eagerly today left
# out (no pass measures those, so both other rows count them as not real)
BOTH = "precision, counting conditional passes and leaving out the findings that say they run eagerly today"
# rows a report prints twice (the plain precision again beside the conditional rows)
_REPEATED = {"precision, plain runs only (as above)"}


def table_rows(text: str) -> dict[str, tuple[int, int, int, int]]:
    """measure -> (default found, default all, ALL found, ALL all) for every count row of one report."""
    rows: dict[str, tuple[int, int, int, int]] = {}
    for line in text.splitlines():
        m = _ROW.match(line.strip())
        if m is None or m["measure"] in _REPEATED:
            continue
        rows.setdefault(m["measure"], (int(m["a"]), int(m["b"]), int(m["c"]), int(m["d"])))
    return rows


def total(reports: list[dict[str, tuple[int, int, int, int]]]) -> dict[str, list[int]]:
    sums: dict[str, list[int]] = {}
    for rows in reports:
        rows = dict(rows)
        if COUNTING not in rows and PLAIN in rows:
            rows[COUNTING] = rows[PLAIN]
        for measure, counts in rows.items():
            acc = sums.setdefault(measure, [0, 0, 0, 0])
            for i, n in enumerate(counts):
                acc[i] += n
    if PLAIN in sums and NOT_EAGER in sums and COUNTING in sums:
        # the eager findings are in no numerator, so leaving them out shrinks only the denominator
        sums[BOTH] = [sums[COUNTING][0], sums[NOT_EAGER][1], sums[COUNTING][2], sums[NOT_EAGER][3]]
    return sums


def _cell(found: int, of: int) -> str:
    return f"{found}/{of} ({100 * found / of:.1f} %)" if of else f"{found}/{of}"


def render(sums: dict[str, list[int]], names: list[str]) -> str:
    out = [f"Sum of {len(names)} reports: " + ", ".join(names), "", "| measure | default rules | --select ALL |", "|---|---|---|"]
    for measure, (a, b, c, d) in sums.items():
        out.append(f"| {measure} | {_cell(a, b)} | {_cell(c, d)} |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reports", nargs="+", type=Path)
    args = parser.parse_args(argv)
    reports = []
    for path in args.reports:
        rows = table_rows(path.read_text())
        if not rows:
            print(f"error: {path} holds no table of bench/recall.py", file=sys.stderr)
            return 2
        reports.append(rows)
    print(render(total(reports), [p.name for p in args.reports]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
