"""Which expressions are sizes of a tensor: the values Dynamo makes symbolic under dynamic shapes.

A size is ``x.shape[i]``, ``x.size(i)``, ``x.size()[i]`` or ``x.numel()`` of an expression the tensor
facts call a tensor (``fusionlint.semantic.tensors``), arithmetic on one (``H // p``), or a local bound
only to those, tuple unpacking of a shape included (``B, C, H, W = x.shape``, ``b, n = shape[:2]``
after ``shape = a.shape if ... else b.shape``). A Python computation that needs a size's value fixes
it (FL207); ``ndim``/``dim()`` and the length of a shape are never symbolic and are not sizes.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from fusionlint.analysis.walk import iter_nodes
from fusionlint.semantic.bindings import target_names

# arithmetic that keeps a size symbolic (and so specialised when formatted)
_SIZE_OPERATORS = (cst.Add, cst.Subtract, cst.Multiply, cst.FloorDivide, cst.Modulo)


class Sizes:
    """Decides whether an expression is a size of a tensor (a symbolic int under dynamic shapes):
    ``x.shape[i]``, ``x.size(i)``, ``x.size()[i]``, ``x.numel()``, arithmetic on one, or a local bound
    only to those (``B, C, H, W = x.shape`` included)."""

    def __init__(self, ctx) -> None:
        self.ctx = ctx
        fn = ctx.function
        self.unpacked: dict[str, list] = {}
        if fn is not None:
            self.unpacked = ctx.memo(("sizes-unpacked", id(fn.node)), lambda: _unpacked_from(fn.node))

    def of(self, expr: cst.BaseExpression, depth: int = 0) -> Optional[str]:
        """The tensor expression whose size ``expr`` is (as written), or None."""
        if depth > 5:
            return None
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, _SIZE_OPERATORS):
            return self.of(expr.left, depth + 1) or self.of(expr.right, depth + 1)
        if isinstance(expr, cst.Subscript) and len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Index):
            return self._whole_shape(expr.value)
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
            method = expr.func.attr.value
            positional = [a for a in expr.args if a.keyword is None and not a.star]
            if (method == "size" and len(expr.args) == 1 and len(positional) == 1) or (method == "numel" and not expr.args):
                return self._tensor(expr.func.value)
            return None
        if isinstance(expr, cst.Name):
            return self._name(expr.value, depth)
        return None

    def _name(self, name: str, depth: int) -> Optional[str]:
        values = self.ctx.bindings().get(name)
        if not values:
            return None
        shapes = iter(self.unpacked.get(name, ()))
        found = None
        for value in values:
            if value is None:  # unpacking, a parameter, `+=`, `for`: only `a, b = x.shape` is known
                shape = next(shapes, None)
                if isinstance(shape, _Paired):  # `N, H = x.size(0), self.heads`: N's own element
                    found = self.of(shape.element, depth + 1)
                else:
                    found = self._whole_shape(shape) if shape is not None else None
            else:
                found = self.of(value, depth + 1)
            if found is None:
                return None
        return found

    def _whole_shape(self, expr: cst.BaseExpression, depth: int = 0) -> Optional[str]:
        """``x.shape`` / ``x.size()`` of a tensor, a slice of one (``x.shape[:2]``), one of two
        (``a.shape if a is not None else b.shape``), or a local bound only to those: the tensor's text."""
        if depth > 4:
            return None
        if isinstance(expr, cst.Attribute) and expr.attr.value == "shape":
            return self._tensor(expr.value)
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "size" and not expr.args:
            return self._tensor(expr.func.value)
        if isinstance(expr, cst.Subscript) and len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Slice):
            return self._whole_shape(expr.value, depth + 1)
        if isinstance(expr, cst.IfExp):
            body = self._whole_shape(expr.body, depth + 1)
            return body if body is not None and self._whole_shape(expr.orelse, depth + 1) is not None else None
        if isinstance(expr, cst.Name):
            values = self.ctx.bindings().get(expr.value) or [None]
            shapes = [self._whole_shape(v, depth + 1) if v is not None else None for v in values]
            return shapes[0] if all(shapes) else None
        return None

    def _tensor(self, expr: cst.BaseExpression) -> Optional[str]:
        if not self.ctx.is_tensor(expr):
            return None
        return self.ctx.code(expr).strip()


class _Paired:
    """The element of a display that unpacking binds to one name (``N`` of ``N, H = x.size(0), h``)."""

    __slots__ = ("element",)

    def __init__(self, element: cst.BaseExpression) -> None:
        self.element = element


def _unpacked_from(fn: cst.FunctionDef) -> dict[str, list]:
    """name -> the right-hand sides of ``a, b, c = <value>`` statements binding it, in source order (for
    a display of as many plain elements as plain names, the name's own element, as ``_Paired``)."""
    found: dict[str, list] = {}
    for node in iter_nodes(fn.body, (cst.Assign,)):
        for target in node.targets:
            t, value = target.target, node.value
            if not isinstance(t, (cst.Tuple, cst.List)):
                continue
            if (
                isinstance(value, (cst.Tuple, cst.List)) and len(value.elements) == len(t.elements)
                and all(isinstance(e.value, cst.Name) for e in t.elements)
                and not any(isinstance(e, cst.StarredElement) for e in (*t.elements, *value.elements))
            ):
                for e, v in zip(t.elements, value.elements):
                    found.setdefault(e.value.value, []).append(_Paired(v.value))
                continue
            for name in target_names(t):
                found.setdefault(name, []).append(value)
    return found
