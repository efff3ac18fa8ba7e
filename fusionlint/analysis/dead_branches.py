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
from fusionlint.analysis.names import dotted
from fusionlint.analysis.walk import iter_nodes
from fusionlint.project.model import constant_test
from fusionlint.project.summary import SELF_TRUTH_AT_ENTRY, SIZE
from fusionlint.semantic.bindings import bindings, bound_names

_OPS = {cst.Equal: "==", cst.NotEqual: "!=", cst.Is: "is", cst.IsNot: "is not"}


def dead_nodes(index: FileIndex) -> set[int]:
    """ids of the nodes in branches of compiled functions that their callers' constants rule out."""
    out: set[int] = set()
    for fn in index.functions.values():
        if not fn.constants or fn.frames is None:
            continue
        # what every compiled caller knew of `self.<attr>` when it called (peft's `if self.merged:
        # self.unmerge()`) decides only the tests made before any statement of the function ran
        truths = {n: c for n, c in fn.constants.items() if n.startswith("self.")}
        first = _first_statement(fn.node) if truths else None
        if isinstance(first, cst.If):
            _decide_chain(first, truths, out)
        params = {n: c for n, c in fn.constants.items() if n not in truths}
        if not params:
            continue
        table = bindings(fn.node)
        fixed = {n: c for n, c in params.items() if table.get(n) == [None]}  # never re-bound
        for node in iter_nodes(fn.node.body, (cst.If,)) if fixed else ():
            holds = _test(node.test, fixed)
            if holds is not None:
                _mark(node.orelse if holds else node.body, out)
        # a parameter re-bound further down (prx's `shape = shape[-2:]` inside the branch) still has
        # the callers' value in the tests of an if/elif chain before the first statement binding it
        early = {n: c for n, c in params.items() if n not in fixed}
        body = fn.node.body.body if isinstance(fn.node.body, cst.IndentedBlock) else ()
        for stmt in body:
            if not early:
                break
            if isinstance(stmt, cst.If):
                _decide_chain(stmt, early, out)
            early = {n: c for n, c in early.items() if n not in bound_names(stmt)}
    return out


def _first_statement(fn: cst.FunctionDef) -> Optional[cst.BaseStatement]:
    """The function's first statement after its docstring."""
    body = fn.body.body if isinstance(fn.body, cst.IndentedBlock) else ()
    if body and isinstance(body[0], cst.SimpleStatementLine) and len(body[0].body) == 1:
        inner = body[0].body[0]
        if isinstance(inner, cst.Expr) and isinstance(inner.value, (cst.SimpleString, cst.ConcatenatedString)):
            body = body[1:]
    return body[0] if body else None


def _decide_chain(node: cst.If, constants: dict[str, str], out: set[int]) -> None:
    """Mark what the tests of ``if``/``elif``... rule out; all of them run before any of the bodies."""
    while True:
        holds = _test(node.test, constants)
        if holds is not None:
            _mark(node.orelse if holds else node.body, out)
            if holds:
                return
        if not isinstance(node.orelse, cst.If):
            return
        node = node.orelse


def _mark(dead: Optional[cst.CSTNode], out: set[int]) -> None:
    if dead is not None:
        out.add(id(dead))
        out.update(id(n) for n in iter_nodes(dead, (cst.CSTNode,), into_nested_defs=True))


def _test(test: cst.BaseExpression, constants: dict[str, str]) -> Optional[bool]:
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = _test(test.expression, constants)
        return None if inner is None else not inner
    if isinstance(test, cst.Call):
        return _isinstance_test(test, constants)
    if isinstance(test, cst.Attribute) and isinstance(test.value, cst.Name) and test.value.value == "self":
        value = constants.get(f"self.{test.attr.value}")
        return None if value is None else constant_test(value, SELF_TRUTH_AT_ENTRY, "")
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


# what ``isinstance`` of a torch.Size says, by the class as written: True for the tuple types it is,
# False for the ones it is not; any other class (a user's, an ABC) leaves the branch undecided
_SIZE_IS = frozenset({"tuple", "torch.Size", "Size", "typing.Tuple", "Tuple"})
_SIZE_IS_NOT = frozenset({
    "torch.Tensor", "Tensor", "list", "int", "float", "bool", "str", "dict", "set", "np.ndarray", "numpy.ndarray",
    "torch.SymInt", "SymInt",
})


def _isinstance_test(call: cst.Call, constants: dict[str, str]) -> Optional[bool]:
    """``isinstance(shape, tuple)`` / ``isinstance(shape, torch.Tensor)`` where every compiled caller
    passes a tensor's size for ``shape`` (prx's ``seq2img(img, p, hidden_states.shape)`` in diffusers 0.36)."""
    if not (isinstance(call.func, cst.Name) and call.func.value == "isinstance" and len(call.args) == 2):
        return None
    subject, classes = call.args[0].value, call.args[1].value
    if not (isinstance(subject, cst.Name) and constants.get(subject.value) == SIZE):
        return None
    written = [dotted(e.value) for e in classes.elements] if isinstance(classes, cst.Tuple) else [dotted(classes)]
    if any(name in _SIZE_IS for name in written):
        return True
    if all(name in _SIZE_IS_NOT for name in written):
        return False
    return None


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
