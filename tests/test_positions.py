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
