"""What ``isinstance`` / ``is None`` guards say about a name inside the code they guard.

``if isinstance(t, torch.Tensor): n = int(t)`` — inside the branch ``t`` is a tensor whatever the
callers pass; ``if x is None: ...`` / ``if isinstance(n, int): ...`` / ``if not torch.is_tensor(s): ...``
— inside it ``x``/``n``/``s`` is not. The answer is per ``Name`` node (libcst nodes hash by identity),
so the flow-insensitive facts of ``fusionlint.semantic.tensors`` stay as they are everywhere else.

A guarded region ends at the first statement that rebinds the name (``t = t.tolist()``): reads after
it see the new value. A positive guard on a name that is never a tensor (bound only to a shape, a size or a Python number,
``shape = x.shape; if isinstance(shape, torch.Tensor): ...``, or annotated as something else) guards
dead code: its reads count as Python values (a false-positive pattern listed in issue 9).
"""

from __future__ import annotations

from typing import Iterator, Optional

import libcst as cst

from fusionlint.analysis.names import resolve
from fusionlint.analysis.walk import iter_nodes

TENSOR, NOT_TENSOR, PYTHON = "tensor", "not-tensor", "python"
# `isinstance(e, SparseTensor)` with a class that is neither torch.Tensor (or a project subclass of
# it, like PyG's EdgeIndex: TENSOR) nor a builtin: inside, `e` is that class, so what the branch reads
# of `e` (`e.csr()`) says nothing about `e` elsewhere, and the reads themselves are not tensors.
OTHER_CLASS = "other-class"
_PYTHON_TYPES = frozenset({"int", "float", "bool", "str", "list", "tuple", "dict", "set", "bytes", "complex",
                           "numbers.Number", "numbers.Integral", "numbers.Real"})
_IS_TENSOR_CALLS = frozenset({"torch.is_tensor"})
_ISINSTANCE = frozenset({"isinstance", "torch.jit.isinstance"})
_INVERT = {TENSOR: NOT_TENSOR, NOT_TENSOR: TENSOR, PYTHON: None, OTHER_CLASS: None}


def _type_kind(expr: cst.BaseExpression, aliases: dict[str, str], tensor_classes: frozenset[str]) -> Optional[str]:
    elements = [e.value for e in expr.elements] if isinstance(expr, cst.Tuple) else [expr]
    kinds = set()
    for element in elements:
        qual = resolve(element, aliases) or ""
        if qual in ("Tensor", "torch.Tensor", "torch.tensor.Tensor") or qual in tensor_classes:
            kinds.add(TENSOR)
        elif qual in _PYTHON_TYPES:
            kinds.add(PYTHON)
        elif qual:
            kinds.add(OTHER_CLASS)
        else:
            return None
    return kinds.pop() if len(kinds) == 1 else None


def _leaf(test: cst.BaseExpression, aliases: dict[str, str], tensors: frozenset[str] = frozenset()) -> Optional[tuple[str, str]]:
    """(name, what the guard says about it when true) for one guard, or None."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = _leaf(test.expression, aliases, tensors)
        if inner is None or _INVERT[inner[1]] is None:
            return None
        return inner[0], _INVERT[inner[1]]  # type: ignore[return-value]
    if isinstance(test, cst.Call) and test.args and isinstance(test.args[0].value, cst.Name):
        qual = resolve(test.func, aliases) or ""
        name = test.args[0].value.value
        if qual in _IS_TENSOR_CALLS and len(test.args) == 1:
            return name, TENSOR
        if qual in _ISINSTANCE and len(test.args) == 2:
            kind = _type_kind(test.args[1].value, aliases, tensors)
            return (name, kind) if kind is not None else None
        return None
    if (
        isinstance(test, cst.Comparison) and len(test.comparisons) == 1 and isinstance(test.left, cst.Name)
        and isinstance(test.comparisons[0].comparator, cst.Name) and test.comparisons[0].comparator.value == "None"
    ):
        op = test.comparisons[0].operator
        if isinstance(op, cst.Is):
            return test.left.value, PYTHON
        if isinstance(op, cst.IsNot):
            return test.left.value, "not-none"
    return None


def _and_leaves(expr: cst.BaseExpression) -> list[cst.BaseExpression]:
    if isinstance(expr, cst.BooleanOperation) and isinstance(expr.operator, cst.And):
        return _and_leaves(expr.left) + _and_leaves(expr.right)
    return [expr]


def _true_facts(test: cst.BaseExpression, aliases, tensors: frozenset[str]) -> list[tuple[str, str]]:
    return [f for f in (_leaf(leaf, aliases, tensors) for leaf in _and_leaves(test)) if f is not None and f[1] != "not-none"]


def _false_facts(test: cst.BaseExpression, aliases, tensors: frozenset[str]) -> list[tuple[str, str]]:
    """What is known when a single-guard test is false (``x is not None`` false: ``x`` is None)."""
    fact = _leaf(test, aliases, tensors)
    if fact is None:
        return []
    name, kind = fact
    if kind == "not-none":
        return [(name, PYTHON)]
    inverted = _INVERT[kind]
    return [(name, inverted)] if inverted is not None else []


def _names_in(node: cst.CSTNode, name: str) -> Iterator[cst.Name]:
    if isinstance(node, cst.Name):
        if node.value == name:
            yield node
        return
    for n in iter_nodes(node, (cst.Name,)):
        if n.value == name:
            yield n


def _rebinds(stmt: cst.CSTNode, name: str) -> bool:
    nodes = iter_nodes(stmt, (cst.AssignTarget, cst.AugAssign, cst.AnnAssign, cst.For, cst.NamedExpr, cst.AsName))
    for node in [stmt, *nodes] if isinstance(stmt, (cst.For,)) else nodes:
        target = node.name if isinstance(node, cst.AsName) else node.target
        if any(True for _ in _names_in(target, name)):
            return True
    return False


def _region(region: cst.CSTNode, name: str) -> Iterator[cst.Name]:
    """The reads of ``name`` in a guarded block, up to and including the statement that rebinds it."""
    if isinstance(region, (cst.IndentedBlock, cst.SimpleStatementSuite)):
        for stmt in region.body:
            if not _rebinds(stmt, name):
                yield from _names_in(stmt, name)
                continue
            if isinstance(stmt, cst.BaseCompoundStatement):
                # the rebinding is inside: its blocks are guarded up to their own rebinding, and the
                # statements after it may see the new value
                yield from _compound(stmt, name)
            else:
                yield from _names_in(stmt, name)
            return
        return
    if isinstance(region, cst.Else):
        yield from _region(region.body, name)
        return
    yield from _names_in(region, name)  # an expression, or an elif (If) node


def _compound(stmt: cst.BaseCompoundStatement, name: str) -> Iterator[cst.Name]:
    """Reads of ``name`` in a compound statement that rebinds it somewhere inside."""
    if isinstance(stmt, (cst.If, cst.While)):
        yield from _names_in(stmt.test, name)
        yield from _region(stmt.body, name)
        if stmt.orelse is not None:
            orelse = stmt.orelse
            if isinstance(orelse, cst.If):
                yield from _compound(orelse, name)
            else:
                yield from _region(orelse.body, name)
    elif isinstance(stmt, cst.Try):
        yield from _region(stmt.body, name)
    # for / with / def / class rebinding it: nothing more is claimed


def narrowed(fn: cst.FunctionDef, aliases: dict[str, str], blocked: frozenset[str],
             tensor_classes: frozenset[str] = frozenset()) -> dict[cst.Name, str]:
    """Name node -> TENSOR / NOT_TENSOR / PYTHON / OTHER_CLASS for the reads a guard narrows, in ``fn``'s own body.

    ``blocked``: names that are never tensors (bound only to shapes, sizes, numbers): a positive guard on
    one guards dead code, whose reads count as Python values. ``tensor_classes``: project classes that
    subclass torch.Tensor (``isinstance(x, EdgeIndex)`` guards a tensor)."""
    out: dict[cst.Name, str] = {}

    def mark(facts: list[tuple[str, str]], region: Optional[cst.CSTNode]) -> None:
        if region is None:
            return
        for name, kind in facts:
            if kind == TENSOR and name in blocked:
                kind = PYTHON  # the branch is dead: nothing in it runs with a tensor
            for node in _region(region, name):
                # a guard that decides (an inner `isinstance(e, torch.Tensor)`) wins over OTHER_CLASS
                if out.setdefault(node, kind) == OTHER_CLASS:
                    out[node] = kind

    for node in iter_nodes(fn.body, (cst.If, cst.IfExp, cst.BooleanOperation)):
        if isinstance(node, cst.If):
            mark(_true_facts(node.test, aliases, tensor_classes), node.body)
            mark(_false_facts(node.test, aliases, tensor_classes), node.orelse)
        elif isinstance(node, cst.IfExp):
            mark(_true_facts(node.test, aliases, tensor_classes), node.body)
            mark(_false_facts(node.test, aliases, tensor_classes), node.orelse)
        elif isinstance(node.operator, cst.And):
            # `isinstance(t, torch.Tensor) and t.any()`: the right operand runs only when the left is true
            mark(_true_facts(node.left, aliases, tensor_classes), node.right)
    return out
