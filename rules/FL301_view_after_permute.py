"""FL301 view-after-permute: `.view()` on the result of permute/transpose raises; use `.reshape()`."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from fusionlint.analysis.walk import iter_nodes
from fusionlint.rule import Applicability, Effect, Invalid, Rule, Severity

# Calls and attributes whose result usually has non-contiguous strides.
_PERMUTING_METHODS = frozenset({"permute", "transpose", "movedim", "moveaxis", "swapaxes", "swapdims", "t"})
_PERMUTING_ATTRS = frozenset({"T", "mT", "H", "mH"})
# Methods that keep the input's strides (preserve_format), so the result is still non-contiguous.
_STRIDE_PRESERVING = frozenset({"float", "half", "bfloat16", "double", "to", "type_as", "detach", "clone"})


def _permuted(expr: cst.BaseExpression) -> Optional[str]:
    """The permuting op that produced ``expr`` directly (through stride-preserving calls), if any."""
    while True:
        if isinstance(expr, cst.Attribute) and expr.attr.value in _PERMUTING_ATTRS:
            return "." + expr.attr.value
        if not (isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute)):
            return None
        method = expr.func.attr.value
        if method in _PERMUTING_METHODS:
            return f".{method}()"
        if method not in _STRIDE_PRESERVING or (method == "clone" and expr.args):
            return None
        expr = expr.func.value


class ViewAfterPermute(Rule):
    code = "FL301"
    name = "view-after-permute"
    message = "`.view()` on a permuted tensor raises at runtime; use `.reshape()`"
    effects = (Effect.RUNTIME_ERROR,)
    severity = Severity.ERROR
    fix_applicability = Applicability.SAFE
    triggers = (".view(",)
    measured_on = ("torch 2.13.0 CPU", "torch 2.11.0 H200")
    docs = """
## What it does
Flags `.view(...)` applied to the result of `permute`, `transpose`, `movedim`, `swapaxes`,
`.t()`, `.T` or `.mT` (directly, or through a local name assigned from one), in code that
`torch.compile` traces.

## Why is this bad?
Those ops return a tensor with permuted strides; `.view()` needs strides compatible with the new
shape, so it raises `RuntimeError: view size is not compatible with input tensor's size and
stride`. This is a correctness bug, not a speed problem: measured with torch 2.13.0 on CPU
and torch 2.11.0 on an H200, `x.permute(0, 2, 1).view(B, -1)` raises in eager mode, and under
`torch.compile` it fails while tracing (`TorchRuntimeError` from fake tensors). The common "fix"
of inserting `.contiguous()` works but always copies; `.reshape()` copies only when it must, and
under inductor the copy fuses with its neighbours (`permute().reshape()` compiled to 1 kernel).

## Example
```python
def forward(self, x):
    return x.permute(0, 2, 1).view(x.shape[0], -1)
```

## Use instead
```python
def forward(self, x):
    return x.permute(0, 2, 1).reshape(x.shape[0], -1)
```

## Fix safety
Safe: `.reshape()` returns a view whenever `.view()` could have and copies otherwise, and the
flagged `.view()` could not (it raised), so no working code changes behaviour. A `.view()` that
happens to be stride-compatible (e.g. only splitting an untouched dimension) would keep working
and keep aliasing its input under `.reshape()`.
"""
    VALID = [
        "import torch\nfrom torch import nn\nclass M(nn.Module):\n"
        "    def forward(self, x):\n        return x.permute(0, 2, 1).reshape(x.shape[0], -1)\n",
        # .contiguous() in between makes the view legal
        "import torch\nfrom torch import nn\nclass M(nn.Module):\n"
        "    def forward(self, x):\n        y = x.transpose(1, 2).contiguous()\n        return y.view(y.shape[0], -1)\n",
        # a view of a contiguous tensor
        "import torch\nfrom torch import nn\nclass M(nn.Module):\n"
        "    def forward(self, x):\n        return x.view(x.shape[0], -1).transpose(0, 1)\n",
        # a dtype view is not a shape view
        "import torch\nfrom torch import nn\nclass M(nn.Module):\n"
        "    def forward(self, x):\n        return x.t().view(torch.int32)\n",
        # outside compiled code
        "import torch\ndef prep(x):\n    return x.permute(0, 2, 1).view(-1)\n",
    ]
    INVALID = [
        Invalid(
            "import torch\nfrom torch import nn\nclass M(nn.Module):\n"
            "    def forward(self, x):\n        return x.permute(0, 2, 1).view(x.shape[0], -1)\n",
            expected_fix="import torch\nfrom torch import nn\nclass M(nn.Module):\n"
            "    def forward(self, x):\n        return x.permute(0, 2, 1).reshape(x.shape[0], -1)\n",
            line=5,
        ),
        Invalid(
            "import torch\nfrom torch import nn\nclass M(nn.Module):\n"
            "    def forward(self, q):\n        out = q.transpose(1, 2)\n        return out.view(q.shape[0], q.shape[2], -1)\n",
            expected_fix="import torch\nfrom torch import nn\nclass M(nn.Module):\n"
            "    def forward(self, q):\n        out = q.transpose(1, 2)\n        return out.reshape(q.shape[0], q.shape[2], -1)\n",
            line=6,
        ),
        Invalid(
            "import torch\n\n@torch.compile\ndef f(x):\n    return x.mT.float().view(-1)\n",
            expected_fix="import torch\n\n@torch.compile\ndef f(x):\n    return x.mT.float().reshape(-1)\n",
            line=5,
        ),
    ]

    def visit_Call(self, node: cst.Call, ctx) -> None:
        func = node.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "view" and node.args):
            return
        if len(node.args) == 1 and (ctx.qualname(node.args[0].value) or "").startswith("torch.") and not isinstance(
            node.args[0].value, (cst.Tuple, cst.List)
        ):
            return  # x.view(torch.int32): reinterpreting the dtype, not the shape
        op = _permuted(func.value)
        if op is None and isinstance(func.value, cst.Name):
            op = self._permuted_name(func.value.value, ctx)
        if op is None:
            return
        fix = ctx.fix(Applicability.SAFE, ctx.replace(func.attr, "reshape"), title="Use `.reshape()`")
        ctx.report(node, f"`.view()` after `{op}` raises at runtime (non-contiguous strides); use `.reshape()`", fix=fix)

    @staticmethod
    def _permuted_name(name: str, ctx) -> Optional[str]:
        """``y = x.transpose(1, 2)`` ... ``y.view(...)``: only when every assignment to ``y`` permutes."""
        fn = ctx.function
        if fn is None:
            return None
        ops = _assignments(fn.node).get(name)
        if not ops or any(op is None for op in ops):
            return None
        return ops[0]


def _assignments(fn: cst.FunctionDef) -> dict[str, list[Optional[str]]]:
    """name -> permuting op of each plain assignment to it in the function (None: not permuting)."""
    found: dict[str, list[Optional[str]]] = {}

    for node in iter_nodes(fn.body, (cst.Assign, cst.AugAssign, cst.For)):
        if isinstance(node, cst.Assign):
            for target in node.targets:
                if isinstance(target.target, cst.Name):
                    found.setdefault(target.target.value, []).append(_permuted(node.value))
                else:  # tuple targets etc.: the names are bound to something else
                    for name in _names(target.target):
                        found.setdefault(name, []).append(None)
        else:
            for name in _names(node.target):
                found.setdefault(name, []).append(None)
    for param in (*fn.params.params, *fn.params.posonly_params, *fn.params.kwonly_params):
        found.setdefault(param.name.value, []).append(None)
    return found


def _names(target: cst.BaseExpression) -> list[str]:
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for e in target.elements for n in _names(e.value)]
    if isinstance(target, cst.StarredElement):
        return _names(target.value)
    return []
