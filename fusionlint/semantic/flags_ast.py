"""``fusionlint.semantic.flags`` on CPython's tree, for the project summaries (``fusionlint.project.summary``):
a flag parameter passed on to a helper is no tensor there either (vector-quantize-pytorch 1.32's
``self.gumbel_sample(..., temperature=sample_codebook_temp)`` after ``sample_codebook_temp =
default(sample_codebook_temp, self.sample_codebook_temp)``). Kept apart from the libcst module: the
summaries are loaded by runs that never import libcst (the findings cache).
"""

from __future__ import annotations

import ast
from typing import Callable, Optional


def flag_params_ast(body_nodes: list[ast.AST], tests: list[ast.AST], params: frozenset[str],
                    attr_is_flag: Callable[[str], bool]) -> frozenset[str]:
    """``flag_params`` from what the summary already collected of a function: its assignments
    (``body_nodes``) and its ``if`` statements (among ``tests``)."""
    found: set[str] = set()
    for node in body_nodes:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            if name in params and _defaults_to_flag_ast(node.value, name, attr_is_flag):
                found.add(name)
    for node in tests:
        if isinstance(node, ast.If) and not node.orelse and len(node.body) == 1:
            name = _none_test_ast(node.test)
            stmt = node.body[0]
            if (name in params and isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
                    and isinstance(stmt.targets[0], ast.Name) and stmt.targets[0].id == name
                    and _is_flag_ast(stmt.value, attr_is_flag)):
                found.add(name)
    return frozenset(found)


def _defaults_to_flag_ast(value: ast.expr, name: str, attr_is_flag) -> bool:
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "default":
        return (len(value.args) == 2 and not value.keywords and isinstance(value.args[0], ast.Name)
                and value.args[0].id == name and _is_flag_ast(value.args[1], attr_is_flag))
    if isinstance(value, ast.IfExp):
        present = _present_test_ast(value.test)
        if present == (name, True):
            return isinstance(value.body, ast.Name) and value.body.id == name and _is_flag_ast(value.orelse, attr_is_flag)
        if present == (name, False):
            return isinstance(value.orelse, ast.Name) and value.orelse.id == name and _is_flag_ast(value.body, attr_is_flag)
    return False


def _present_test_ast(test: ast.expr) -> Optional[tuple[str, bool]]:
    name = _none_test_ast(test)
    if name is not None:
        return name, False
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = _present_test_ast(test.operand)
        return (inner[0], not inner[1]) if inner is not None else None
    if (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.IsNot)
            and isinstance(test.left, ast.Name) and _is_none_ast(test.comparators[0])):
        return test.left.id, True
    if (isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and test.func.id == "exists"
            and len(test.args) == 1 and isinstance(test.args[0], ast.Name)):
        return test.args[0].id, True
    return None


def _none_test_ast(test: ast.expr) -> Optional[str]:
    if (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Is)
            and isinstance(test.left, ast.Name) and _is_none_ast(test.comparators[0])):
        return test.left.id
    return None


def _is_none_ast(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _is_flag_ast(expr: ast.expr, attr_is_flag) -> bool:
    if isinstance(expr, ast.Constant):
        return isinstance(expr.value, (bool, int, float, str))
    if isinstance(expr, ast.UnaryOp):
        return isinstance(expr.op, ast.Not) or (
            isinstance(expr.op, ast.USub) and isinstance(expr.operand, ast.Constant)
            and isinstance(expr.operand.value, (int, float)))
    if isinstance(expr, ast.BoolOp):
        return all(_is_flag_ast(v, attr_is_flag) for v in expr.values)
    if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and expr.value.id == "self":
        return expr.attr == "training" or attr_is_flag(expr.attr)
    return False
