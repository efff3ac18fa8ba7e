"""Code Dynamo never traces: the eager-only branch of an ``is_compiling()`` test, and code after
``if is_compiling(): return``. The one place that decides what counts as an is-compiling test; every
rule and the report filter of ``RuleContext`` ask here."""

from __future__ import annotations

import ast
from typing import Callable, Iterable, Optional

import libcst as cst


def skipped_while_compiling(parents: Iterable[cst.CSTNode], qualname, node: Optional[cst.CSTNode] = None) -> bool:
    """True where Dynamo never goes: inside ``if not torch.compiler.is_compiling():`` (also as an
    ``and`` operand: ``if not is_torchdynamo_compiling() and x is None:``), the ``else`` of
    ``if is_compiling():``, the same two arms of a conditional expression, the operands of an
    ``and`` after one False while compiling (``not is_tracing(m) and m.any()``) or of an ``or``
    after one True, and after ``if is_compiling(): return ...`` in the same function.
    ``parents`` run from the node outwards; pass the ``node`` itself when it may be a statement."""
    parents = tuple(parents)
    child = node
    for parent in parents:
        if isinstance(parent, (cst.If, cst.IfExp)) and child is not None:
            if child is parent.body and false_while_compiling(parent.test, qualname):
                return True
            if child is parent.orelse and true_while_compiling(parent.test, qualname):
                return True
        if isinstance(parent, cst.BooleanOperation) and child is not None and child is parent.right:
            if isinstance(parent.operator, cst.And) and false_while_compiling(parent.left, qualname):
                return True
            if isinstance(parent.operator, cst.Or) and _true_while_compiling(
                parent.left, lambda e: true_while_compiling(e, qualname)
            ):
                return True
        child = parent
    return after_exit_while_compiling(parents, lambda expr: true_while_compiling(expr, qualname), node)


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
    return _compiling_call(qualname(expr.func) or "")


# Questions TorchScript and the JIT tracer ask, which Dynamo answers False: the branch they guard is
# never traced (measured, torch 2.13 CPU: `if torch.jit.is_tracing():`, `if torch.jit.is_scripting()
# or _is_tracing():` and torchvision's `_is_tracing()` wrapper of `torch._C._get_tracing_state()`,
# each around `x.sum().item()`: 0 breaks, 1 graph).
_FALSE_WHILE_COMPILING = frozenset(
    {"torch.jit.is_tracing", "torch.jit.is_scripting", "torch._C._get_tracing_state", "torchvision._is_tracing"}
)


def false_while_compiling(expr: cst.BaseExpression, qualname) -> bool:
    """A test that is False under compile: ``torch.jit.is_scripting()``, ``not is_compiling()``, an
    ``and`` with such an operand, an ``or`` of two."""
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Not):
        return true_while_compiling(expr.expression, qualname)
    if isinstance(expr, cst.BooleanOperation):
        left, right = false_while_compiling(expr.left, qualname), false_while_compiling(expr.right, qualname)
        return (left or right) if isinstance(expr.operator, cst.And) else (left and right)
    return isinstance(expr, cst.Call) and not expr.args and _false_call(qualname(expr.func) or "")


def _false_call(qual: str) -> bool:
    return qual in _FALSE_WHILE_COMPILING


def _compiling_call(qual: str) -> bool:
    return qual.rsplit(".", 1)[-1] in _COMPILING_NAMES


def _tracing_call(qual: str) -> bool:
    """transformers' ``is_tracing(...)``: true under compile."""
    return qual.endswith("utils.is_tracing") or qual.endswith("import_utils.is_tracing")


def true_while_compiling(expr: cst.BaseExpression, qualname) -> bool:
    """An is-compiling test, transformers' ``is_tracing(...)`` (true under compile: it asks
    ``is_torchdynamo_compiling()`` first), or ``not`` of a test false under compile
    (``not torch.jit.is_scripting()``)."""
    if is_compiling_test(expr, qualname):
        return True
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Not):
        return false_while_compiling(expr.expression, qualname)
    return isinstance(expr, cst.Call) and _tracing_call(qualname(expr.func) or "")


# -- the same tests on CPython's tree (the project model's call graph) -----------------------------


def ast_true_while_compiling(expr: ast.expr, qualname) -> bool:
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.Not):
        return ast_false_while_compiling(expr.operand, qualname)
    if isinstance(expr, ast.BoolOp) and isinstance(expr.op, ast.Or):
        return any(ast_true_while_compiling(v, qualname) for v in expr.values)
    if not isinstance(expr, ast.Call):
        return False
    qual = qualname(expr.func) or ""
    return (not expr.args and _compiling_call(qual)) or _tracing_call(qual)


def ast_false_while_compiling(expr: ast.expr, qualname) -> bool:
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.Not):
        return ast_true_while_compiling(expr.operand, qualname)
    if isinstance(expr, ast.BoolOp):
        found = [ast_false_while_compiling(v, qualname) for v in expr.values]
        return any(found) if isinstance(expr.op, ast.And) else all(found)
    return isinstance(expr, ast.Call) and not expr.args and _false_call(qualname(expr.func) or "")


def eager_only_statements(body: list[ast.stmt], qualname) -> list[ast.stmt]:
    """The statements of ``body`` (at any depth, not in nested defs) Dynamo never traces: the body of
    ``if <false while compiling>:``, the ``else`` of ``if <true while compiling>:``, and what follows
    ``if <true while compiling>: return`` in the same block."""
    out: list[ast.stmt] = []
    todo = [body]
    while todo:
        block = todo.pop()
        for i, stmt in enumerate(block):
            if isinstance(stmt, ast.If):
                if ast_false_while_compiling(stmt.test, qualname):
                    out.extend(stmt.body)
                else:
                    todo.append(stmt.body)
                if ast_true_while_compiling(stmt.test, qualname):
                    out.extend(stmt.orelse)
                    if stmt.body and isinstance(stmt.body[-1], (ast.Return, ast.Raise)):
                        out.extend(block[i + 1:])
                        break
                else:
                    todo.append(stmt.orelse)
            elif isinstance(stmt, (ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith)):
                todo += [stmt.body, getattr(stmt, "orelse", [])]
            elif isinstance(stmt, ast.Try):
                todo += [stmt.body, stmt.orelse, stmt.finalbody, *(h.body for h in stmt.handlers)]
    return out


def eager_only_expressions(nodes, qualname) -> list[ast.expr]:
    """The parts of the conditional expressions and boolean operations among ``nodes`` that Dynamo never
    evaluates: ``f()`` in ``None if is_compiling() else f()`` (kornia's ``_record_matrix_params``) and
    in ``x if not is_compiling() else ...``'s first arm, an ``and`` operand after one false under compile
    (``not is_compiling() and f()``), an ``or`` operand after one true."""
    out: list[ast.expr] = []
    for node in nodes:
        if isinstance(node, ast.IfExp):
            if ast_true_while_compiling(node.test, qualname):
                out.append(node.orelse)
            elif ast_false_while_compiling(node.test, qualname):
                out.append(node.body)
        elif isinstance(node, ast.BoolOp):
            decides = ast_false_while_compiling if isinstance(node.op, ast.And) else ast_true_while_compiling
            for i, value in enumerate(node.values[:-1]):
                if decides(value, qualname):
                    out.extend(node.values[i + 1:])
                    break
    return out


def cst_eager_only_expressions(nodes, qualname) -> list[cst.CSTNode]:
    """``eager_only_expressions`` on libcst's tree: ``nodes`` are its conditional expressions and
    boolean operations (libcst's are binary: ``a and b and c`` is ``(a and b) and c``)."""
    out: list[cst.CSTNode] = []
    for node in nodes:
        if isinstance(node, cst.IfExp):
            if true_while_compiling(node.test, qualname):
                out.append(node.orelse)
            elif false_while_compiling(node.test, qualname):
                out.append(node.body)
        elif isinstance(node, cst.BooleanOperation):
            if isinstance(node.operator, cst.And) and false_while_compiling(node.left, qualname):
                out.append(node.right)
            elif isinstance(node.operator, cst.Or) and true_while_compiling(node.left, qualname):
                out.append(node.right)
    return out


def cst_eager_only_statements(body, qualname) -> list[cst.CSTNode]:
    """``eager_only_statements`` on libcst's tree (the per-file pass's call graph)."""
    out: list[cst.CSTNode] = []
    todo = [list(body)]
    while todo:
        block = todo.pop()
        for i, stmt in enumerate(block):
            if isinstance(stmt, cst.If):
                orelse = stmt.orelse
                if false_while_compiling(stmt.test, qualname):
                    out.append(stmt.body)
                else:
                    todo.append(_statements(stmt.body))
                if true_while_compiling(stmt.test, qualname):
                    if orelse is not None:
                        out.append(orelse)
                    if _exits(stmt.body):
                        out.extend(block[i + 1:])
                        break
                elif isinstance(orelse, cst.If):
                    todo.append([orelse])
                elif orelse is not None:
                    todo.append(_statements(orelse.body))
            elif isinstance(getattr(stmt, "body", None), cst.IndentedBlock):  # for, while, with, try
                todo.append(_statements(stmt.body))
                for part in (getattr(stmt, "orelse", None), getattr(stmt, "finalbody", None), *getattr(stmt, "handlers", ())):
                    if part is not None and isinstance(getattr(part, "body", None), cst.IndentedBlock):
                        todo.append(_statements(part.body))
    return out


def _statements(block) -> list:
    return list(block.body) if isinstance(block, cst.IndentedBlock) else []
