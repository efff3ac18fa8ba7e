"""fusionlint.cst_parse: the same tree as libcst's parse, and validation back on afterwards."""

from pathlib import Path

import libcst as cst
import pytest

from fusionlint import cst_parse

HERE = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("path", sorted((HERE / "fusionlint").glob("*.py"))[:12], ids=lambda p: p.name)
def test_same_tree_as_libcst(path):
    text = path.read_text(encoding="utf-8")
    ours = cst_parse.parse(text)
    assert ours.code == text
    assert ours.deep_equals(cst.parse_module(text))


def test_validation_is_back_after_a_parse():
    cst_parse.parse("x = 1\n")
    with pytest.raises(cst.CSTValidationError):
        cst.Name("not an identifier")


def test_validation_is_back_after_a_failed_parse():
    with pytest.raises(cst.ParserSyntaxError):
        cst_parse.parse("def f(:\n")
    with pytest.raises(cst.CSTValidationError):
        cst.Name("1x")
