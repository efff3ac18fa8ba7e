"""FL404 overlapping-slice-write: `t[:, 1:] = t[:, :-1]` (an in-place write from an overlapping slice of itself)."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from fusionlint.analysis.literals import int_literal
from fusionlint.rule import Effect, Invalid, Rule, Severity

# In-place methods that read their first argument while writing the receiver.
_BINARY_INPLACE = frozenset(
    {"copy_", "add_", "sub_", "mul_", "div_", "maximum_", "minimum_", "lerp_", "addcmul_", "addcdiv_", "fmod_", "pow_"}
)


_WHOLE = object()  # a plain `:` (or absent start/stop): every index


def _slice_bounds(sl: cst.Slice) -> Optional[tuple]:
    """(start, stop) of a step-1 slice with literal (or absent) bounds, else None."""
    if sl.step is not None and int_literal(sl.step) != 1:
        return None
    start = 0 if sl.lower is None else int_literal(sl.lower)
    stop = _WHOLE if sl.upper is None else int_literal(sl.upper)
    if start is None or stop is None:
        return None
    return start, stop


def _shift(dst: cst.Subscript, src: cst.Subscript, code) -> Optional[str]:
    """When ``dst`` and ``src`` index the same tensor with slices that differ in one dimension only and
    ``dst`` starts later (a forward shift, the direction in which eager's in-order copy reads values it
    already overwrote), describe that dimension; else None."""
    if code(dst.value) != code(src.value):
        return None
    a, b = dst.slice, src.slice
    if len(a) != len(b):
        return None
    differing = []
    for i, (ea, eb) in enumerate(zip(a, b)):
        sa, sb = ea.slice, eb.slice
        if code(sa) == code(sb):
            if isinstance(sa, cst.Index) and not _is_plain_index(sa.value):
                return None  # a tensor index (advanced indexing) copies: no aliasing to worry about
            continue
        differing.append((i, sa, sb))
    if len(differing) != 1:
        return None
    i, sa, sb = differing[0]
    if not (isinstance(sa, cst.Slice) and isinstance(sb, cst.Slice)):
        return None
    ba, bb = _slice_bounds(sa), _slice_bounds(sb)
    if ba is None or bb is None:
        return None
    (start_a, stop_a), (start_b, stop_b) = ba, bb
    if (start_a < 0) != (start_b < 0):
        return None  # mixed-sign starts: the order depends on the size
    if start_a <= start_b:
        return None  # backward or no shift: eager's in-order copy reads before it writes (measured equal)
    shift = start_a - start_b
    # with two explicit non-negative stops we know the length and can rule out disjoint ranges
    if isinstance(stop_a, int) and isinstance(stop_b, int) and stop_a >= 0 and stop_b >= 0 and start_b >= 0:
        if stop_b <= start_a:
            return None
    return f"dimension {i}, shifted by {shift}"


def _is_plain_index(expr: cst.BaseExpression) -> bool:
    return int_literal(expr) is not None or (isinstance(expr, cst.Name) and expr.value in ("None", "Ellipsis")) or isinstance(
        expr, cst.Ellipsis
    )


class OverlappingSliceWrite(Rule):
    code = "FL404"
    name = "overlapping-slice-write"
    message = "in-place write from an overlapping slice of the same tensor: eager and torch.compile compute different values"
    effects = (Effect.SILENT_DIVERGENCE,)
    severity = Severity.ERROR
    triggers = ("[",)
    measured_on = ("torch 2.13.0 CPU", "torch 2.11.0 H200")
    docs = """
## What it does
Flags a write into a slice of a tensor whose source is an overlapping, *earlier* slice of the same
tensor, in code that `torch.compile` traces: `h[:, 1:] = h[:, :-1]`, `h[..., 2:].copy_(h[..., :-2])`,
`h[:, 1:] += h[:, :-1]`, `h[:, 1:].add_(h[:, :-1])`. Both subscripts must use literal slices that
differ in exactly one dimension, with the destination starting later (a forward shift).

## Why is this bad?
Eager PyTorch copies in memory order, so a forward shift reads values it has already overwritten;
`torch.compile` (functionalization) reads the source as it was before the write. Measured with
torch 2.13.0 on CPU:
- `h[:, 1:] = h[:, :-1]` on a (4, 16, 32) activation (`fixtures/FL404_overlapping_slice_write`):
  eager runs and copies row 0 into **every** row (a cascade); compiled performs the intended shift;
  outputs differ (max abs difference 0.46 after the next Linear + sigmoid). Same for
  `h[..., 1:] = h[..., :-1]` (0.48) and `h[:, 1:].add_(h[:, :-1])` (0.68), and for 2-D
  `h[:, 1:].copy_/mul_/+= h[:, :-1]`. On an H200 with torch 2.11 the `h[:, 1:] = h[:, :-1]` probe
  also gave eager != compiled.
- When the overlap is easy to detect (shifting along dimension 0 of a contiguous tensor, or a 1-D
  tensor) eager raises "some elements of the input tensor and the written-to tensor refer to a
  single memory location" while compiled runs: the two still disagree.
- Not flagged because it measured identical: the backward shift `h[:, :-1] = h[:, 1:]` (eager's
  in-order copy reads each value before overwriting it on CPU) and a cloned source.

## Example
```python
h[:, 1:] = h[:, :-1]
```

## Use instead
```python
h[:, 1:] = h[:, :-1].clone()           # or: h = torch.roll(h, 1, dims=1) / F.pad(h, (0, 0, 1, 0))[:, :-1]
```

## Fix safety
No automatic fix: `.clone()` gives eager the snapshot semantics that compiled code already has, so
it changes what eager computes (which was almost certainly not what was meant).
"""
    VALID = [
        # cloned source: both modes agree
        "import torch\nfrom torch import nn\nclass M(nn.Module):\n    def forward(self, h):\n"
        "        h[:, 1:] = h[:, :-1].clone()\n        return h\n",
        # backward shift: measured identical
        "import torch\nfrom torch import nn\nclass M(nn.Module):\n    def forward(self, h):\n"
        "        h[:, :-1] = h[:, 1:]\n        return h\n",
        # different tensors
        "import torch\nfrom torch import nn\nclass M(nn.Module):\n    def forward(self, h, g):\n"
        "        h[:, 1:] = g[:, :-1]\n        return h\n",
        # disjoint halves
        "import torch\nfrom torch import nn\nclass M(nn.Module):\n    def forward(self, h):\n"
        "        h[:, 4:8] = h[:, 0:4]\n        return h\n",
        # arithmetic on the source makes a new tensor
        "import torch\nfrom torch import nn\nclass M(nn.Module):\n    def forward(self, h):\n"
        "        h[:, 1:] = h[:, :-1] * 0.5\n        return h\n",
        # outside compiled code
        "import torch\ndef shift(h):\n    h[:, 1:] = h[:, :-1]\n    return h\n",
    ]
    INVALID = [
        Invalid(
            "import torch\nfrom torch import nn\nclass M(nn.Module):\n    def forward(self, x):\n"
            "        h = x * 2\n        h[:, 1:] = h[:, :-1]\n        return h\n",
            line=6,
        ),
        Invalid(
            "import torch\nfrom torch import nn\nclass M(nn.Module):\n    def forward(self, h):\n"
            "        h[..., 2:].copy_(h[..., :-2])\n        return h\n",
            line=5,
        ),
        Invalid(
            "import torch\nfrom torch import nn\nclass M(nn.Module):\n    def forward(self, h):\n"
            "        h[:, 1:] += h[:, :-1]\n        h[:, 1:].add_(h[:, :-1])\n        return h\n",
            count=2,
        ),
        Invalid(
            "import torch\nfrom torch import nn\nclass M(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.register_buffer('hist', torch.zeros(8, 4))\n    def forward(self, x):\n"
            "        self.hist[1:] = self.hist[:-1]\n        self.hist[0] = x.mean(0)\n        return self.hist.sum(0)\n",
            line=8,
        ),
    ]

    def visit_Assign(self, node: cst.Assign, ctx) -> None:
        if len(node.targets) != 1:
            return
        dst, src = node.targets[0].target, node.value
        if isinstance(dst, cst.Subscript) and isinstance(src, cst.Subscript):
            self._check(node, dst, src, ctx)

    def visit_AugAssign(self, node: cst.AugAssign, ctx) -> None:
        if isinstance(node.target, cst.Subscript) and isinstance(node.value, cst.Subscript):
            self._check(node, node.target, node.value, ctx)

    def visit_Call(self, node: cst.Call, ctx) -> None:
        func = node.func
        if not (isinstance(func, cst.Attribute) and func.attr.value in _BINARY_INPLACE and node.args):
            return
        first = node.args[0]
        if first.keyword is None and isinstance(func.value, cst.Subscript) and isinstance(first.value, cst.Subscript):
            self._check(node, func.value, first.value, ctx)

    def _check(self, node: cst.CSTNode, dst: cst.Subscript, src: cst.Subscript, ctx) -> None:
        where = _shift(dst, src, ctx.code)
        if where is None:
            return
        base = dst.value
        if not ctx.is_tensor(base):
            return  # lists copy on slicing: `a[1:] = a[:-1]` is fine for a Python list
        ctx.report(
            node,
            f"`{ctx.code(dst)}` is written from the overlapping `{ctx.code(src)}` ({where}): eager copies in "
            "memory order and re-reads overwritten values (or raises), torch.compile reads a snapshot; "
            "the results differ. Clone the source",
        )
