"""Parameters that their function fills in with a Python flag when the caller passes nothing.

A forward's parameters count as tensors unless a default, an annotation or a use says otherwise
(the README's decision policy). ``None`` says nothing by itself: ``mask=None`` is an optional tensor.
But the fallback a function fills in says what the parameter is for. lucidrains' style, seen on the
recall bench's first run of vector-quantize-pytorch 1.32 (2026-12-05)::

    def forward(self, logits, straight_through=None, calc_aux_loss=None):
        straight_through = default(straight_through, self.training)
        calc_aux_loss = default(calc_aux_loss, self.training)
        ...
        if calc_aux_loss:          # a switch, not a tensor's value

Recognised forms, for a parameter ``p`` and a fallback ``d``: ``p = default(p, d)``, ``p = p if p is not
None else d`` (or ``exists(p)``), ``p = d if p is None else p`` (or ``not exists(p)``), and ``if p is
None: p = d``. The fallback is a flag when it is a ``bool``/number/string constant, ``self.training``,
``not ...``, an ``and``/``or`` of flags, or ``self.<attr>`` that ``__init__`` sets from one of its own
parameters or a constant and that the class does not hold as a tensor (``self.ema_update = ema_update``
with ``ema_update=True``).

The same forms on CPython's tree, for the project summaries, are in ``fusionlint.semantic.flags_ast``.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from fusionlint.analysis.index import ClassInfo
from fusionlint.analysis.walk import iter_nodes

_CONSTANT_NAMES = frozenset({"True", "False"})


def flag_params(fn_node: cst.FunctionDef, params: frozenset[str], cls: Optional[ClassInfo]) -> set[str]:
    """The names of ``params`` that ``fn_node`` re-binds to themselves or a flag fallback."""
    found: set[str] = set()
    for node in iter_nodes(fn_node.body, (cst.Assign, cst.If)):
        if isinstance(node, cst.Assign):
            name = _single_target(node)
            if name in params and _defaults_to_flag(node.value, name, cls):
                found.add(name)
        else:
            name = _none_test(node.test)
            if name in params and node.orelse is None and isinstance(node.body, cst.IndentedBlock):
                body = node.body.body
                if len(body) == 1 and isinstance(body[0], cst.SimpleStatementLine) and len(body[0].body) == 1:
                    stmt = body[0].body[0]
                    if isinstance(stmt, cst.Assign) and _single_target(stmt) == name and _is_flag(stmt.value, cls):
                        found.add(name)
    return found


def _single_target(node: cst.Assign) -> Optional[str]:
    if len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
        return node.targets[0].target.value
    return None


def _defaults_to_flag(value: cst.BaseExpression, name: str, cls: Optional[ClassInfo]) -> bool:
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value == "default":
        args = value.args
        return (
            len(args) == 2 and all(a.keyword is None and a.star == "" for a in args)
            and _is_name(args[0].value, name) and _is_flag(args[1].value, cls)
        )
    if isinstance(value, cst.IfExp):
        present = _present_test(value.test)
        if present == (name, True):  # `p if p is not None else d`
            return _is_name(value.body, name) and _is_flag(value.orelse, cls)
        if present == (name, False):  # `d if p is None else p`
            return _is_name(value.orelse, name) and _is_flag(value.body, cls)
    return False


def _present_test(test: cst.BaseExpression) -> Optional[tuple[str, bool]]:
    """(p, True) for ``p is not None`` / ``exists(p)``, (p, False) for ``p is None`` / ``not exists(p)``."""
    name = _none_test(test)
    if name is not None:
        return name, False
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = _present_test(test.expression)
        return (inner[0], not inner[1]) if inner is not None else None
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1 and isinstance(test.left, cst.Name):
        c = test.comparisons[0]
        if isinstance(c.operator, cst.IsNot) and _is_name(c.comparator, "None"):
            return test.left.value, True
    if (isinstance(test, cst.Call) and isinstance(test.func, cst.Name) and test.func.value == "exists"
            and len(test.args) == 1 and isinstance(test.args[0].value, cst.Name)):
        return test.args[0].value.value, True
    return None


def _none_test(test: cst.BaseExpression) -> Optional[str]:
    """``p`` of ``p is None``."""
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1 and isinstance(test.left, cst.Name):
        c = test.comparisons[0]
        if isinstance(c.operator, cst.Is) and _is_name(c.comparator, "None"):
            return test.left.value
    return None


def _is_name(expr: cst.BaseExpression, name: str) -> bool:
    return isinstance(expr, cst.Name) and expr.value == name


def _is_flag(expr: cst.BaseExpression, cls: Optional[ClassInfo]) -> bool:
    if isinstance(expr, (cst.Integer, cst.Float, cst.SimpleString)):
        return True
    if isinstance(expr, cst.Name):
        return expr.value in _CONSTANT_NAMES
    if isinstance(expr, cst.UnaryOperation):
        return isinstance(expr.operator, cst.Not) or (
            isinstance(expr.operator, cst.Minus) and isinstance(expr.expression, (cst.Integer, cst.Float))
        )
    if isinstance(expr, cst.BooleanOperation):
        return _is_flag(expr.left, cls) and _is_flag(expr.right, cls)
    if isinstance(expr, cst.Attribute) and _is_name(expr.value, "self"):
        attr = expr.attr.value
        if attr == "training":
            return True
        return cls is not None and _init_flag(cls, attr)
    return False


def _init_flag(cls: ClassInfo, attr: str) -> bool:
    """``__init__`` sets ``self.<attr>`` only to constants or its own parameters, no other method sets it,
    and the class holds no tensor or module there."""
    if attr in cls.params or attr in cls.buffers or attr in cls.tensor_attrs or attr in cls.submodules:
        return False
    if cls.writes_outside_init(attr):  # set again by another method: whatever that one puts there
        return False
    writes = cls.init_writes.get(attr, ())
    if not writes:
        return False
    for write in writes:
        value = write.value
        if value.kind in ("int", "float"):
            continue
        if value.kind == "name" and (value.name in _CONSTANT_NAMES or (
                cls.init_params is not None and value.name in cls.init_params)):
            continue
        return False
    return True
