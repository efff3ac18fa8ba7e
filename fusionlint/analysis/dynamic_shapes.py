"""Ops whose output size depends on tensor values: the check FL103 reports in compiled code and FL108
inside ``autograd.Function`` bodies (one construct gives one finding: FL103 skips those bodies).
"""

from __future__ import annotations

from typing import Callable, NamedTuple, Optional

import libcst as cst

from fusionlint.analysis.conditions import dynamic_condition
from fusionlint.analysis.judge import Found, TensorJudge, short, source
from fusionlint.analysis.scope import function_nodes
from fusionlint.analysis.names import dotted
from fusionlint.semantic.bindings import PARAMETER

# op -> hint; every one measured on torch 2.13.0+cpu as GB0036 "Dynamic shape operator".
_SHAPE_OPS = {
    "nonzero": "`(mask).sum()` for a count, `torch.where(mask, x, 0)` to keep the shape",
    "argwhere": "`torch.where(mask, x, 0)` to keep the shape",
    "masked_select": "`torch.where(mask, x, 0)` (or `masked_fill`) and reduce over the fixed shape",
    "unique": "a fixed-size encoding (one-hot / `scatter` over a known range)",
    "unique_consecutive": "a fixed-size encoding over a known range",
    "bincount": "`torch.zeros(n).scatter_add_(...)` or `one_hot(...).sum(0)` with a known `n`",
}
# Factories whose size arguments a tensor may fill: measured GB0033 when one is a 0-d tensor.
# name -> (positional indexes holding sizes, keyword names); None = every positional argument.
_FACTORIES: dict[str, tuple[Optional[tuple[int, ...]], tuple[str, ...]]] = {
    "arange": (None, ("start", "end", "step")),
    "zeros": (None, ("size",)),
    "ones": (None, ("size",)),
    "empty": (None, ("size",)),
    "rand": (None, ("size",)),
    "randn": (None, ("size",)),
    "full": ((0,), ("size",)),
    "linspace": ((2,), ("steps",)),
}
_NEW_FACTORIES: dict[str, tuple[Optional[tuple[int, ...]], tuple[str, ...]]] = {
    "new_zeros": (None, ("size",)),
    "new_ones": (None, ("size",)),
    "new_empty": (None, ("size",)),
    "new_full": ((0,), ("size",)),
}
# Calls that produce a bool tensor from a tensor.
_BOOL_TORCH = frozenset(
    "isnan isinf isfinite isneginf isposinf isreal isclose isin signbit logical_and logical_or logical_not "
    "logical_xor eq ne gt lt ge le greater less greater_equal less_equal not_equal".split()
)
_BOOL_METHODS = _BOOL_TORCH | {"bool"}
# Reductions that give a 0-d tensor when called without a dim: `lens.max()`, `torch.argmax(t)`.
_FULL_REDUCTIONS = frozenset("max min sum prod argmax argmin amax amin count_nonzero".split())
# torch functions that Dynamo evaluates while tracing when their Python-number arguments are constants:
# a size made by one is no break until a shape it is computed from becomes dynamic (measured, torch 2.13
# CPU, `x.new_zeros((b, torch.div(seq_len, 4, rounding_mode="trunc")))` with `seq_len` from `x.size()`,
# and the same with `torch.floor_divide` and `torch.tensor`: 0 breaks over one length, 1 (GB0033) after a
# second length (automatic dynamic shapes) or with `dynamic=True`; transformers' LED/Longformer)
_FOLDED_ON_CONSTANTS = frozenset({"div", "floor_divide", "tensor"})
# tensor methods taking a shape, measured the same way with a `torch.div(x.size(1), 4, ...)` entry (torch 2.13
# CPU: 0 breaks over one length, 1 after a second length): LED's `_chunk` view, reshape, as_strided
_SHAPED_METHODS = frozenset({"view", "reshape", "as_strided"})
# Shape, size and count arguments of tensor methods (positions in the method form, keywords): a tensor
# value in one is read on the host. Measured, torch 2.13 CPU, with `k = (x > -100).sum() // 2`: GB0033 for
# each of x.view(k, -1), reshape, x[:1].expand(k, -1), repeat(k, 1), chunk(k), split(k), roll(k, 0),
# topk(k), kthvalue(k), torch.tril(x, k), and for torch.eye(k) and F.pad(x, (0, k)).
_SIZE_ARGUMENTS: dict[str, tuple[Optional[tuple[int, ...]], tuple[str, ...]]] = {
    "view": (None, ()),
    "reshape": (None, ("shape",)),
    "expand": (None, ("size",)),
    "repeat": (None, ()),
    "tile": (None, ("dims",)),
    "topk": ((0,), ("k",)),
    "kthvalue": ((0,), ("k",)),
    "chunk": ((0,), ("chunks",)),
    "split": ((0,), ("split_size", "split_size_or_sections")),
    "roll": ((0,), ("shifts",)),
    "tril": ((0,), ("diagonal",)),
    "triu": ((0,), ("diagonal",)),
    # and, the same way: unfold(0, k, 1), select(0, k), diagonal(k), movedim(0, k - 1), squeeze(k - 1),
    # transpose(0, k - 1), unflatten(1, (2, k)), multinomial(p, k)
    "unfold": ((0, 1, 2), ("dimension", "size", "step")),
    "select": ((0, 1), ("dim", "index")),
    "diagonal": ((0, 1, 2), ("offset", "dim1", "dim2")),
    "movedim": ((0, 1), ("source", "destination")),
    "squeeze": ((0,), ("dim",)),
    "transpose": ((0, 1), ("dim0", "dim1")),
    "unflatten": ((0, 1), ("dim", "sizes")),
    "multinomial": ((0,), ("num_samples",)),
}
# the same, as functions of the tensor: positions count the tensor itself
_SIZE_FUNCTIONS: dict[str, tuple[tuple[int, ...], tuple[str, ...]]] = {
    "torch.eye": ((0, 1), ("n", "m")),
    "torch.nn.functional.pad": ((1,), ("pad",)),
    "torch._C._nn.pad": ((1,), ("pad",)),
    # measured the same way: F.interpolate(x, size=(k, k)), torch.randint(0, 10, (k,)), F.avg_pool2d(x, k)
    "torch.nn.functional.interpolate": ((1,), ("size",)),
    "torch.randint": ((0, 1, 2), ("low", "high", "size")),
    "torch.nn.functional.avg_pool2d": ((1, 2), ("kernel_size", "stride")),
    "torch.nn.functional.max_pool2d": ((1, 2), ("kernel_size", "stride")),
}
# `narrow(dim, start, length)`: a tensor start or length is read on the host (measured GB0033).
_NARROW_SIZES = {"method": (1, 2), "torch": (2, 3)}
_ONE_HOT = frozenset({"torch.nn.functional.one_hot", "torch._C._nn.one_hot"})


class ShapeChecker:
    """Finds value-dependent output shapes; FL103 reports them outside autograd.Function bodies."""

    def __init__(self) -> None:
        self.judge = TensorJudge()

    # -- calls ----------------------------------------------------------------------------------
    def check_Call(self, node: cst.Call, ctx) -> list[Found]:
        func = node.func
        qual = ctx.qualname(func) or ""
        if qual in _ONE_HOT:
            return self._one_hot(node, ctx)
        if qual in _SIZE_FUNCTIONS:
            return self._size_argument(node, *_SIZE_FUNCTIONS[qual], ctx)
        op: Optional[str] = None
        method = False
        if qual.startswith("torch.") and qual.count(".") == 1:
            op = qual[len("torch."):]
        elif isinstance(func, cst.Attribute) and not (isinstance(func.value, cst.Name) and func.value.value == "self"):
            if not qual.startswith("torch.") and self.judge.receiver(func.value, func.attr.value, ctx):
                op, method = func.attr.value, True
            elif (func.attr.value == "split" and ctx.is_tensor(func.value)
                  and self._tensor_size(node, *_SIZE_ARGUMENTS["split"], ctx) is not None):
                # `x.split(k)` of a forward argument: str.split shares the name, but not a tensor size
                op, method = "split", True
        if op is None:
            return []
        def text() -> str:  # the call as written, for a message: rendered only when there is one
            return short(source(ctx, node))

        if op in _SHAPE_OPS:
            return [(node, self._shape_message(op, text()), None)]
        if op == "where" and not method and len(node.args) == 1 and node.args[0].keyword is None:
            return [(node, self._shape_message("where", text()), None)]
        if op == "repeat_interleave":
            return self._repeat_interleave(node, method, text, ctx)
        if op == "narrow":
            sized = self._tensor_size(node, _NARROW_SIZES["method" if method else "torch"], ("start", "length"), ctx)
            if sized is not None:
                # measured, torch 2.13 CPU: `x.narrow(1, 0, lens.max())` -> GB0033, 2 graphs
                return [
                    (
                        node,
                        f"`{text()}` takes its start or length from a tensor value (`{short(source(ctx, sized))}`): "
                        "Dynamo reads it on the host: graph break (GB0033) and a host sync; take it from shapes, or "
                        "keep the full size and mask",
                        None,
                    )
                ]
            return []
        if op in _SIZE_ARGUMENTS:
            positions, keywords = _SIZE_ARGUMENTS[op]
            if not method:  # torch.topk(x, k): the tensor comes first
                count = sum(1 for a in node.args if a.keyword is None)
                positions = tuple(range(1, count)) if positions is None else tuple(i + 1 for i in positions)
            sized = self._tensor_size(node, positions, keywords, ctx)
            # a size torch makes from Python numbers (`torch.div(n, 4, rounding_mode="trunc")`) is a
            # constant while tracing: `_folded_shape` below says when it breaks
            if sized is not None and self._from_numbers(sized, ctx) is None:
                return [self._size_found(node, sized, ctx)]
        if method and op in _SHAPED_METHODS:
            return self._folded_shape(node, op, text, ctx)
        table = _NEW_FACTORIES if method else _FACTORIES
        if op in table:
            sized = self._tensor_size(node, *table[op], ctx)
            if sized is None:
                return []
            made = self._from_numbers(sized, ctx)
            if made is None:
                return [
                    (
                        node,
                        f"`{text()}` is sized by a tensor value (`{short(source(ctx, sized))}`): Dynamo reads it on the "
                        "host: graph break (GB0033) and a host sync; size it from shapes (`x.shape[0]`) or allocate "
                        "the maximum size and mask",
                        None,
                    )
                ]
            found = _folded_message(node, text, *made, ctx)
            return [found] if found else []
        return []

    def _folded_shape(self, node: cst.Call, op: str, text: Callable[[], str], ctx) -> list[Found]:
        """``x.view(b, torch.div(n, w, rounding_mode="trunc"), w)``, ``.reshape(...)``,
        ``.as_strided(size=(..., chunks + 1, ...))``: a shape entry torch makes from shape numbers."""
        if op == "as_strided":
            given = [a.value for a in node.args if (a.keyword is not None and a.keyword.value == "size")]
            given = given or [a.value for a in node.args[:1] if a.keyword is None]
        else:
            given = [a.value for a in node.args if a.keyword is None and not a.star]
        if len(given) == 1:
            given = self._entries(given[0], ctx)
        for entry in given:
            made = self._from_numbers(entry, ctx)
            if made is not None:
                found = _folded_message(node, text, *made, ctx)
                return [found] if found else []
        return []

    def _entries(self, expr: cst.BaseExpression, ctx) -> list[cst.BaseExpression]:
        """The entries of a shape written as a tuple/list, or a name bound only to one; else [expr]."""
        if isinstance(expr, cst.Name):
            bound = self._bindings(ctx).get(expr.value) or []
            if len(bound) == 1 and isinstance(bound[0], (cst.Tuple, cst.List)):
                expr = bound[0]
        if isinstance(expr, (cst.Tuple, cst.List)):
            return [e.value for e in expr.elements if not isinstance(e, cst.StarredElement)]
        return [expr]

    def _from_numbers(self, expr: cst.BaseExpression, ctx, depth: int = 0) -> Optional[tuple[cst.Call, list[str]]]:
        """When ``expr`` is a tensor that a torch function makes from Python numbers only
        (``torch.div(seq_len, w, rounding_mode="trunc") - 1``, or a name bound only to one): the call and
        the names it reads, the shape-derived ones (``seq_len`` from ``q.size()``) when there are any."""
        if depth > 4:
            return None
        if isinstance(expr, cst.BinaryOperation):
            left, right = expr.left, expr.right
            if _number(right):
                return self._from_numbers(left, ctx, depth + 1)
            if _number(left):
                return self._from_numbers(right, ctx, depth + 1)
            return None
        if isinstance(expr, cst.Name):
            bound = self._bindings(ctx).get(expr.value) or []
            found = [self._from_numbers(v, ctx, depth + 1) for v in bound]
            if len(found) != 1 or found[0] is None:
                return None
            return found[0]
        if not isinstance(expr, cst.Call):
            return None
        qual = ctx.qualname(expr.func) or ""
        if not (qual.startswith("torch.") and qual[6:] in _FOLDED_ON_CONSTANTS):
            return None
        names: list[str] = []
        shaped: list[str] = []
        for arg in expr.args:
            if arg.star or (arg.keyword is not None and arg.keyword.value not in ("input", "other", "data")):
                if arg.star:
                    return None
                continue
            if not self._numbers_in(arg.value, ctx, names, shaped):
                return None
        shaped += [n for n in names if n in self._shape_names(ctx)]
        return expr, list(dict.fromkeys(shaped or names))

    def _numbers_in(self, value: cst.BaseExpression, ctx, names: list[str], shaped: list[str], depth: int = 0) -> bool:
        """Is ``value`` Python-number arithmetic (numbers, non-tensor names, ``x.size(1)``)? Collects the
        names it reads into ``names`` and the shape reads into ``shaped``."""
        if depth > 4:
            return False
        if _number(value):
            return True
        if _is_shape(value) and not isinstance(value, cst.Attribute):  # `x.size(1)`, `x.shape[1]`
            shaped.append(short(source(ctx, value), 30))
            return True
        if isinstance(value, cst.BinaryOperation):
            return self._numbers_in(value.left, ctx, names, shaped, depth + 1) and self._numbers_in(
                value.right, ctx, names, shaped, depth + 1)
        if not isinstance(value, cst.Name) or self.judge.strong(value, ctx) or ctx.is_tensor(value):
            return False
        names.append(value.value)
        return True

    def _shape_names(self, ctx) -> frozenset[str]:
        """Locals bound from a shape: ``b, n, c = x.size()``, ``n = x.shape[1]``, ``n = x.size(1)``."""
        fn = ctx.function
        if fn is None:
            return frozenset()
        return ctx.memo(("shape-names", id(fn.node)), lambda: _shape_bound_names(fn.node))

    def _one_hot(self, node: cst.Call, ctx) -> list[Found]:
        """``F.one_hot(idx)``: without ``num_classes`` (or with -1) the width is ``idx.max() + 1``, read from the data."""
        positional = [a.value for a in node.args if a.keyword is None and not a.star]
        if any(a.star for a in node.args):
            return []
        classes = positional[1] if len(positional) > 1 else next(
            (a.value for a in node.args if a.keyword is not None and a.keyword.value == "num_classes"), None)
        if classes is None:
            gb = "GB0246"
        elif isinstance(classes, cst.UnaryOperation) and isinstance(classes.operator, cst.Minus) and (
                isinstance(classes.expression, cst.Integer) and classes.expression.value == "1"):
            gb = "GB0033"
        else:
            value = self._tensor_value(classes, ctx)
            if value is None:
                return []
            # measured, torch 2.13 CPU (mixture-of-experts 0.2.3's `safe_one_hot`, recall bench): `F.one_hot(idx,
            # max(idx.max() + 2, n))` -> GB0033 at that line; `max(idx.max() + 1, n)` used in arithmetic: no break
            return [
                (
                    node,
                    f"`{short(source(ctx, node))}` takes its width from a tensor value (`{short(source(ctx, value))}`): "
                    "Dynamo reads it on the host: graph break (GB0033) and a host sync; pass a Python int "
                    "(`num_classes=n`, then slice or mask what is out of range)",
                    None,
                )
            ]
        # measured, torch 2.13 CPU: `F.one_hot(idx)` -> GB0246, `num_classes=-1` -> GB0033; `F.one_hot(idx, 10)`: no break
        return [
            (
                node,
                f"`{short(source(ctx, node))}` without `num_classes` takes its width from the largest index, read "
                f"from the data: graph break ({gb}) and a host sync; pass `num_classes=`",
                None,
            )
        ]

    @staticmethod
    def _shape_message(op: str, text: str) -> str:
        hint = _SHAPE_OPS.get(op, _SHAPE_OPS["nonzero"])
        return f"`{text}` returns a tensor whose size depends on the data: graph break (GB0036) and a host sync; use {hint}"

    def _repeat_interleave(self, node: cst.Call, method: bool, text: Callable[[], str], ctx) -> list[Found]:
        given = next((a.value for a in node.args if a.keyword is not None and a.keyword.value == "output_size"), None)
        # `output_size=output_size` passes a parameter on; when every compiled caller leaves it at its
        # `None` default (PyG's `ptr2index(ptr, output_size=None)`), no size is given
        unset = given is not None and _none_in_every_compiled_call(given, ctx)
        if given is not None and not unset:
            return []
        positional = [a.value for a in node.args if a.keyword is None and not a.star]
        keyword = {a.keyword.value: a.value for a in node.args if a.keyword is not None}
        if method:
            repeats = positional[0] if positional else keyword.get("repeats")
        elif len(positional) == 1 and not keyword:
            repeats = positional[0]  # torch.repeat_interleave(repeats): the index form
        else:
            repeats = positional[1] if len(positional) > 1 else keyword.get("repeats")
        if repeats is None or not self.judge.strong(repeats, ctx):
            return []
        return [
            (
                node,
                f"`{text()}` with tensor `repeats` and no `output_size` has a data-dependent size: graph break "
                "(GB0036) and a host sync; pass `output_size=` when the total is known"
                + (f" (`{short(source(ctx, given))}` is None in every compiled call)" if unset and given is not None else ""),
                None,
            )
        ]

    def _size_argument(self, node: cst.Call, positions, keywords, ctx) -> list[Found]:
        sized = self._tensor_size(node, positions, keywords, ctx)
        return [] if sized is None else [self._size_found(node, sized, ctx)]

    @staticmethod
    def _size_found(node: cst.Call, sized: cst.BaseExpression, ctx) -> Found:
        return (
            node,
            f"`{short(source(ctx, node))}` takes a size from a tensor value (`{short(source(ctx, sized))}`): Dynamo "
            "reads it on the host: graph break (GB0033) and a host sync; take sizes from shapes (`x.shape[0]`), "
            "or keep the full size and mask",
            None,
        )

    def _tensor_value(self, expr: cst.BaseExpression, ctx) -> Optional[cst.BaseExpression]:
        """``expr`` when it is a tensor value, also through the builtin ``max``/``min`` of a tensor and a number
        (Dynamo computes them as tensors: ``max(idx.max() + 1, n)``), else None."""
        if self.judge.strong(expr, ctx):
            return expr
        if (isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and ctx.qualname(expr.func) in ("max", "min")
                and len(expr.args) >= 2 and not any(a.star or a.keyword is not None for a in expr.args)):
            return next((a.value for a in expr.args if self.judge.strong(a.value, ctx)), None)
        return None

    def _tensor_size(self, node: cst.Call, positions, keywords, ctx) -> Optional[cst.BaseExpression]:
        candidates: list[cst.BaseExpression] = []
        positional = [a for a in node.args if a.keyword is None]
        for i, arg in enumerate(positional):
            if arg.star:
                return None
            if positions is None or i in positions:
                candidates.append(arg.value)
        for arg in node.args:
            if arg.keyword is not None and arg.keyword.value in keywords:
                candidates.append(arg.value)
        for cand in candidates:
            parts = [e.value for e in cand.elements] if isinstance(cand, (cst.Tuple, cst.List)) else [cand]
            for part in parts:
                if self.judge.strong(part, ctx):
                    return part
        return None

    # -- boolean-mask indexing ----------------------------------------------------------------------
    def check_Subscript(self, node: cst.Subscript, ctx) -> list[Found]:
        parent = ctx.parent
        # `h[mask] = v` is a masked write (index_put): measured no break; a 0-d index or a slice bounded by a
        # tensor value in a target still reads it (torch 2.13 CPU: `out[n] = 1` with `n = x.argmax()` GB0033,
        # `out[:, :k] = 0` GB0124)
        # (`h[m] *= 2` reads `h[m]` first: GB0036, as a read)
        written = isinstance(parent, cst.AssignTarget) and parent.target is node
        if isinstance(parent, cst.Del):
            return []
        if not ctx.is_tensor(node.value):
            return []
        for element in node.slice:
            index = element.slice
            if isinstance(index, cst.Index) and not written and self.bool_mask(index.value, node.value, ctx):
                return [
                    (
                        node,
                        f"boolean-mask indexing `{short(source(ctx, node))}` returns a tensor whose size depends on the "
                        "data: graph break (GB0036) and a host sync (aten::nonzero); keep the shape with "
                        "`torch.where(mask, x, 0)` / `masked_fill` and reduce",
                        None,
                    )
                ]
            if isinstance(index, cst.Index) and self.scalar_tensor(index.value, ctx):
                # measured, torch 2.13 CPU: `x[lens.argmax()]`, `x[:, lens.sum() - 10]` -> GB0033, 2 graphs;
                # a 1-d index tensor (`x[:, idx]`) is traced (no break)
                return [
                    (
                        node,
                        f"`{short(source(ctx, node))}` indexes with a 0-d tensor (`{short(source(ctx, index.value))}`): "
                        "Dynamo reads its value on the host: graph break (GB0033) and a host sync; use "
                        "a 1-element index tensor (`x[idx.view(1)]`, `x.index_select(0, idx.view(1))`), which keeps the dim",
                        None,
                    )
                ]
            if isinstance(index, cst.Slice):
                for bound in (index.lower, index.upper, index.step):
                    if bound is not None and self.judge.strong(bound, ctx):
                        # measured, torch 2.13 CPU: `x[:, : lens.max()]` -> "Graph break from `Tensor.item()`"
                        return [
                            (
                                node,
                                f"slice `{short(source(ctx, node))}` is bounded by a tensor value "
                                f"(`{short(source(ctx, bound))}`): Dynamo reads it on the host (`Tensor.item()`): "
                                "graph break and a host sync; slice by shapes, or keep the size and mask",
                                None,
                            )
                        ]
        return []

    def scalar_tensor(self, expr: cst.BaseExpression, ctx, depth: int = 0) -> bool:
        """Is ``expr`` surely a 0-d tensor: a full reduction without a dim (``lens.max()``,
        ``torch.argmax(t)``), arithmetic of one with Python numbers, or a name bound only to one?"""
        if depth > 4:
            return False
        if isinstance(expr, cst.Call):
            func = expr.func
            if any(a.star for a in expr.args):
                return False
            qual = ctx.qualname(func) or ""
            if qual.startswith("torch.") and qual.count(".") == 1 and qual[6:] in _FULL_REDUCTIONS:
                return len(expr.args) == 1 and expr.args[0].keyword is None and self.judge.strong(expr.args[0].value, ctx)
            if isinstance(func, cst.Attribute) and func.attr.value in _FULL_REDUCTIONS and not qual.startswith("torch."):
                return not expr.args and self.judge.strong(func.value, ctx)
            return False
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, (cst.Add, cst.Subtract, cst.Multiply, cst.FloorDivide, cst.Modulo)):
            left, right = expr.left, expr.right
            return (self.scalar_tensor(left, ctx, depth + 1) and _number(right)) or (
                _number(left) and self.scalar_tensor(right, ctx, depth + 1))
        if isinstance(expr, cst.Name):
            bound = self._bindings(ctx).get(expr.value)
            return bool(bound) and all(self.scalar_tensor(v, ctx, depth + 1) for v in bound)
        return False

    def bool_mask(self, expr: cst.BaseExpression, indexed: cst.BaseExpression, ctx, depth: int = 0) -> bool:
        """Is ``expr`` surely a bool tensor (a comparison on tensors, isnan(), ~m, m & n, a name bound to one,
        an item that a project function returns as one)?"""
        if depth > 4:
            return False
        if isinstance(expr, UnpackedItem):
            fn = ctx.function
            written = dotted(expr.call.func)
            return fn is not None and written is not None and expr.index in fn.item_calls.get(written, ((), ()))[1]
        judge = self.judge
        if isinstance(expr, cst.Comparison):
            if any(isinstance(c.operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn)) for c in expr.comparisons):
                return False
            operands = [expr.left, *(c.comparator for c in expr.comparisons)]
            same = ctx.code(indexed).strip()
            return any(judge.strong(o, ctx) or (ctx.is_tensor(o) and ctx.code(o).strip() == same) for o in operands)
        if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.BitInvert):
            return self.bool_mask(expr.expression, indexed, ctx, depth + 1)
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, (cst.BitAnd, cst.BitOr, cst.BitXor)):
            return self.bool_mask(expr.left, indexed, ctx, depth + 1) and self.bool_mask(expr.right, indexed, ctx, depth + 1)
        if isinstance(expr, cst.Call):
            func = expr.func
            qual = ctx.qualname(func) or ""
            if qual.startswith("torch.") and qual.count(".") == 1 and qual[6:] in _BOOL_TORCH:
                return True
            if isinstance(func, cst.Attribute) and func.attr.value in _BOOL_METHODS:
                return judge.receiver(func.value, func.attr.value, ctx) and not qual.startswith("torch.")
            if isinstance(func, cst.Attribute) and func.attr.value in ("to", "type") and len(expr.args) == 1:
                return ctx.qualname(expr.args[0].value) == "torch.bool" and judge.receiver(func.value, "bool", ctx)
            return False
        if isinstance(expr, cst.Name):
            facts = ctx.facts()
            # a re-bound name: only the bindings that reach this read (`mask = (row >= 0) & (col >= 0)`
            # after `mask = idx.new_full(...)`), none of them the parameter's own value
            reaching = facts.reaching_values(expr) if facts is not None else None
            if reaching is not None and any(v is PARAMETER for v in reaching):
                return False
            bound = reaching if reaching is not None else self._bindings(ctx).get(expr.value)
            return bool(bound) and all(self.bool_mask(v, indexed, ctx, depth + 1) for v in bound)
        return False

    def _bindings(self, ctx) -> dict[str, list[cst.BaseExpression]]:
        """name -> values assigned to it in the current function (None marks a non-plain binding)."""
        fn = ctx.function
        if fn is None:
            return {}
        return ctx.memo(("plain-bindings", id(fn.node)), lambda: _plain_bindings(fn.node))


def _none_in_every_compiled_call(expr: cst.BaseExpression, ctx) -> bool:
    """Is ``expr`` a parameter that every compiled call of the function leaves None (the project
    model's constants: what each compiled caller passes, defaults included)?"""
    fn = ctx.function
    return isinstance(expr, cst.Name) and fn is not None and fn.constants.get(expr.value) == "None"


def _number(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, (cst.Integer, cst.Float)) or (
        isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus) and isinstance(expr.expression, cst.Integer))


def _folded_message(node: cst.Call, text: Callable[[], str], call: cst.Call, names: list[str], ctx) -> Optional[Found]:
    if not names:  # torch of literal numbers only: a constant while tracing, never a break
        return None
    return (
        node,
        f"`{text()}` is sized by a tensor that `{short(source(ctx, call), 50)}` makes from Python numbers: "
        f"graph break (GB0033) and a host sync {dynamic_condition(names)} "
        "(`dynamic=True`, `mark_dynamic`, or a second length under automatic dynamic shapes); while it is a "
        "constant, Dynamo evaluates the call while tracing and nothing breaks; compute the size with Python "
        "arithmetic (`//`) instead",
        None,
    )


def _is_shape(expr: cst.BaseExpression) -> bool:
    """``x.shape``, ``x.size()``, ``x.shape[1]``, ``x.size(1)``."""
    if isinstance(expr, cst.Subscript):
        expr = expr.value
    if isinstance(expr, cst.Attribute):
        return expr.attr.value == "shape"
    return isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "size"


def _shape_bound_names(fn: cst.FunctionDef) -> frozenset[str]:
    names: set[str] = set()
    for node in function_nodes(fn, (cst.Assign,)):
        if not _is_shape(node.value):
            continue
        for target in node.targets:
            t = target.target
            elements = [e.value for e in t.elements] if isinstance(t, (cst.Tuple, cst.List)) else [t]
            names.update(e.value for e in elements if isinstance(e, cst.Name))
    return frozenset(names)


class UnpackedItem(NamedTuple):
    """A binding by tuple unpacking of a call: item ``index`` of what ``call`` returns."""

    call: cst.Call
    index: int


def _unpacks_call(target: cst.BaseExpression, value: cst.BaseExpression) -> bool:
    return (
        isinstance(target, (cst.Tuple, cst.List)) and isinstance(value, cst.Call)
        and all(isinstance(e, cst.Element) for e in target.elements)
    )


def _plain_bindings(fn: cst.FunctionDef) -> dict[str, list[cst.BaseExpression]]:
    found: dict[str, list] = {}
    params = [*fn.params.posonly_params, *fn.params.params, *fn.params.kwonly_params]
    for p in params:
        found.setdefault(p.name.value, []).append(cst.Name("__param__"))  # never a known bool mask

    def _opaque(target: cst.BaseExpression) -> None:
        if isinstance(target, cst.Name):
            found.setdefault(target.value, []).append(cst.Name("__opaque__"))
        elif isinstance(target, (cst.Tuple, cst.List)):
            for e in target.elements:
                _opaque(e.value)
        elif isinstance(target, cst.StarredElement):
            _opaque(target.value)

    for node in function_nodes(fn, (cst.Assign, cst.AugAssign, cst.AnnAssign, cst.For, cst.NamedExpr)):
        if isinstance(node, cst.Assign):
            for target in node.targets:
                if isinstance(target.target, cst.Name):
                    found.setdefault(target.target.value, []).append(node.value)
                elif _unpacks_call(target.target, node.value):
                    # `h, mask = to_dense_batch(x, batch)`: item i of what the call returns
                    for i, e in enumerate(target.target.elements):  # type: ignore[attr-defined]
                        if isinstance(e.value, cst.Name):
                            found.setdefault(e.value.value, []).append(UnpackedItem(node.value, i))  # type: ignore[arg-type]
                else:
                    _opaque(target.target)
        elif isinstance(node, cst.AnnAssign):
            if isinstance(node.target, cst.Name) and node.value is not None:
                found.setdefault(node.target.value, []).append(node.value)
            else:
                _opaque(node.target)
        elif isinstance(node, cst.NamedExpr):
            if isinstance(node.target, cst.Name):
                found.setdefault(node.target.value, []).append(node.value)
        else:  # AugAssign, For
            _opaque(node.target)
    del _opaque  # a nested function that calls itself is a reference cycle: gone now, not at the next collection
    return found
