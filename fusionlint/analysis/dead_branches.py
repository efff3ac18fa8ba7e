"""Branches of a compiled helper that the constants its compiled callers pass rule out.

The project model (``FunctionFacts.constants``) knows when every compiled call of a helper passes the
same constant for a parameter: big_bird's forward calls ``self.set_attention_type("original_full")``,
so in ``set_attention_type`` the ``else`` of ``if value == "original_full":`` is never traced. The
call graph already skips calls in such branches; this gives the rules the same answer, so that nothing
is reported inside them (docs/zoo-audit.md round 4, patterns 1 and 2).
"""

from __future__ import annotations

import ast
from typing import Optional

import libcst as cst

from fusionlint.analysis.index import FileIndex
from fusionlint.analysis.walk import iter_nodes
from fusionlint.project.model import constant_test
from fusionlint.semantic.bindings import bindings

_OPS = {cst.Equal: "==", cst.NotEqual: "!=", cst.Is: "is", cst.IsNot: "is not"}


def dead_nodes(index: FileIndex) -> set[int]:
    """ids of the nodes in branches of compiled functions that their callers' constants rule out."""
    out: set[int] = set()
    for fn in index.functions.values():
        if not fn.constants or fn.frames is None:
            continue
        table = bindings(fn.node)
        fixed = {n: c for n, c in fn.constants.items() if table.get(n) == [None]}  # never re-bound
        if not fixed:
            continue
        for node in iter_nodes(fn.node.body, (cst.If,)):
            holds = _test(node.test, fixed)
            if holds is None:
                continue
            dead = node.orelse if holds else node.body
            if dead is not None:
                out.add(id(dead))
                out.update(id(n) for n in iter_nodes(dead, (cst.CSTNode,), into_nested_defs=True))
    return out


def _test(test: cst.BaseExpression, constants: dict[str, str]) -> Optional[bool]:
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1):
        return None
    target = test.comparisons[0]
    op = _OPS.get(type(target.operator))
    left, right = test.left, target.comparator
    if isinstance(right, cst.Name) and right.value in constants:
        left, right = right, left
    if op is None or not isinstance(left, cst.Name) or left.value not in constants:
        return None
    literal = _literal(right)
    return None if literal is None else constant_test(constants[left.value], op, literal)


def _literal(node: cst.BaseExpression) -> Optional[str]:
    """repr of a constant written in the source, as the summaries write it."""
    if isinstance(node, cst.Name) and node.value in ("None", "True", "False"):
        return node.value
    if isinstance(node, (cst.SimpleString, cst.Integer, cst.Float)):
        try:
            return repr(ast.literal_eval(node.value))
        except (ValueError, SyntaxError):
            return None
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        inner = _literal(node.expression)
        return None if inner is None or inner in ("None", "True", "False") else repr(-ast.literal_eval(inner))
    return None
