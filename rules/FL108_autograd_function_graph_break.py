"""FL108 autograd-function-graph-break: a breaking construct inside a custom autograd.Function's forward/backward.

Ownership: every construct that FL101 (tensor-to-python), FL102 (data-dependent control flow),
FL103 (data-dependent output shape) or FL104 (side effects) would report is reported here instead
when it sits inside a custom ``torch.autograd.Function``'s ``forward``/``backward`` (or a helper first
reached from one); those rules skip such bodies (``ctx.autograd_function``), so one construct gives one finding.
"""

from __future__ import annotations

import libcst as cst

from fusionlint.analysis.control_flow import ControlFlowChecker
from fusionlint.analysis.dynamic_shapes import ShapeChecker
from fusionlint.analysis.judge import TO_PYTHON_BREAKS, Found, TensorJudge
from fusionlint.analysis.side_effects import SideEffectChecker
from fusionlint.rule import Applicability, Effect, Invalid, Rule

_CONVERSION_METHODS = TO_PYTHON_BREAKS
_CONVERSION_BUILTINS = ("float", "int", "bool", "complex")


def _conversions(node: cst.Call, ctx, judge: TensorJudge) -> list[Found]:
    """FL101's constructs: ``.item()``, ``.tolist()``, ``float(t)``/``int(t)``/``bool(t)``/``complex(t)``."""
    func = node.func
    if isinstance(func, cst.Attribute) and func.attr.value in _CONVERSION_METHODS and not node.args:
        receiver = func.value
        if (ctx.qualname(receiver) or "").startswith(("numpy", "np.", "math.")):
            return []
        if judge.receiver(receiver, func.attr.value, ctx):
            gb = _CONVERSION_METHODS[func.attr.value]
            return [(node, f"`.{func.attr.value}()` turns a tensor into Python data: graph break ({gb}) and a host sync", None)]
        return []
    if (
        isinstance(func, cst.Name)
        and func.value in _CONVERSION_BUILTINS
        and len(node.args) == 1
        and node.args[0].keyword is None
        and not node.args[0].star
        and ctx.qualname(func) == func.value
        and judge.strong(node.args[0].value, ctx)
    ):
        return [(node, f"`{func.value}()` of a tensor reads its value on the host: graph break (GB0124) and a host sync", None)]
    return []


class AutogradFunctionGraphBreak(Rule):
    code = "FL108"
    name = "autograd-function-graph-break"
    message = "a custom autograd.Function contains a construct that breaks the graph"
    effects = (Effect.GRAPH_BREAK,)
    fix_applicability = Applicability.UNSAFE
    triggers = ("Function",)
    gb_ids = ("GB0109", "GB0124", "GB0059", "GB0036", "GB0170")
    measured_on = ("torch 2.13.0 CPU", "torch 2.11.0 H200")
    docs = """
## What it does
Flags constructs that break the graph inside the `forward` or `backward` of a custom
`torch.autograd.Function` (and in helpers first reached from them): `.item()`, `.tolist()`,
`float(t)`/`int(t)`/`bool(t)`, branching on tensor values, data-dependent output shapes
(`nonzero`, boolean masks, `unique`, ...) and untraceable side effects (`print`, logging, timers,
`warnings.warn`, ...). The finding sits on the construct and names the Function. A Function
without such constructs is not flagged: plain Functions are traced.

This rule owns those constructs inside Function bodies; FL101–FL104 skip them there, so each
construct is reported once.

## Why is this bad?
Dynamo traces a custom Function's `forward` (and speculates its `backward`) into the caller's
graph. A break inside splits the caller's graph around the `.apply` call. Measured with torch
2.13.0+cpu (1 thread), a Function called between a Linear and a ReLU, one forward (+ backward
where grad is on) after warm-up:

| inside the Function | grad on | grad off (`no_grad`) |
|---|---|---|
| nothing breaking (truth cases c1, c2), `.cpu().numpy()` + `np.tanh` (c3) | 1 region, no break | 1 region |
| `.tolist()` in `forward` (c4) | GB0109, 4 regions | GB0109, 4 regions |
| `.item()` in `forward` | GB0124, 4 regions, 1 `_local_scalar_dense` | same |
| `print(...)` in `forward` | GB0059, 4 regions | same |
| `torch.nonzero(x > 0)` in `forward` | GB0036, 4 regions, 1 `nonzero` | same |
| `if x.sum() > 0:` in `forward` | GB0170, 4 regions, 1 `_local_scalar_dense` | same |
| `.item()` / `print` in `backward` | GB0124 / GB0059, 3 regions | **no break** (backward not traced) |

So a construct in `backward` costs only when the forward runs with grad enabled (training). The
fixture (`.item()` in `forward`, grad off) shows 1 break site (GB0124) inside the Function, 4
compiled regions, 1 `aten::_local_scalar_dense` and 4 launches per forward; the tensor-only
version 1 region, 2 launches, no sync.
On an H200 (torch 2.11) c4 also showed 1 sync-debug warning and 1 device-to-host copy. Host syncs
apply to value reads, branches and dynamic shapes, not to print/logging; this rule therefore
claims only the graph break.

## Example
```python
class ScaleByMax(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        peak = x.abs().max().item()
        ctx.peak = peak
        return x / peak

    @staticmethod
    def backward(ctx, grad):
        return grad / ctx.peak
```

## Use instead
```python
class ScaleByMax(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        peak = x.abs().max()
        ctx.save_for_backward(peak)
        return x / peak

    @staticmethod
    def backward(ctx, grad):
        (peak,) = ctx.saved_tensors
        return grad / peak
```
Keep values as tensors (save them with `ctx.save_for_backward`), select with `torch.where`,
and keep debugging output out of the Function.

## Fix safety
The fixes of FL102 (`torch.where` for simple tensor `if`/`else` assignments and ternaries) and
FL104 (`if not torch.compiler.is_compiling():` around a side-effect statement) are offered here
too, with the same caveats; both are unsafe.

## PyTorch reference
GB0109 https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0109.html ·
GB0124 https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0124.html ·
GB0059 https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0059.html ·
GB0036 https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0036.html ·
GB0170 https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0170.html
"""
    VALID = [
        # a plain, traceable Function (truth cases c1/c2)
        "import torch\nclass Tanh(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, x):\n"
        "        y = x.tanh()\n        ctx.save_for_backward(y)\n        return y\n"
        "    @staticmethod\n    def backward(ctx, g):\n        (y,) = ctx.saved_tensors\n"
        "        return g * (1 - y * y)\n",
        # numpy round-trip inside forward: traced on 2.13 (truth case c3), Python scalar args, shape checks
        "import numpy as np\nimport torch\nfrom torch.autograd import Function\n"
        "class NpTanh(Function):\n    @staticmethod\n    def forward(ctx, x, alpha, scale=1.0):\n"
        "        if x.dim() == 2 and alpha > 0:\n            x = x * float(alpha)\n"
        "        return torch.from_numpy(np.tanh(x.detach().cpu().numpy())) * scale\n"
        "    @staticmethod\n    def backward(ctx, g):\n        return g, None, None\n",
        # the same constructs outside any Function are not this rule's (FL101/FL104 report them)
        "import torch\nfrom torch import nn\nclass M(nn.Module):\n    def forward(self, x):\n"
        "        print(x.sum().item())\n        return x\n",
        # guarded debug output
        "import torch\nclass Fn(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, x):\n"
        "        if not torch.compiler.is_compiling():\n            print('fwd', x.shape)\n        return x * 2\n"
        "    @staticmethod\n    def backward(ctx, g):\n        return g * 2\n",
    ]
    INVALID = [
        Invalid(
            "import torch\nclass ScaleByMax(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, x):\n"
            "        peak = x.abs().max().item()\n        ctx.peak = peak\n        return x / peak\n"
            "    @staticmethod\n    def backward(ctx, grad):\n        return grad / ctx.peak\n",
            line=5,
            count=1,
        ),
        # c4: .tolist() in forward; `.item()` in backward
        Invalid(
            "import torch\nclass Fn(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, x):\n"
            "        vals = x.tolist()\n        return x * len(vals)\n"
            "    @staticmethod\n    def backward(ctx, g):\n        s = g.sum().item()\n        return g * s\n",
            line=5,
            count=2,
        ),
        # a print in forward: the FL104 guard fix is offered
        Invalid(
            "import torch\nclass Fn(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, x):\n"
            "        print('fwd', x.shape)\n        return x * 2\n"
            "    @staticmethod\n    def backward(ctx, g):\n        return g * 2\n",
            expected_fix="import torch\nclass Fn(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, x):\n"
            "        if not torch.compiler.is_compiling():\n            print('fwd', x.shape)\n        return x * 2\n"
            "    @staticmethod\n    def backward(ctx, g):\n        return g * 2\n",
            line=5,
        ),
        # branch + boolean mask + nonzero, in a helper called from forward
        Invalid(
            "import torch\nfrom torch.autograd import Function\n"
            "def _clip(x: torch.Tensor):\n    if x.sum() > 0:\n        x = x * 2\n    return x[x > 0]\n"
            "class Fn(Function):\n    @staticmethod\n    def forward(ctx, x):\n"
            "        idx = torch.nonzero(x)\n        return _clip(x), idx\n"
            "    @staticmethod\n    def backward(ctx, g, gi):\n        return g\n",
            line=4,
            count=3,
        ),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.flow = ControlFlowChecker()
        self.shape = ShapeChecker()
        self.side = SideEffectChecker()
        self.judge = self.flow.judge

    def _report(self, found: list[Found], ctx) -> None:
        owner = ctx.autograd_function
        if owner is None:
            return
        where = f"inside autograd.Function `{owner}`"
        if len(ctx.frames) > 1:
            where += f" (via `{' → '.join(ctx.frames[1:])}`)"
        if owner.endswith(".backward"):
            where += ", traced when the forward runs with grad enabled"
        for at, message, fix in found:
            ctx.report(at, f"{where}: {message}", fix=fix)

    def visit_Call(self, node: cst.Call, ctx) -> None:
        if ctx.autograd_function is None:
            return
        found = _conversions(node, ctx, self.judge) + self.flow.check_Call(node, ctx)
        found += self.shape.check_Call(node, ctx) + self.side.check_Call(node, ctx)
        self._report(found, ctx)

    def visit_Subscript(self, node: cst.Subscript, ctx) -> None:
        if ctx.autograd_function is not None:
            self._report(self.shape.check_Subscript(node, ctx), ctx)

    def visit_If(self, node: cst.If, ctx) -> None:
        if ctx.autograd_function is not None:
            self._report(self.flow.check_If(node, ctx), ctx)

    def visit_While(self, node: cst.While, ctx) -> None:
        if ctx.autograd_function is not None:
            self._report(self.flow.check_While(node, ctx), ctx)

    def visit_IfExp(self, node: cst.IfExp, ctx) -> None:
        if ctx.autograd_function is not None:
            self._report(self.flow.check_IfExp(node, ctx), ctx)

    def visit_CompIf(self, node: cst.CompIf, ctx) -> None:
        if ctx.autograd_function is not None:
            self._report(self.flow.check_CompIf(node, ctx), ctx)

    def visit_Assert(self, node: cst.Assert, ctx) -> None:
        if ctx.autograd_function is not None:
            self._report(self.flow.check_Assert(node, ctx), ctx)

    def visit_BooleanOperation(self, node: cst.BooleanOperation, ctx) -> None:
        if ctx.autograd_function is not None:
            self._report(self.flow.check_BooleanOperation(node, ctx), ctx)

    def visit_UnaryOperation(self, node: cst.UnaryOperation, ctx) -> None:
        if ctx.autograd_function is not None:
            self._report(self.flow.check_UnaryOperation(node, ctx), ctx)
