"""A ``None`` default filled only in eager mode, then used as if it were filled.

transformers' encoder stacks write::

    if attention_mask is None and not is_torchdynamo_compiling():
        attention_mask = torch.ones(batch_size, seq_length)
    ...
    causal_mask = attention_mask[:, None, None, :]

Under torch.compile the test is False, so ``attention_mask`` is still ``None`` when the subscript
runs: Dynamo sees the TypeError ("Observed exception", GB0088) and gives up on the frame. The
question answered here is syntactic and local to one block: after such an ``if``, is there a read
that fails on ``None`` (subscript, attribute, arithmetic, ``len``, iteration) before anything tests
the name again or binds it? A call that hands the name on (``create_causal_mask(mask=...)``) counts
only when the caller says where the callee's parameter fails (``follow``: LongT5's
``_get_local_attention_mask(attention_mask, ...)`` passes it to ``_split_into_blocks``, whose first
statement reads ``x.shape``); otherwise the callee may accept ``None``.
"""

from __future__ import annotations

from typing import Callable, Optional, Sequence

import libcst as cst

from fusionlint.analysis.walk import iter_nodes

_STOP = object()  # the name is tested or re-bound: the scan ends without a finding
_GUARD_OPS = (cst.Is, cst.IsNot, cst.Equal, cst.NotEqual)


def filled_only_in_eager(node: cst.If, is_compiling: Callable[[cst.BaseExpression], bool]) -> Optional[str]:
    """The name of ``if <name> is None and not <is_compiling>(): <name> = ...`` (no ``else``), or None."""
    if node.orelse is not None:
        return None
    leaves = _and_leaves(node.test)
    if len(leaves) < 2:
        return None
    negated_compiling = any(
        isinstance(leaf, cst.UnaryOperation) and isinstance(leaf.operator, cst.Not) and is_compiling(leaf.expression)
        for leaf in leaves
    )
    if not negated_compiling:
        return None
    for leaf in leaves:
        name = _is_none_test(leaf)
        if name is not None and _binds(node.body, name):
            return name
    return None


# (a call, the name it is given) -> the callee's failing read of that parameter, or None
Follow = Callable[[cst.Call, str], Optional[cst.CSTNode]]


def first_failing_read(statements: Sequence[cst.CSTNode], name: str, follow: Optional[Follow] = None) -> Optional[cst.CSTNode]:
    """The first read of ``name`` in ``statements`` (run in order) that raises when it is None; with
    ``follow``, also a call passing ``name`` whose callee raises on it."""
    found = _scan(statements, name, follow)
    return found if isinstance(found, cst.CSTNode) else None


def passed_as(call: cst.Call, name: str) -> Optional[tuple[Optional[int], Optional[str]]]:
    """(position, None) or (None, keyword) of the argument that is the bare name ``name``, or None."""
    position = 0
    for arg in call.args:
        if arg.star:
            return None  # *args / **kwargs: the parameter cannot be told
        if arg.keyword is None:
            if _is_name(arg.value, name):
                return position, None
            position += 1
        elif _is_name(arg.value, name):
            return None, arg.keyword.value
    return None


def _scan(statements: Sequence[cst.CSTNode], name: str, follow: Optional[Follow] = None):
    for stmt in statements:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                found = _judge(small, name, follow)
                if found is not None:
                    return found
                if _binds_small(small, name):
                    return _STOP
        elif isinstance(stmt, cst.If):
            found = _judge(stmt.test, name, follow)
            if found is not None:
                return found
            branch = _scan(stmt.body.body, name, follow) if isinstance(stmt.body, cst.IndentedBlock) else _STOP
            if branch is not None:
                return branch
            orelse = stmt.orelse
            if isinstance(orelse, cst.If):
                branch = _scan([orelse], name, follow)
            elif isinstance(orelse, cst.Else) and isinstance(orelse.body, cst.IndentedBlock):
                branch = _scan(orelse.body.body, name, follow)
            if orelse is not None and branch is not None:
                return branch
            if _binds(stmt, name):
                return _STOP
        elif _mentions(stmt, name):
            return _STOP  # loops, with, try, nested defs that read it: not judged
    return None


def _judge(expr: cst.CSTNode, name: str, follow: Optional[Follow] = None):
    """A failing read in one statement or test, _STOP when the statement tests the name, else None."""
    failing = None
    for node in (expr, *iter_nodes(expr, (cst.CSTNode,), into_nested_defs=False)):
        if isinstance(node, (cst.Lambda, cst.FunctionDef)):
            continue
        if _tests(node, name):
            return _STOP
        if failing is None and _fails_on_none(node, name):
            failing = node
        if failing is None and follow is not None and isinstance(node, cst.Call) and follow(node, name) is not None:
            failing = node
    return failing


def _tests(node: cst.CSTNode, name: str) -> bool:
    """``name is None``, ``name == x``, ``if name``/``name and ...``/``not name``, ``x if name else y``."""
    if isinstance(node, cst.Comparison):
        operands = [node.left, *(t.comparator for t in node.comparisons)]
        return any(_is_name(o, name) for o in operands) and any(isinstance(t.operator, _GUARD_OPS) for t in node.comparisons)
    if isinstance(node, cst.BooleanOperation):
        return _is_name(node.left, name) or _is_name(node.right, name)
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Not):
        return _is_name(node.expression, name)
    if isinstance(node, (cst.IfExp, cst.If, cst.While)):
        return _is_name(node.test, name)
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value in ("isinstance", "callable", "hasattr", "getattr"):
        return any(_is_name(a.value, name) for a in node.args)
    return False


def _fails_on_none(node: cst.CSTNode, name: str) -> bool:
    if isinstance(node, cst.Subscript):
        return _is_name(node.value, name)
    if isinstance(node, cst.Attribute):
        return _is_name(node.value, name)
    if isinstance(node, cst.BinaryOperation):
        return _is_name(node.left, name) or _is_name(node.right, name)
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value in ("len", "iter"):
        return len(node.args) == 1 and _is_name(node.args[0].value, name)
    return False


def _is_none_test(expr: cst.BaseExpression) -> Optional[str]:
    if (
        isinstance(expr, cst.Comparison)
        and isinstance(expr.left, cst.Name)
        and len(expr.comparisons) == 1
        and isinstance(expr.comparisons[0].operator, cst.Is)
        and _is_name(expr.comparisons[0].comparator, "None")
    ):
        return expr.left.value
    return None


def _and_leaves(expr: cst.BaseExpression) -> list[cst.BaseExpression]:
    if isinstance(expr, cst.BooleanOperation) and isinstance(expr.operator, cst.And):
        return _and_leaves(expr.left) + _and_leaves(expr.right)
    return [expr]


def _is_name(expr: cst.CSTNode, name: str) -> bool:
    return isinstance(expr, cst.Name) and expr.value == name


def _mentions(node: cst.CSTNode, name: str) -> bool:
    return any(_is_name(n, name) for n in iter_nodes(node, (cst.Name,), into_nested_defs=True))


def _binds(node: cst.CSTNode, name: str) -> bool:
    """Does anything in ``node`` (nested defs aside) bind ``name``?"""
    for small in iter_nodes(node, (cst.Assign, cst.AnnAssign, cst.AugAssign, cst.Del, cst.NamedExpr, cst.For, cst.With),
                            into_nested_defs=False):
        if _binds_small(small, name):
            return True
    return False


def _binds_small(node: cst.CSTNode, name: str) -> bool:
    targets: list[cst.CSTNode] = []
    if isinstance(node, cst.Assign):
        targets = [t.target for t in node.targets]
    elif isinstance(node, (cst.AnnAssign, cst.AugAssign, cst.NamedExpr, cst.For)):
        targets = [node.target]
    elif isinstance(node, cst.Del):
        targets = [node.target]
    elif isinstance(node, cst.With):
        targets = [item.asname.name for item in node.items if item.asname is not None]
    return any(_is_name(t, name) or (not isinstance(t, cst.Name) and _mentions_target(t, name)) for t in targets)


def _mentions_target(target: cst.CSTNode, name: str) -> bool:
    """``a, name = ...`` / ``[name, *rest] = ...``: the name among an unpacking target's elements."""
    if isinstance(target, (cst.Tuple, cst.List)):
        return any(
            _is_name(e.value, name) or _mentions_target(e.value, name) for e in target.elements
        )
    if isinstance(target, cst.StarredElement):
        return _is_name(target.value, name)
    return False
