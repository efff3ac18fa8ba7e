"""fusionlint.positions gives every node the range libcst's PositionProvider gives it."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from fusionlint.positions import Positions

REPO = Path(__file__).resolve().parent.parent
SOURCES = sorted(REPO.glob("fixtures/*/*.py")) + sorted(REPO.glob("fusionlint/**/*.py")) + sorted(REPO.glob("rules/*.py"))

ODD = [
    "x = 1",  # no final newline
    "",
    "\n\n",
    "a = 1\r\nb = [\r\n  2,\r\n]\r\n",
    "a = 1\rb = 2\r",
    "@dec\n@other(1)\ndef f(a, *, b=2):  # c\n    '''doc'''\n    return (a +\n            b)\n",
    "class C(B, metaclass=M):\n\n    # lead\n    x: int = 1\n    def m(self): ...\n",
    "if a:\n    pass\nelif b:\n    pass\nelse:\n    y = f'{a!r:>{w}}' \\\n        'x'\n",
    "s = 'é😀'; t = x[1:2, ...].y(z=lambda q: q ** 2)\n",
    "with (a as b, c as d):\n    try:\n        pass\n    except* E as e:\n        raise\n    finally:\n        del q\n",
    "match p:\n    case [1, *rest] if rest:\n        pass\n    case {'k': v, **kw}:\n        pass\n",
]


def _agree(source: str) -> None:
    module = cst.parse_module(source)
    expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    got = Positions(module)
    assert len(expected) > 0
    for node, rng in expected.items():
        assert got[node] == rng, (type(node).__name__, module.code_for_node(node)[:60])


@pytest.mark.parametrize("source", ODD)
def test_odd_sources_agree(source):
    _agree(source)


def test_a_quarter_of_the_repo_files_agree():
    assert len(SOURCES) > 100
    # every fourth of the repo's files (their number grows with the repo: half of them took 15 s of the
    # suite on the 2-core machine); the three tests below read other files, the ODD sources the edge cases
    for path in SOURCES[::4]:
        _agree(path.read_text(encoding="utf-8"))


def _subtree(*roots: cst.CSTNode) -> set:
    """Every node under ``roots``, the roots included."""
    inside: set = set()
    stack = list(roots)
    while stack:
        node = stack.pop()
        inside.add(node)
        stack.extend(node.children)
    return inside


def _statements_agree(source: str) -> int:
    """Rendering only some top-level statements gives their nodes the ranges PositionProvider gives; a
    node elsewhere is answered too (the whole module is rendered then). Returns how many statements
    were rendered alone."""
    module = cst.parse_module(source)
    expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    alone = 0
    # a node outside the picked statements is asked of the first and the middle statement only: that
    # question renders the whole module, so asking it after every statement made the test quadratic
    # in a file's statements (6.5 of 13 CPU s on one 66-statement file)
    ask_outside = {0, len(module.body) // 2}
    for i, statement in enumerate(module.body):
        picked = [statement] + ([module.body[i - 1]] if i else [])
        got = Positions(module, source, picked)
        alone += not got._whole
        inside = _subtree(*picked)
        for node in inside:
            if node in expected:
                assert got[node] == expected[node], (type(node).__name__, module.code_for_node(node)[:60])
        outside = next((n for n in expected if n not in inside and n is not module), None) if i in ask_outside else None
        if outside is not None:
            assert got[outside] == expected[outside]
            assert got._whole
    return alone


@pytest.mark.parametrize("source", ODD)
def test_odd_sources_agree_statement_by_statement(source):
    _statements_agree(source)


def test_statements_rendered_alone_agree_on_repo_files():
    alone = sum(_statements_agree(p.read_text(encoding="utf-8")) for p in SOURCES[3::14])
    assert alone > 100  # most statements are found by their text


def test_a_statement_written_twice_or_the_last_line_without_newline_falls_back_to_the_whole_module():
    source = "x = 1\ny = 2\nx = 1\nz = 3"
    module = cst.parse_module(source)
    expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    for statement in (module.body[0], module.body[3]):  # `x = 1` twice; `z = 3` has no final newline
        got = Positions(module, source, [statement])
        assert got._whole
        assert got[statement] == expected[statement]
    got = Positions(module, source, [module.body[1]])
    assert not got._whole and got[module.body[1]] == expected[module.body[1]]


METHOD_SOURCES = [
    "class C(B):\n\n    # lead\n    x: int = 1\n\n    @property\n    def m(self):\n        return (self.x +\n                1)\n\n    def n(self, a):  # c\n        '''doc'''\n        if a:\n            return a\n        # footer\n",
    "class T:\n\tdef f(self):\n\t\treturn 1\n\tdef g(self):\n\t\treturn 2\n",  # tab-indented body
    "class A:\n  def f(self): return 1\nclass B:\n  def f(self): return 1\n",  # the same method text twice
]


def _methods_agree(source: str) -> tuple[int, int]:
    """Rendering one method of a class alone gives its nodes PositionProvider's ranges; a node of the
    class outside the method, and one outside the class, are answered too. Returns (methods rendered
    alone, methods in all)."""
    module = cst.parse_module(source)
    expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    alone = total = 0
    for cls in module.body:
        if not isinstance(cls, cst.ClassDef) or not isinstance(cls.body, cst.IndentedBlock):
            continue
        for method in cls.body.body:
            if not isinstance(method, cst.FunctionDef):
                continue
            total += 1
            got = Positions(module, source, [cls], [(method, cls)])
            alone += got._level == "methods"
            inside = _subtree(method)
            for node in inside:
                if node in expected:
                    assert got[node] == expected[node], (type(node).__name__, module.code_for_node(node)[:60])
            if total == 1:  # (once a file: the fallbacks render the class, then the module)
                assert got[cls.name] == expected[cls.name]  # outside the method: the class is rendered
                last = module.body[-1]
                assert got[last] == expected[last]
    return alone, total


@pytest.mark.parametrize("source", METHOD_SOURCES + ODD)
def test_odd_sources_agree_method_by_method(source):
    _methods_agree(source)


def test_a_method_written_twice_in_a_file_falls_back():
    alone, total = _methods_agree(METHOD_SOURCES[2])
    assert (alone, total) == (0, 2)


def test_methods_rendered_alone_agree_on_repo_files():
    alone = total = 0
    # every ninth file, from further offsets until the sample holds enough methods (the repo's files change)
    for offset in range(1, 9):
        for path in SOURCES[offset::9]:
            a, t = _methods_agree(path.read_text(encoding="utf-8"))
            alone, total = alone + a, total + t
        if total > 50:
            break
    assert total > 50 and alone > 0.9 * total  # most methods are found by their text
