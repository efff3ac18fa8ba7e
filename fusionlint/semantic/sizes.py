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
from fusionlint.semantic.bindings import PARAMETER, target_names

# arithmetic that keeps a size symbolic (and so specialised when formatted)
_SIZE_OPERATORS = (cst.Add, cst.Subtract, cst.Multiply, cst.FloorDivide, cst.Modulo)
# Python float math on a size (a symbolic float under dynamic shapes) and the conversions back to int
# (numpy's functions take a size as a Python number: Dynamo fixes it right there, measured on torch 2.13 CPU with
# `np.ceil(x.shape[0] / 4)`: a guard on the exact quotient at that line)
_FLOAT_MATH = frozenset(
    {f"{m}.{f}" for m in ("math", "numpy") for f in ("log", "log2", "log10", "log1p", "sqrt", "exp", "pow")}
    | {f"numpy.{f}" for f in ("ceil", "floor", "round", "rint", "trunc")}
)
_TO_INT = frozenset({"builtins.int", "builtins.round", "math.floor", "math.ceil", "math.trunc"})


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
        if _min_max_args(expr) is not None:  # `min(seq_len, bucket_size)`: still a symbolic int
            return next((f for f in (self.of(a, depth + 1) for a in _min_max_args(expr)) if f is not None), None)
        if isinstance(expr, cst.Name):
            reach = self._reaching(expr)
            if reach is not None:  # `bucket = min(seq_len, bucket)` re-binds a parameter: what reaches this read
                found = [self.of(v, depth + 1) if v is not PARAMETER else None for v in reach.values]
                return found[0] if found and all(found) else None
            return self._name(expr.value, depth)
        return None

    def capped(self, expr: cst.BaseExpression, depth: int = 0) -> Optional[str]:
        """The tensor whose size ``expr`` caps a number at: ``min(seq_len, bucket_size)`` (or ``max``) with
        ``seq_len`` a size and the other argument none, or a local bound to that where it is read. Unlike
        ``n // 2``, a cap does not keep ``n / cap`` fixed as ``n`` changes."""
        if depth > 3:
            return None
        args = _min_max_args(expr)
        if args is not None:
            found = [self.of(a) for a in args]
            return next((f for f in found if f is not None), None) if not all(found) else None
        if isinstance(expr, cst.Name):
            reach = self._reaching(expr)
            values = (
                [v for v in reach.values] if reach is not None
                else [v for v in (self.ctx.bindings().get(expr.value) or [])]
            )
            if not values or any(v is None or v is PARAMETER for v in values):
                return None
            found = [self.capped(v, depth + 1) for v in values]
            return found[0] if all(found) else None
        return None

    def _reaching(self, name: cst.Name):
        """The bindings reaching this read when one of them always runs before it and hides the
        earlier ones (the parameter's value among them), else None (then every binding counts)."""
        facts = self.ctx.facts()
        reach = facts.reaching(name) if facts is not None else None
        return reach if reach is not None and reach.hidden else None

    def through_float_math(self, expr: cst.BaseExpression, depth: int = 0) -> Optional[tuple[str, str]]:
        """(the size as written, its tensor) when ``expr`` is an int made from a size by Python float
        math: ``int(math.log2(L))``, ``int(sqrt(n))``, ``math.ceil(n / k)``, arithmetic on one
        (``num_steps - 2``), or a local bound only to those. Dynamo keeps such an int symbolic
        (``math.trunc(math.log2(...))``) until a Python computation needs its value."""
        if depth > 5:
            return None
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, _SIZE_OPERATORS):
            return self.through_float_math(expr.left, depth + 1) or self.through_float_math(expr.right, depth + 1)
        if isinstance(expr, cst.Call) and len(expr.args) == 1 and not expr.args[0].star:
            if self._callee(expr.func) in _TO_INT:
                return self._float_of_size(expr.args[0].value, depth + 1)
            return None
        if isinstance(expr, cst.Name):  # unpacking: only `n, m = a, int(sqrt(k))` pairs an element with the name
            return self._every_binding(expr.value, lambda v: self.through_float_math(v, depth + 1))
        return None

    def _float_of_size(self, expr: cst.BaseExpression, depth: int) -> Optional[tuple[str, str]]:
        """``math.log2(n)``, ``sqrt(n)``, ``n / k``, ``n ** 0.5`` (and arithmetic on them) with ``n`` a
        size: (the size as written, its tensor)."""
        if depth > 6:
            return None
        if isinstance(expr, cst.BinaryOperation):
            if isinstance(expr.operator, (cst.Divide, cst.Power)):
                for side in (expr.left, expr.right):
                    tensor = self.of(side)
                    if tensor is not None:
                        return self.ctx.code(side).strip(), tensor
            if isinstance(expr.operator, (cst.Add, cst.Subtract, cst.Multiply, cst.Divide, cst.Power)):
                return self._float_of_size(expr.left, depth + 1) or self._float_of_size(expr.right, depth + 1)
            return None
        if isinstance(expr, cst.Call) and len(expr.args) >= 1 and self._callee(expr.func) in _FLOAT_MATH:
            arg = expr.args[0].value
            tensor = self.of(arg)
            if tensor is not None:
                return self.ctx.code(arg).strip(), tensor
            return self._float_of_size(arg, depth + 1)
        return None

    def _callee(self, func: cst.BaseExpression) -> Optional[str]:
        """``math.log2`` for ``math.log2`` and for ``log2`` imported from math; builtins by name."""
        name = self.ctx.qualname(func)
        if name is None:
            return None
        return name if "." in name or name in self.ctx.file.aliases else f"builtins.{name}"

    def _name(self, name: str, depth: int) -> Optional[str]:
        # unpacking, a parameter, `+=`, `for`: only `a, b = x.shape` is known
        return self._every_binding(name, lambda v: self.of(v, depth + 1), self._whole_shape)

    def _every_binding(self, name: str, judge, whole=None):
        """What ``judge`` says of every binding of ``name`` in the function (the last answer), or None when
        it says None of one. A binding by unpacking is judged by the element paired with the name
        (``N, H = x.size(0), self.heads``), else by ``whole`` of the unpacked value (``B, C = x.shape``)."""
        values = self.ctx.bindings().get(name)
        if not values:
            return None
        shapes = iter(self.unpacked.get(name, ()))
        found = None
        for value in values:
            if value is None:
                shape = next(shapes, None)
                if isinstance(shape, _Paired):
                    found = judge(shape.element)
                else:
                    found = whole(shape) if whole is not None and shape is not None else None
            else:
                found = judge(value)
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


def _min_max_args(expr: cst.BaseExpression) -> Optional[list]:
    """The arguments of ``min(a, b, ...)`` / ``max(...)`` with two or more plain positional ones, else None."""
    if not (isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value in ("min", "max")):
        return None
    if len(expr.args) < 2 or any(a.star or a.keyword is not None for a in expr.args):
        return None
    return [a.value for a in expr.args]


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
