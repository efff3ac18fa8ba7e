"""FL401 inplace-on-expanded: an in-place op writes through an `expand()`ed (self-overlapping) view."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from fusionlint.analysis.inplace import AUG_OPS, inplace_call_target, out_of_place_call
from fusionlint.analysis.scope import names_always_bound_to
from fusionlint.rule import Applicability, Effect, Invalid, Rule, Severity

_EXPAND_METHODS = frozenset({"expand", "expand_as", "broadcast_to"})
_EXPAND_FUNCS = frozenset({"torch.broadcast_to"})
# Writes that have an out-of-place method twin: `y.add_(1)` -> `y = y.add(1)`.
_FIXABLE = frozenset(
    {
        "add_", "sub_", "mul_", "div_", "true_divide_", "floor_divide_", "remainder_", "fmod_", "pow_", "neg_",
        "abs_", "exp_", "log_", "sqrt_", "rsqrt_", "sin_", "cos_", "tanh_", "sigmoid_", "relu_", "clamp_",
        "clamp_min_", "clamp_max_", "clip_", "addcmul_", "addcdiv_", "lerp_", "masked_fill_", "where_",
        "nan_to_num_", "reciprocal_", "square_", "sign_", "floor_", "ceil_", "round_", "trunc_", "logical_not_",
    }
)
# Measured (torch 2.13 CPU): eager accepts these on an expanded view, compiled computes other values.
_EAGER_OK = frozenset({"fill_", "zero_"})
# Measured: these raise in both modes (fake-tensor check at compile time).
_RAISE_BOTH = frozenset({"clamp_", "copy_"})


def _expand_call(expr: cst.BaseExpression, qualname) -> Optional[str]:
    """The expanding op when ``expr`` is ``x.expand(...)``/``x.expand_as(y)``/``torch.broadcast_to(x, s)``."""
    if not isinstance(expr, cst.Call):
        return None
    func = expr.func
    qual = qualname(func) or ""
    if qual in _EXPAND_FUNCS:
        return "torch.broadcast_to()"
    if isinstance(func, cst.Attribute) and func.attr.value in _EXPAND_METHODS and not qual.startswith("torch."):
        if qual.startswith(("numpy.", "np.")):
            return None  # np.broadcast_to returns a read-only numpy view
        return f".{func.attr.value}()"
    return None


class InplaceOnExpanded(Rule):
    code = "FL401"
    name = "inplace-on-expanded"
    message = "in-place write through an expand()ed view: eager raises, torch.compile silently computes something else"
    effects = (Effect.RUNTIME_ERROR, Effect.SILENT_DIVERGENCE)
    severity = Severity.ERROR
    fix_applicability = Applicability.UNSAFE
    triggers = ("expand", "broadcast_to")
    measured_on = ("torch 2.13.0 CPU", "torch 2.11.0 H200")
    docs = """
## What it does
Flags in-place writes (`y.add_(...)`, `y.mul_(...)`, `y.fill_(...)`, `y.zero_()`, `y += ...`,
`torch.relu_(y)`...) whose target is the result of `expand()`, `expand_as()` or
`broadcast_to()`: directly, or through a local name that is only ever bound to such a result.

## Why is this bad?
An expanded tensor has stride 0 along the expanded dimensions: many of its elements are one memory
location. Eager PyTorch refuses most writes to it; `torch.compile` does not, and computes a
different answer. Measured with torch 2.13.0 on CPU:
- `bias = h.mean(1, keepdim=True).expand_as(h); bias.add_(1.0)` (`fixtures/FL401_inplace_on_expanded`,
  16 rows aliased): eager raises `RuntimeError: unsupported operation: more than one element of
  the written-to tensor refers to a single memory location`; compiled runs and adds 1.0 **once
  per aliasing element** (the output equals the one computed with +16). The same for `mul_`,
  `+=`, `torch.relu_`, `expand_as`/`broadcast_to` targets, buffers and graph inputs (truth table g1:
  the input row `x[:, 0]` itself gained +16 after the compiled call; CUDA 2.11 gave the same).
- `fill_` and `zero_` on an expanded view: eager runs (every alias gets the value), compiled
  returns **different numbers** with no error (max abs difference 7.7 and 2.8 in the probe; for
  `new_zeros(1, 1, 32).expand_as(h).fill_(0.5)` the output differed by up to 29.9).
- On an H200 with torch 2.11: `add_` on an expanded view raised in eager and ran compiled; `fill_`
  ran in both and the outputs were not allclose.
- `clamp_`, `copy_` and `y[...] = v` on an expanded view raise in both modes.
- Not flagged because it measured identical in both modes: writing one row of an expanded tensor
  (`y[0].add_(1)`, `y[0] = 0.0`) and any write after `.clone()`/`.contiguous()`.

## Example
```python
bias = h.mean(1, keepdim=True).expand_as(h)
bias.add_(1.0)
```

## Use instead
```python
bias = h.mean(1, keepdim=True) + 1.0   # broadcasting does the rest
# or, if the expanded tensor is needed: bias = bias.add(1.0)
```

## Fix safety
Unsafe: the fix rewrites `y.op_(args)` to `y = y.op(args)` and `y op= v` to `y = y op v`. The
result no longer writes into the tensor that was expanded, so code that relied on that base
changing (only possible for the `fill_`/`zero_` forms that eager accepts) behaves differently.
No fix is offered for `fill_`, `zero_`, `copy_` and other writes without an out-of-place twin.

## PyTorch reference
Eager's check is `assert_no_internal_overlap`; the compiled result follows functionalization,
which scatters the update once per aliasing element. No graph-break id (nothing breaks).
"""
    VALID = [
        # out-of-place on the expanded view
        "import torch\nfrom torch import nn\nclass M(nn.Module):\n    def forward(self, h):\n"
        "        bias = h.mean(1, keepdim=True).expand_as(h)\n        bias = bias + 1.0\n        return h - bias\n",
        # materialised first: the write is fine
        "import torch\nfrom torch import nn\nclass M(nn.Module):\n    def forward(self, h):\n"
        "        bias = h.mean(1, keepdim=True).expand_as(h).clone()\n        bias.add_(1.0)\n        return h - bias\n",
        # in-place on the small tensor before expanding
        "import torch\nfrom torch import nn\nclass M(nn.Module):\n    def forward(self, h):\n"
        "        m = h.mean(1, keepdim=True)\n        m.add_(1.0)\n        return h - m.expand_as(h)\n",
        # metadata-only in-place op
        "import torch\nfrom torch import nn\nclass M(nn.Module):\n    def forward(self, h):\n"
        "        y = h[:, :1].expand(-1, 4, -1)\n        y.requires_grad_(False)\n        return y * 2\n",
        # the name is rebound to something that is not expanded before the write (flow-insensitive: not flagged)
        "import torch\nfrom torch import nn\nclass M(nn.Module):\n    def forward(self, h):\n"
        "        y = h[:, :1].expand(-1, 4, -1)\n        y = y * 2\n        y.add_(1)\n        return y\n",
        # outside compiled code
        "import torch\ndef prep(h):\n    y = h[:, :1].expand(-1, 4, -1)\n    y.add_(1)\n    return y\n",
    ]
    INVALID = [
        Invalid(
            "import torch\nfrom torch import nn\nclass M(nn.Module):\n    def forward(self, h):\n"
            "        bias = h.mean(1, keepdim=True).expand_as(h)\n        bias.add_(1.0)\n        return h - bias\n",
            expected_fix="import torch\nfrom torch import nn\nclass M(nn.Module):\n    def forward(self, h):\n"
            "        bias = h.mean(1, keepdim=True).expand_as(h)\n        bias = bias.add(1.0)\n        return h - bias\n",
            line=6,
        ),
        Invalid(
            "import torch\nfrom torch import nn\nclass M(nn.Module):\n    def forward(self, x):\n"
            "        y = x[:, :1].expand(-1, x.shape[1], -1)\n        y *= 2\n        return y\n",
            expected_fix="import torch\nfrom torch import nn\nclass M(nn.Module):\n    def forward(self, x):\n"
            "        y = x[:, :1].expand(-1, x.shape[1], -1)\n        y = y * 2\n        return y\n",
            line=6,
        ),
        Invalid(
            "import torch\nfrom torch import nn\nclass M(nn.Module):\n    def forward(self, h):\n"
            "        gate = h.new_zeros(1, 1, 32).expand_as(h)\n        gate.fill_(0.5)\n        return h * gate\n",
            line=6,
        ),
        Invalid(
            "import torch\nfrom torch import nn\nclass M(nn.Module):\n    def forward(self, h):\n"
            "        m = torch.broadcast_to(h.mean(0), h.shape)\n        torch.relu_(m)\n"
            "        return h.mean(0).expand(4, -1).mul_(2) + m\n",
            count=2,
        ),
    ]

    def __init__(self) -> None:
        super().__init__()
        self._names: dict[int, dict[str, str]] = {}

    def _expanded(self, expr: cst.BaseExpression, ctx) -> Optional[str]:
        op = _expand_call(expr, ctx.qualname)
        if op is not None:
            return op
        if isinstance(expr, cst.Name) and ctx.function is not None:
            key = id(ctx.function.node)
            if key not in self._names:
                self._names[key] = names_always_bound_to(ctx.function.node, lambda v: _expand_call(v, ctx.qualname))
            op = self._names[key].get(expr.value)
            if op is not None:
                return op
        return None

    def visit_Call(self, node: cst.Call, ctx) -> None:
        written = inplace_call_target(node, ctx)
        if written is None:
            return
        target, method, is_method = written
        op = self._expanded(target, ctx)
        if op is None:
            return
        if not is_method:  # torch.relu_(y, ...)
            ctx.report(node, self._msg(f"`{method}`", op))
            return
        fix = None
        parent = ctx.parent
        if (
            isinstance(target, cst.Name)
            and method in _FIXABLE
            and isinstance(parent, cst.Expr)
            and parent.value is node
        ):
            fix = ctx.fix(
                Applicability.UNSAFE,
                ctx.replace(node, out_of_place_call(node, target.value, method, ctx)),
                title=f"Use the out-of-place `.{method[:-1]}()`",
            )
        ctx.report(node, self._msg(f"`.{method}()`", op), fix=fix)

    def visit_AugAssign(self, node: cst.AugAssign, ctx) -> None:
        target = node.target
        if not isinstance(target, cst.Name):
            return
        op = self._expanded(target, ctx)
        if op is None:
            return
        symbol = AUG_OPS.get(type(node.operator))
        fix = None
        if symbol is not None:
            fix = ctx.fix(
                Applicability.UNSAFE,
                ctx.replace(node, f"{target.value} = {target.value} {symbol} {ctx.code(node.value)}"),
                title="Use an out-of-place operation",
            )
        ctx.report(node, self._msg(f"`{ctx.code(node.operator).strip()}`", op), fix=fix)

    @staticmethod
    def _msg(what: str, op: str) -> str:
        method = what.strip("`.()")
        if method in _EAGER_OK:
            effect = "eager writes every alias, torch.compile returns different values without an error"
        elif method in _RAISE_BOTH:
            effect = "it raises in eager and under torch.compile"
        else:
            effect = "eager raises; torch.compile runs and applies the write once per alias (a silent wrong result)"
        return f"{what} writes in place through a `{op}` view whose elements share memory: {effect}"


