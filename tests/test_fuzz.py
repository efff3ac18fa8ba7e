"""A reduced run of bench/fuzz.py (200 mutated files, fixed seed): no traceback, hang, internal error
or damaged file. The full run (10,000 files) is `python bench/fuzz.py`; bench/results/ has its output."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def _load_fuzz():
    spec = importlib.util.spec_from_file_location("fusionlint_bench_fuzz", REPO / "bench" / "fuzz.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


fuzz = _load_fuzz()


def test_cases_are_deterministic_and_cover_every_generator():
    a, b = fuzz.make_cases(3, 60), fuzz.make_cases(3, 60)
    assert [(c.generator, c.base, c.data) for c in a] == [(c.generator, c.base, c.data) for c in b]
    assert fuzz.make_cases(3, 60, only=[41])[0].data == a[41].data  # one case regenerates alone
    assert {c.family for c in a} == set(fuzz.GENERATORS)
    assert [c.data for c in fuzz.make_cases(4, 60)] != [c.data for c in a]


def test_python_lines_end_at_cr_lf_and_crlf_only():
    assert fuzz.py_lines("a\rb\r\nc\nd\u2028e\x0cf") == ["a\r", "b\r\n", "c\n", "d\u2028e\x0cf"]


def _case(text: str) -> "fuzz.Case":
    return fuzz.Case(0, "identity", "x.py", text.encode())


FINDING = {"path": "c00000.py", "code": "FL301", "fix": {"applicability": "safe", "edits": [
    {"line": 2, "column": 22, "end_line": 2, "end_column": 26, "content": "reshape"}]}}
SOURCE = "import torch\ny = x.permute(1, 0).view(-1)\nz = 1\n"


def test_damage_accepts_exactly_the_reported_edits():
    fixed = SOURCE.replace(".view(", ".reshape(").encode()
    assert fuzz.damage(_case(SOURCE), fixed, [FINDING]) is None
    assert fuzz.damage(_case(SOURCE), SOURCE.encode(), [FINDING]) is None  # nothing written


def test_damage_reports_bytes_outside_the_edits_and_broken_files():
    appended = SOURCE.encode() + b"reshape"
    assert "outside the fix edits" in fuzz.damage(_case(SOURCE), appended, [FINDING])
    other_line = SOURCE.replace("z = 1", "z = 2").replace(".view(", ".reshape(").encode()
    assert "outside the fix edits" in fuzz.damage(_case(SOURCE), other_line, [FINDING])
    assert fuzz.damage(_case(SOURCE), b"y = (\n", [FINDING]) == "unparseable after --fix"
    latin = "# coding: latin-1\n" + SOURCE
    assert "encoding" in fuzz.damage(fuzz.Case(0, "x", "x", latin.encode("latin-1")), SOURCE.encode(), [])


# 200 mutated files (seed 0). Before the issue-8 fixes this run found RecursionError tracebacks,
# a 'zlib' cookie's LookupError, an IndexError on CR-only files, bytes written outside a fix's
# range after mixed newlines, a CPython-rejected file rewritten by --fix, int() of '0x1' and of
# huge literals, and a CSTValidationError on the identifier 'x\u200d'.
@pytest.mark.slow
def test_reduced_fuzz_run_is_clean():
    cases = fuzz.make_cases(0, 200)
    report = fuzz.fuzz(cases, batch_size=100)
    assert len(report.cases) == 200
    assert report.count("traceback") == 0 and report.count("hang") == 0, report.text(0, [])
    assert report.count("internal") == 0 and report.count("damaged") == 0, report.text(0, [])
    assert report.count("invalid") == 0, report.text(0, [])
