"""``fusionlint.analysis.render.expression_code`` gives libcst's own text for every expression: the
annotations and subscripts of the repository's Python files (fixtures, examples, fusionlint itself)
and written-out awkward forms, and it renders the common annotation forms itself."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest

from fusionlint.analysis import render
from fusionlint.analysis.walk import iter_nodes

ROOT = Path(__file__).resolve().parent.parent
_KINDS = (cst.Annotation, cst.Subscript, cst.Attribute, cst.BinaryOperation)

AWKWARD = """
def f(a: Optional[ torch.Tensor ], b: torch . Tensor | None, c: "torch.Tensor", d: Tuple[Tensor, ...],
      e: (Tensor), f: Dict[str,Tensor,], g: List[
          Tensor], h: Tensor|None, i: tuple[*Ts], j: Callable[[int], Tensor], k: typing.Optional[torch.LongTensor] = None,
      l: Literal["a b"], m: x[1:2], n: torch.Tensor|None|int):
    return a[b, c], (d | e), x.y .z
"""


def _expressions(source: str):
    module = cst.parse_module(source)
    for node in iter_nodes(module, _KINDS, into_nested_defs=True):
        yield node.annotation if isinstance(node, cst.Annotation) else node


def _sources():
    paths = [p for part in ("fixtures", "examples", "fusionlint", "rules") for p in sorted((ROOT / part).rglob("*.py"))]
    return [("awkward", AWKWARD)] + [(str(p.relative_to(ROOT)), p.read_text(encoding="utf-8")) for p in paths]


def test_the_text_is_libcsts_for_every_expression_of_the_repository():
    checked = rendered = 0
    empty = cst.Module([])
    for name, source in _sources():
        try:
            expressions = list(_expressions(source))
        except cst.ParserSyntaxError:
            continue  # a fixture of a syntax error
        for expr in expressions:
            assert render.expression_code(expr) == empty.code_for_node(expr), name
            checked += 1
            rendered += render._render(expr) is not None
    assert checked > 5000
    assert rendered > checked // 2  # most go the fast way


@pytest.mark.parametrize(
    "annotation", ["Optional[torch.Tensor]", "torch.Tensor | None", "Tuple[Tensor, ...]", "Dict[str, Tensor]", '"Tensor"'],
)
def test_common_annotations_are_rendered_without_libcst(annotation):
    expr = cst.parse_expression(annotation)
    assert render._render(expr) == annotation


@pytest.mark.parametrize("annotation", ["(Tensor)", "Optional[\n    Tensor]", "tuple[*Ts]", "Callable[[int], Tensor]"])
def test_other_forms_go_to_libcst(annotation):
    expr = cst.parse_expression(annotation) if "\n" not in annotation else cst.parse_expression(f"({annotation})")
    if "\n" in annotation:
        expr = expr.with_changes(lpar=[], rpar=[])
    assert render._render(expr) is None
    assert render.expression_code(expr) == cst.Module([]).code_for_node(expr)
