"""FL403 inplace-on-saved-output: an in-place write to the output of an op that autograd saves (sigmoid, tanh...)."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from fusionlint.analysis.inplace import AUG_OPS, inplace_call_target, out_of_place_call, under_no_grad
from fusionlint.analysis.scope import names_always_bound_to
from fusionlint.rule import Applicability, Effect, Invalid, Rule, Severity

# Ops whose backward reads their *output*, measured (torch 2.13 CPU, grad on) to make a later
# in-place write on that output fail: method name -> display name.
_SAVING_METHODS = frozenset({"sigmoid", "tanh", "exp", "relu", "softmax", "sqrt"})
_SAVING_FUNCS = frozenset(
    {
        "torch.sigmoid", "torch.tanh", "torch.exp", "torch.relu", "torch.softmax", "torch.sqrt",
        "torch.nn.functional.relu", "torch.nn.functional.softmax", "torch.nn.functional.sigmoid",
        "torch.nn.functional.tanh",
    }
)
_FIXABLE = frozenset(
    {"add_", "sub_", "mul_", "div_", "clamp_", "clamp_min_", "clamp_max_", "clip_", "pow_", "neg_", "masked_fill_",
     "addcmul_", "lerp_", "exp_", "log_", "abs_", "relu_", "sigmoid_", "tanh_"}
)
# Augmented assignments that get the out-of-place fix.
_FIXABLE_AUG = frozenset({cst.AddAssign, cst.SubtractAssign, cst.MultiplyAssign, cst.DivideAssign, cst.PowerAssign})


def _saving_op(expr: Optional[cst.BaseExpression], qualname) -> Optional[str]:
    if not isinstance(expr, cst.Call):
        return None
    if any(a.keyword is not None and a.keyword.value == "inplace" for a in expr.args):
        return None
    qual = qualname(expr.func) or ""
    if qual in _SAVING_FUNCS:
        return qual.replace("torch.nn.functional.", "F.")
    func = expr.func
    if isinstance(func, cst.Attribute) and func.attr.value in _SAVING_METHODS and not qual.startswith("torch."):
        return f".{func.attr.value}()"
    return None


class InplaceOnSavedOutput(Rule):
    code = "FL403"
    name = "inplace-on-saved-output"
    message = "in-place write to a tensor autograd saved for backward: torch.compile fails at the first forward"
    effects = (Effect.RUNTIME_ERROR,)
    severity = Severity.ERROR
    fix_applicability = Applicability.UNSAFE
    triggers = ("sigmoid", "tanh", "exp", "relu", "softmax", "sqrt")
    measured_on = ("torch 2.13.0 CPU", "torch 2.11.0 H200")
    docs = """
## What it does
Flags an in-place write (`y.mul_(2)`, `y += 1`, `y[:, 0] = 0`, ...) to a local name that holds the
output of `sigmoid`, `tanh`, `exp`, `relu`, `softmax` or `sqrt` (method, `torch.*` or `F.*` form),
in code that `torch.compile` traces, unless the code is under `torch.no_grad()`/`inference_mode()`.

## Why is this bad?
The backward of these ops reads their output, so autograd saves it; writing to it in place
invalidates the saved value. Measured with torch 2.13.0 on CPU, gradients enabled
(`fixtures/FL403_inplace_on_saved_output`, `gate = self.a(x).sigmoid(); gate.mul_(2.0)`): eager
runs the forward and fails only in backward ("one of the variables needed for gradient computation
has been modified by an inplace operation"); the compiled model fails **at the first forward**
(`BackendCompilerFailed` wrapping the same RuntimeError), so even an evaluation loop that forgot
`torch.no_grad()` crashes once compiled. The same for `tanh`, `exp`, `relu`, `F.relu`, `softmax`,
`sqrt`, for `y *= 2` and for `y[:, 0] = 0.0`. torch 2.11 on an H200 fails the same way (sigmoid
probe). Under `torch.no_grad()` both modes run.

Checked and not flagged: `F.gelu` and `F.silu` outputs (their backward reads the input; the
in-place write measured harmless) and in-place writes under `torch.no_grad()`.

## Example
```python
gate = self.a(x).sigmoid()
gate.mul_(2.0)
```

## Use instead
```python
gate = self.a(x).sigmoid() * 2.0
```

## Fix safety
Unsafe: the fix rewrites `y.op_(args)` to `y = y.op(args)` and `y op= v` to `y = y op v`, which
allocates a new tensor (more memory in inference code that used the in-place form on purpose) and
stops writing into any other alias of `y`.
"""
    VALID = [
        # out-of-place
        "import torch\nfrom torch import nn\nclass M(nn.Module):\n    def forward(self, h):\n"
        "        y = h.sigmoid() * 2\n        return y\n",
        # the backward of gelu reads its input: harmless
        "import torch\nimport torch.nn.functional as F\nfrom torch import nn\nclass M(nn.Module):\n    def forward(self, h):\n"
        "        y = F.gelu(h)\n        y.mul_(2)\n        return y\n",
        # under no_grad nothing is saved
        "import torch\nfrom torch import nn\nclass M(nn.Module):\n    def forward(self, h):\n"
        "        with torch.no_grad():\n            y = h.sigmoid()\n            y.mul_(2)\n        return y\n",
        # a decorated inference helper
        "import torch\nfrom torch import nn\nclass M(nn.Module):\n    @torch.no_grad()\n    def forward(self, h):\n"
        "        y = torch.tanh(h)\n        y.add_(1)\n        return y\n",
        # the name is rebound to a fresh tensor before the write (flow-insensitive: not flagged)
        "import torch\nfrom torch import nn\nclass M(nn.Module):\n    def forward(self, h):\n"
        "        y = h.exp()\n        y = y / y.sum()\n        y.mul_(2)\n        return y\n",
        # outside compiled code
        "import torch\ndef post(h):\n    y = h.sigmoid()\n    y.mul_(2)\n    return y\n",
    ]
    INVALID = [
        Invalid(
            "import torch\nfrom torch import nn\nclass M(nn.Module):\n    def forward(self, h):\n"
            "        gate = h.sigmoid()\n        gate.mul_(2.0)\n        return h * gate\n",
            expected_fix="import torch\nfrom torch import nn\nclass M(nn.Module):\n    def forward(self, h):\n"
            "        gate = h.sigmoid()\n        gate = gate.mul(2.0)\n        return h * gate\n",
            line=6,
        ),
        Invalid(
            "import torch\nimport torch.nn.functional as F\nfrom torch import nn\nclass M(nn.Module):\n    def forward(self, h):\n"
            "        y = F.relu(h)\n        y += 1\n        return y\n",
            expected_fix="import torch\nimport torch.nn.functional as F\nfrom torch import nn\nclass M(nn.Module):\n    def forward(self, h):\n"
            "        y = F.relu(h)\n        y = y + 1\n        return y\n",
            line=7,
        ),
        Invalid(
            "import torch\nfrom torch import nn\nclass M(nn.Module):\n    def forward(self, h):\n"
            "        p = torch.softmax(h, -1)\n        p[:, 0] = 0.0\n        return p\n",
            line=6,
        ),
        Invalid(
            "import torch\nfrom torch import nn\nclass M(nn.Module):\n    def forward(self, h):\n"
            "        y = h.tanh()\n        torch.clamp_(y, -0.5, 0.5)\n        return y\n",
            line=6,
        ),
    ]

    def __init__(self) -> None:
        super().__init__()
        self._names: dict[int, dict[str, str]] = {}

    # -- helpers ---------------------------------------------------------------------------------
    def _saved(self, expr: cst.BaseExpression, ctx) -> Optional[str]:
        if not isinstance(expr, cst.Name) or ctx.function is None:
            return None
        key = id(ctx.function.node)
        if key not in self._names:
            self._names[key] = names_always_bound_to(ctx.function.node, lambda v: _saving_op(v, ctx.qualname))
        return self._names[key].get(expr.value)

    @staticmethod
    def _msg(name: str, op: str, how: str) -> str:
        return (
            f"`{name}` holds the output of `{op}`, which autograd saves for backward; writing it in place ({how}) "
            "makes the compiled model fail at the first forward when gradients are enabled (eager fails in backward)"
        )

    # -- handlers --------------------------------------------------------------------------------
    def visit_Call(self, node: cst.Call, ctx) -> None:
        written = inplace_call_target(node, ctx)
        if written is None:
            return
        target, method, is_method = written
        op = self._saved(target, ctx)
        if op is None or under_no_grad(ctx):
            return
        if not is_method:  # torch.clamp_(y, ...)
            ctx.report(node, self._msg(ctx.code(target), op, f"`{method}`"))
            return
        fix = None
        parent = ctx.parent
        if method in _FIXABLE and isinstance(parent, cst.Expr) and parent.value is node:
            fix = ctx.fix(
                Applicability.UNSAFE,
                ctx.replace(node, out_of_place_call(node, ctx.code(target), method, ctx)),
                title=f"Use the out-of-place `.{method[:-1]}()`",
            )
        ctx.report(node, self._msg(ctx.code(target), op, f"`.{method}()`"), fix=fix)

    def visit_AugAssign(self, node: cst.AugAssign, ctx) -> None:
        op = self._saved(node.target, ctx)
        if op is None or under_no_grad(ctx):
            return
        name = ctx.code(node.target)
        symbol = AUG_OPS.get(type(node.operator)) if type(node.operator) in _FIXABLE_AUG else None
        fix = None
        if symbol is not None:
            fix = ctx.fix(
                Applicability.UNSAFE, ctx.replace(node, f"{name} = {name} {symbol} {ctx.code(node.value)}"),
                title="Use an out-of-place operation",
            )
        ctx.report(node, self._msg(name, op, f"`{ctx.code(node.operator).strip()}`"), fix=fix)

    def visit_Assign(self, node: cst.Assign, ctx) -> None:
        for target in node.targets:
            t = target.target
            if isinstance(t, cst.Subscript):
                op = self._saved(t.value, ctx)
                if op is not None and not under_no_grad(ctx):
                    ctx.report(node, self._msg(ctx.code(t.value), op, "item assignment"))
                    return
