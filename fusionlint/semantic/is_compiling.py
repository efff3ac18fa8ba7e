"""Code Dynamo never traces: the eager-only branch of an ``is_compiling()`` test, and code after
``if is_compiling(): return``. The one place that decides what counts as an is-compiling test; every
rule and the report filter of ``RuleContext`` ask here."""

from __future__ import annotations

from typing import Callable, Iterable, Optional

import libcst as cst


def skipped_while_compiling(parents: Iterable[cst.CSTNode], qualname, node: Optional[cst.CSTNode] = None) -> bool:
    """True where Dynamo never goes: inside ``if not torch.compiler.is_compiling():`` (also as an
    ``and`` operand: ``if not is_torchdynamo_compiling() and x is None:``), the ``else`` of
    ``if is_compiling():``, and after ``if is_compiling(): return ...`` in the same function.
    ``parents`` run from the node outwards; pass the ``node`` itself when it may be a statement."""
    parents = tuple(parents)
    child = node
    for parent in parents:
        if isinstance(parent, cst.If) and child is not None:
            if child is parent.body:
                for leaf in _and_leaves(parent.test):
                    if (
                        isinstance(leaf, cst.UnaryOperation)
                        and isinstance(leaf.operator, cst.Not)
                        and is_compiling_test(leaf.expression, qualname)
                    ):
                        return True
            elif child is parent.orelse and true_while_compiling(parent.test, qualname):
                return True
        child = parent
    return after_exit_while_compiling(parents, lambda expr: true_while_compiling(expr, qualname), node)


def _and_leaves(expr: cst.BaseExpression) -> list[cst.BaseExpression]:
    if isinstance(expr, cst.BooleanOperation) and isinstance(expr.operator, cst.And):
        return _and_leaves(expr.left) + _and_leaves(expr.right)
    return [expr]


def after_exit_while_compiling(
    parents: Iterable[cst.CSTNode], is_compiling: Callable[[cst.BaseExpression], bool], node: Optional[cst.CSTNode] = None
) -> bool:
    """True after ``if is_compiling(): return ...`` (or ``raise``) earlier in the same function: under
    compile the function has left by then, so Dynamo never traces the code. ``parents`` runs from the
    node outwards; ``is_compiling`` says whether a call is an is-compiling test (the callers differ on
    which names count)."""
    child: Optional[cst.CSTNode] = node
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


def true_while_compiling(expr: cst.BaseExpression, qualname) -> bool:
    """An is-compiling test, or transformers' ``is_tracing(...)`` (true under compile: it asks
    ``is_torchdynamo_compiling()`` first). ``torch.jit.is_tracing()`` is false under compile."""
    if is_compiling_test(expr, qualname):
        return True
    if not isinstance(expr, cst.Call):
        return False
    qual = qualname(expr.func) or ""
    return qual.endswith("utils.is_tracing") or qual.endswith("import_utils.is_tracing")
