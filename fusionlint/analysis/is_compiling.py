"""Code Dynamo never traces: the eager-only branch of an ``is_compiling()`` test."""

from __future__ import annotations

from typing import Callable, Iterable, Optional

import libcst as cst

_IS_COMPILING = frozenset(
    {"torch.compiler.is_compiling", "torch._dynamo.is_compiling", "torch.compiler.is_dynamo_compiling", "torch._utils.is_compiling"}
)


def skipped_while_compiling(parents: tuple[cst.CSTNode, ...], qualname) -> bool:
    """True inside ``if not torch.compiler.is_compiling():`` (or the ``else`` of ``if is_compiling():``):
    dynamo takes the other branch, so the code there is never traced."""
    child = None
    for parent in parents:
        if isinstance(parent, cst.If) and child is not None:
            test = parent.test
            negated = isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not)
            call = test.expression if negated else test
            if isinstance(call, cst.Call) and qualname(call.func) in _IS_COMPILING:
                in_body = child is parent.body
                if in_body == negated:
                    return True
        child = parent
    return False


def after_exit_while_compiling(parents: Iterable[cst.CSTNode], is_compiling: Callable[[cst.BaseExpression], bool]) -> bool:
    """True after ``if is_compiling(): return ...`` (or ``raise``) earlier in the same function: under
    compile the function has left by then, so Dynamo never traces the code. ``parents`` runs from the
    node outwards; ``is_compiling`` says whether a call is an is-compiling test (the callers differ on
    which names count)."""
    child: Optional[cst.CSTNode] = None
    for parent in parents:
        if isinstance(parent, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            return False
        body = parent.body if isinstance(parent, (cst.IndentedBlock, cst.Module)) else None
        if child is not None and isinstance(body, (list, tuple)):
            for stmt in body:
                if stmt is child:
                    break
                if isinstance(stmt, cst.If) and _true_while_compiling(stmt.test, is_compiling) and _exits(stmt.body):
                    return True
        child = parent
    return False


def _true_while_compiling(test: cst.BaseExpression, is_compiling) -> bool:
    """``is_compiling()`` or ``is_compiling() or anything`` (``a or is_compiling()`` too)."""
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.Or):
        return _true_while_compiling(test.left, is_compiling) or _true_while_compiling(test.right, is_compiling)
    return is_compiling(test)


def _exits(block: cst.BaseSuite) -> bool:
    """The block always ends the function: its last statement is a ``return`` or ``raise``."""
    if isinstance(block, cst.IndentedBlock):
        if not block.body:
            return False
        last = block.body[-1]
    else:
        last = block  # `if c: return x` on one line: a SimpleStatementSuite
    if isinstance(last, (cst.SimpleStatementLine, cst.SimpleStatementSuite)) and last.body:
        return isinstance(last.body[-1], (cst.Return, cst.Raise))
    return False


_COMPILING_NAMES = ("is_compiling", "is_dynamo_compiling", "is_torchdynamo_compiling")


def is_compiling_test(expr: cst.BaseExpression, qualname) -> bool:
    """``torch.compiler.is_compiling()`` and the wrappers libraries define around it (transformers'
    ``is_torchdynamo_compiling()``), matched on the last name of the called function."""
    if not (isinstance(expr, cst.Call) and not expr.args):
        return False
    qual = qualname(expr.func) or ""
    return qual.rsplit(".", 1)[-1] in _COMPILING_NAMES
