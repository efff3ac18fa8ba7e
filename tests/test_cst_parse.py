"""fusionlint.cst_parse: the same tree as libcst's parse, and validation back on afterwards."""

from pathlib import Path

import libcst as cst
import pytest

from fusionlint import cst_parse, pieces
from tests.helpers import cut_every

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


# --- a long text parsed in pieces: the same tree as the whole text's -------------------------------

LAYOUTS = {
    "comments and blank lines between definitions": '''\
# header comment

import os


def a(x):
    return x
    # indented after the body: the block's footer


# before b
def b():
    pass
# right before c
class C:
    def m(self):
        if self:
            return 1

        # deeper, then a blank line

# last comment
''',
    "decorators of one line and more": '''\
import functools


@functools.lru_cache(
    maxsize=None,
)
def a():
    return 1


@staticmethod
@functools.wraps(
    a
)
def b():
    return 2


class D:
    x = 1
''',
    "a def at column 0 inside a string (the piece before it does not parse alone)": '''\
DOC = """
Example:

def not_a_definition():
    pass

class NotAClass:
    pass
"""


def real():
    return DOC
''',
    "the first indentation inside an else (two spaces), later blocks four": '''\
if True: x = 1
else:
  x = 2


def f():
    return x


class G:
      def h(self):
          return 3
''',
    "tabs": "def f():\n\treturn 1\n\n\ndef g():\n\tif 1:\n\t\treturn 2\n",
    "a match before any indented block": '''\
match 1:
  case 1:
      pass


def f():
    return 1
''',
    "no trailing newline": "def f():\n    return 1\n\n\ndef g():\n    return 2",
    "only simple statements before the first definition": "x = 1\ny = 2\n\n\ndef f():\n  return x\n\n\ndef g():\n  return y\n",
    "methods of a long class, with comments and blank lines between them": '''\
class Big(Base):
    """Docstring."""

    x = 1

    def a(self):
        return 1
        # deeper: the method's block

    # at the class's level

    @property
    def b(self):
        return 2

# at column 0, inside the class

    def c(self):
        if self:
            return 3
    \n    def d(self):
        pass


    class Inner:
        def e(self):
            pass

    if FLAG:
        def f(self):
            pass

    def g(self):
        pass


def after():
    return Big
''',
    "a function's nested definitions (no class to add them to)": '''\
def outer():
    x = 1

    def inner():
        return x

    def other():
        return 2

    return inner


class After:
    def m(self):
        pass
''',
    "a header, then a method's cut inside a top-level if (the first piece joined with the next)": '''\
# header comment

if FLAG:
    x = 1

    def inner():
        pass
else:
    y = 2


def f():
    pass
''',
    "a class indented with two spaces in a four-space file": '''\
def f():
    return 1


class Narrow:
  def a(self):
    return 1

  def b(self):
    return 2
''',
    "lines of spaces alone between definitions and methods": "x = 1\n\n    \ndef f():\n    return 1\n\n\t\n\ndef g():\n"
    "    pass\n\n\nclass A:\n    def m(self):\n        pass\n\t\n\n    def n(self):\n        pass\n\n\ndef h():\n    pass\n",
    "a carriage return (parsed whole)": "def f():\r\n    return 1\r\n\r\n\r\ndef g():\r\n    return 2\r\n",
}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_a_text_parsed_in_pieces_is_the_whole_texts_tree(layout, monkeypatch):
    text = LAYOUTS[layout]
    cut_every(monkeypatch, 1)
    parses = []
    real_parse = cst.parse_module
    monkeypatch.setattr(cst, "parse_module", lambda t, *a, **k: parses.append(t) or real_parse(t, *a, **k))
    ours = cst_parse.parse(text)
    monkeypatch.undo()
    assert ours.code == text
    assert ours.deep_equals(cst.parse_module(text))
    if "\r" not in text:
        assert len(parses) > 1  # it was parsed in pieces (or began to be, for the match)


def test_a_cut_inside_a_string_joins_that_piece_with_the_next():
    text = LAYOUTS["a def at column 0 inside a string (the piece before it does not parse alone)"]
    cuts = pieces.cuts(text, piece_lines=1, split_lines=0)
    assert len(cuts) == 3  # two inside the string, one before `def real`
    module = cst_parse._in_pieces(text, cuts)
    assert module is not None and module.deep_equals(cst.parse_module(text))


def test_a_long_classs_methods_are_pieces_of_their_own(monkeypatch):
    text = LAYOUTS["methods of a long class, with comments and blank lines between them"]
    cuts = pieces.cuts(text, piece_lines=1, split_lines=0)
    assert [indent for _, indent in cuts].count("    ") >= 5
    parsed = []
    real_parse = cst.parse_module
    monkeypatch.setattr(cst, "parse_module", lambda t, *a, **k: parsed.append(t) or real_parse(t, *a, **k))
    module = cst_parse._in_pieces(text, cuts)
    monkeypatch.undo()
    assert module is not None and module.deep_equals(cst.parse_module(text))
    assert sum("class _:" in t for t in parsed) >= 3  # methods parsed as a class's body, not joined


def test_short_texts_are_not_cut():
    text = "def f():\n    return 1\n\n\n" * (pieces.SPLIT_LINES // 4)
    assert pieces.cuts(text) == []
    assert pieces.cuts(text * 2) != []


@pytest.mark.parametrize("path", sorted((HERE / "fusionlint").glob("*.py"))[:12], ids=lambda p: p.name)
def test_our_own_sources_in_pieces(path, monkeypatch):
    cut_every(monkeypatch, 20)
    text = path.read_text(encoding="utf-8")
    ours = cst_parse.parse(text)
    assert ours.code == text
    assert ours.deep_equals(cst.parse_module(text))
