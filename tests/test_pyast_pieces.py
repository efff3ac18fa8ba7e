"""fusionlint.pyast.parse: a long text's CPython tree made piece by piece is the whole text's."""

import ast
from pathlib import Path

import pytest

from fusionlint import pyast
from tests.helpers import cut_every
from tests.test_cst_parse import LAYOUTS

HERE = Path(__file__).resolve().parent.parent


def _whole(text: str) -> str:
    return ast.dump(compile(text, "f.py", "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True), include_attributes=True)


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_layouts_in_pieces(layout, monkeypatch):
    text = LAYOUTS[layout]
    cut_every(monkeypatch, 1)
    compiled = []
    real = compile
    monkeypatch.setattr(pyast, "compile", lambda t, *a, **k: compiled.append(t) or real(t, *a, **k), raising=False)
    ours = ast.dump(pyast.parse(text, "f.py"), include_attributes=True)
    monkeypatch.undo()
    assert ours == _whole(text)
    if "\r" not in text:
        assert len(compiled) > 1


@pytest.mark.parametrize("path", sorted((HERE / "fusionlint").rglob("*.py"))[:40], ids=lambda p: p.name)
def test_our_sources_in_pieces(path, monkeypatch):
    cut_every(monkeypatch, 10)
    text = path.read_text(encoding="utf-8")
    assert ast.dump(pyast.parse(text, "f.py"), include_attributes=True) == _whole(text)


def test_a_syntax_error_is_the_whole_texts(monkeypatch):
    cut_every(monkeypatch, 1)
    text = "def f():\n    return 1\n\n\ndef g(:\n    pass\n\n\ndef h():\n    return (\n"
    with pytest.raises(SyntaxError) as whole:
        compile(text, "f.py", "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    with pytest.raises(SyntaxError) as ours:
        pyast.parse(text, "f.py")
    assert (ours.value.msg, ours.value.lineno, ours.value.offset) == (whole.value.msg, whole.value.lineno, whole.value.offset)
