"""bench/recall_total.py: the recall bench's tables of several sets, summed."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

import recall_total as rt  # noqa: E402

WITH_PASSES = """## Table

| measure | default rules | --select ALL |
|---|---|---|
| break sites found at the exact line | 14/16 (88 %) | 14/16 (88 %) |
| recompile causes found at the exact line | 3/80 (4 %) | 65/80 (81 %) |
| precision: graph-break findings on executed lines that are real | 14/25 (56 %) | 14/25 (56 %) |
| ... leaving out the findings that say their line runs eagerly today | 14/23 (61 %) | 14/23 (61 %) |

| measure | default rules | --select ALL |
|---|---|---|
| precision, plain runs only (as above) | 14/25 (56 %) | 14/25 (56 %) |
| precision, counting a conditional finding real when its condition's pass broke at its line | 25/25 (100 %) | 25/25 (100 %) |
"""

WITHOUT_PASSES = """| measure | default rules | --select ALL |
|---|---|---|
| break sites found at the exact line | 0/0 | 0/0 |
| recompile causes found at the exact line | 1/36 (3 %) | 23/36 (64 %) |
| precision: graph-break findings on executed lines that are real | 36/44 (82 %) | 36/44 (82 %) |
| ... leaving out the findings that say their line runs eagerly today | 36/36 (100 %) | 36/36 (100 %) |
"""


def test_counts_are_summed_per_measure_and_unmeasured_conditions_count_as_not_real(tmp_path):
    sums = rt.total([rt.table_rows(WITH_PASSES), rt.table_rows(WITHOUT_PASSES)])
    assert sums["break sites found at the exact line"] == [14, 16, 14, 16]
    assert sums["recompile causes found at the exact line"] == [4, 116, 88, 116]
    assert sums[rt.PLAIN] == [50, 69, 50, 69]
    # the second set ran no conditional pass: its plain count stands in
    assert sums[rt.COUNTING] == [61, 69, 61, 69]
    assert "precision, plain runs only (as above)" not in sums
    # 10 findings say they run eagerly today: out of the denominator, in no numerator
    assert sums[rt.BOTH] == [61, 59, 61, 59]


def test_the_command_prints_one_table_and_rejects_a_file_without_one(tmp_path, capsys):
    a, b, c = tmp_path / "a.txt", tmp_path / "b.txt", tmp_path / "c.txt"
    a.write_text(WITH_PASSES)
    b.write_text(WITHOUT_PASSES)
    c.write_text("no table here\n")
    assert rt.main([str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert "| recompile causes found at the exact line | 4/116 (3.4 %) | 88/116 (75.9 %) |" in out
    assert rt.main([str(a), str(c)]) == 2
    assert "holds no table" in capsys.readouterr().err
