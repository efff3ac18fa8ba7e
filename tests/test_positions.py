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


def test_every_repo_file_agrees():
    assert len(SOURCES) > 50
    for path in SOURCES:
        _agree(path.read_text(encoding="utf-8"))


def _statements_agree(source: str) -> int:
    """Rendering only some top-level statements gives their nodes the ranges PositionProvider gives; a
    node elsewhere is answered too (the whole module is rendered then). Returns how many statements
    were rendered alone."""
    module = cst.parse_module(source)
    expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    alone = 0
    for i, statement in enumerate(module.body):
        picked = [statement] + ([module.body[i - 1]] if i else [])
        got = Positions(module, source, picked)
        alone += not got._whole
        inside = set()
        for top in picked:
            stack = [top]
            while stack:
                node = stack.pop()
                inside.add(node)
                stack.extend(node.children)
        for node in inside:
            if node in expected:
                assert got[node] == expected[node], (type(node).__name__, module.code_for_node(node)[:60])
        outside = next((n for n in expected if n not in inside and n is not module), None)
        if outside is not None:
            assert got[outside] == expected[outside]
            assert got._whole
    return alone


@pytest.mark.parametrize("source", ODD)
def test_odd_sources_agree_statement_by_statement(source):
    _statements_agree(source)


def test_statements_rendered_alone_agree_on_repo_files():
    alone = sum(_statements_agree(p.read_text(encoding="utf-8")) for p in SOURCES[::7])
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
