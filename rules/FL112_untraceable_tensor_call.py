"""FL112 untraceable-tensor-call: tensor methods and torch calls that Dynamo refuses to trace."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from fusionlint.rule import Effect, Invalid, Rule

# Tensor method -> (graph-break id measured on torch 2.13 CPU, what Dynamo says)
_METHODS = {
    "is_inference": ("GB0045", "`Tensor.is_inference()` is not supported"),
    "requires_grad_": ("GB0125", "changing `requires_grad` is not supported"),
    "resize_": ("GB0126", "`Tensor.resize_()` is not supported"),
    "resize_as_": ("GB0127", "`Tensor.resize_as_()` is not supported"),
    "random_": ("GB0107", "`Tensor.random_()` is not supported"),
    "share_memory_": ("GB0117", "`Tensor.share_memory_()` is not supported"),
    "retain_grad": ("GB0108", "`Tensor.retain_grad()` does not work with AOTDispatcher"),
    "backward": ("GB0123", "`Tensor.backward()` is not traced"),
}
# Factory functions whose `requires_grad=True` Dynamo refuses (GB0225; measured: ones, tensor).
_FACTORIES = frozenset(
    f"torch.{n}"
    for n in (
        "tensor ones zeros empty full rand randn randint arange linspace logspace eye ones_like zeros_like "
        "empty_like full_like rand_like randn_like randint_like"
    ).split()
)
_PARAMETER = frozenset({"torch.nn.Parameter", "torch.nn.parameter.Parameter"})


def _is_true(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "True"


def _keyword(call: cst.Call, name: str) -> Optional[cst.BaseExpression]:
    return next((a.value for a in call.args if a.keyword is not None and a.keyword.value == name), None)


class UntraceableTensorCall(Rule):
    code = "FL112"
    name = "untraceable-tensor-call"
    message = "tensor call that Dynamo does not trace in compiled code: graph break"
    effects = (Effect.GRAPH_BREAK,)
    triggers = (
        "is_inference", "requires_grad", "resize_", "random_", "share_memory_", "retain_grad", "backward",
        "Parameter", "repr(", "jit.isinstance", "torch.jit import",
    )
    gb_ids = ("GB0007", "GB0045", "GB0046", "GB0125", "GB8985", "GB0126", "GB0127", "GB0107", "GB0117", "GB0108", "GB0123",
              "GB0206", "GB0225", "GB0264", "GB0569")
    measured_on = ("torch 2.13.0 CPU",)
    docs = """
## What it does
Flags, in code that `torch.compile` traces, tensor methods and torch calls that Dynamo does not
trace: `t.is_inference()`, `t.requires_grad_()` (not `requires_grad_(False)`), `t.requires_grad =
...`, `t.resize_(...)`, `t.resize_as_(...)`, `t.random_(...)`, `t.share_memory_()`,
`t.retain_grad()`, `t.backward()`, `repr(t)`, `torch.is_inference_mode_enabled()`, `torch.jit.isinstance(...)`,
`nn.Parameter(...)` and torch factory functions called with `requires_grad=True`.

## Why is this bad?
Each one ends the graph. Measured with torch 2.13.0 on CPU (backend "eager", each call after
`x.relu()` in a compiled function; one break site each, at the call):

| call | graph-break id |
|---|---|
| `t.is_inference()` | GB0045 |
| `torch.is_inference_mode_enabled()` | GB0046 |
| `torch.jit.isinstance(t, torch.Tensor)`, `torch.jit.isinstance([1], List[int])` | GB0007 "Attempted to call function marked as skipped" |
| `t.requires_grad_()` on an intermediate / on an input | GB8985 / GB0125 |
| `t.requires_grad = True` | GB0206 |
| `t.resize_(32)`, `t.resize_as_(other)` | GB0126, GB0127 |
| `t.random_(0, 10)` | GB0107 |
| `t.share_memory_()` | GB0117 |
| `t.retain_grad()` | GB0108 |
| `loss.backward()` | GB0123 |
| `repr(t)` | GB0569 |
| `nn.Parameter(torch.ones(8))` | GB0264 |
| `torch.ones(8, requires_grad=True)`, `torch.tensor([...], requires_grad=True)` | GB0225 |

`t.requires_grad_(False)`, `torch.zeros(8, requires_grad=False)`, the builtin `isinstance(t, torch.Tensor)`,
`torch.jit.is_scripting()` and `torch.jit.annotate(...)` do not break (measured). The
fixture (`fixtures/FL112_untraceable_tensor_call`, Linear → relu → `* torch.ones(32,
requires_grad=True)` → Linear → sigmoid) shows 1 break site at the factory call and 2 compiled
regions per forward; with the gate as an `nn.Parameter` made in `__init__`, no break and 1 region.

## Example
```python
def forward(self, x):
    h = self.a(x).relu()
    gate = torch.ones(h.shape[-1], requires_grad=True)
    return self.b(h * gate)
```

## Use instead
```python
def __init__(self):
    ...
    self.gate = nn.Parameter(torch.ones(32))   # create learnable tensors once, in __init__

def forward(self, x):
    h = self.a(x).relu()
    return self.b(h * self.gate)
```
Call `backward()`, `retain_grad()` and `share_memory_()` outside the compiled function. Replace
`torch.jit.isinstance(x, torch.Tensor)` with the builtin `isinstance(x, torch.Tensor)`.

## Fix safety
No automatic fix: the replacement depends on what the call was for.

## PyTorch reference
GB0225 https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0225.html ·
GB0264 https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0264.html ·
GB0123 https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0123.html
"""
    VALID = [
        # requires_grad_(False) and requires_grad=False do not break
        "import torch\nfrom torch import nn\n\nclass M(nn.Module):\n    def forward(self, x):\n"
        "        y = x.relu() * 2\n        y.requires_grad_(False)\n        return y * torch.zeros(8, requires_grad=False)\n",
        # parameters created in __init__ (not compiled)
        "import torch\nfrom torch import nn\n\nclass M(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.w = nn.Parameter(torch.ones(8))\n\n    def forward(self, x):\n        return x * self.w\n",
        # backward in the training loop
        "import torch\n\ndef train_step(model, x):\n    loss = model(x).sum()\n    loss.backward()\n    return loss\n",
        # the builtin isinstance and torch.jit.is_scripting() trace (measured)
        "import torch\nfrom torch import nn\n\nclass M(nn.Module):\n    def forward(self, x, e=None):\n"
        "        if e is not None and isinstance(e, torch.Tensor) and not torch.jit.is_scripting():\n"
        "            x = x + e\n        return x\n",
        # a method of a non-tensor object with the same name
        "import torch\nfrom torch import nn\n\nclass M(nn.Module):\n    def forward(self, x):\n"
        "        self.sched.random_(3)\n        return x\n",
    ]
    INVALID = [
        Invalid(
            "import torch\nfrom torch import nn\n\nclass M(nn.Module):\n    def forward(self, x):\n"
            "        gate = torch.ones(x.shape[-1], requires_grad=True)\n        return x * gate\n",
            line=6,
        ),
        # MONAI's basic_unet: `torch.jit.isinstance` behind an `is not None` test
        Invalid(
            "import torch\nfrom torch import nn\n\nclass M(nn.Module):\n    def forward(self, x, x_e=None):\n"
            "        if x_e is not None and torch.jit.isinstance(x_e, torch.Tensor):\n            x = x + x_e\n"
            "        return x\n",
            line=6,
        ),
        Invalid(
            "import torch\nfrom torch import nn\n\nclass M(nn.Module):\n    def forward(self, x):\n"
            "        w = nn.Parameter(torch.ones(8))\n        return x * w\n",
            line=6,
        ),
        Invalid(
            "import torch\n\n@torch.compile\ndef step(model, x):\n    loss = torch.relu(x).sum()\n    loss.backward()\n"
            "    return loss\n",
            line=6,
        ),
        Invalid(
            "import torch\nfrom torch import nn\n\nclass M(nn.Module):\n    def forward(self, x):\n"
            "        if x.is_inference():\n            return x\n        return x + 1\n",
            line=6,
        ),
        Invalid(
            "import torch\nfrom torch import nn\n\nclass M(nn.Module):\n    def forward(self, x):\n"
            "        y = x * 2\n        y.requires_grad = True\n        return y\n",
            line=7,
        ),
        Invalid(
            "import torch\nfrom torch import nn\n\nclass M(nn.Module):\n    def forward(self, x):\n"
            "        y = x.relu()\n        y.requires_grad_()\n        return repr(y)\n",
            count=2,
        ),
    ]

    def visit_Call(self, node: cst.Call, ctx) -> None:
        func = node.func
        qual = ctx.qualname(func) or ""
        if qual == "torch.jit.isinstance":
            ctx.report(
                node,
                "`torch.jit.isinstance(...)` in compiled code: Dynamo skips this TorchScript helper: graph break "
                "(GB0007); use the builtin `isinstance` under torch.compile",
            )
            return
        if qual == "torch.is_inference_mode_enabled":
            ctx.report(node, "`torch.is_inference_mode_enabled()` in compiled code: Dynamo does not trace it: graph break (GB0046)")
            return
        if qual in _PARAMETER:
            ctx.report(
                node,
                "`nn.Parameter(...)` created in compiled code: Dynamo does not trace the constructor: graph break "
                "(GB0264); create parameters in `__init__`",
            )
            return
        if qual in _FACTORIES:
            flag = _keyword(node, "requires_grad")
            if flag is not None and _is_true(flag):
                ctx.report(
                    node,
                    f"`{qual}(..., requires_grad=True)` in compiled code: Dynamo does not trace a factory with "
                    "requires_grad=True: graph break (GB0225); create the tensor in `__init__` (as an nn.Parameter)",
                )
            return
        if qual == "repr" and len(node.args) == 1 and ctx.is_tensor(node.args[0].value):
            ctx.report(node, "`repr(<tensor>)` in compiled code needs the tensor's values: graph break (GB0569)")
            return
        if not isinstance(func, cst.Attribute) or func.attr.value not in _METHODS:
            return
        method = func.attr.value
        if method == "requires_grad_" and node.args and not _is_true(node.args[0].value):
            return  # requires_grad_(False) traces (measured); a variable: cannot tell
        if not ctx.is_tensor(func.value):
            return
        gb, why = _METHODS[method]
        ctx.report(node, f"`.{method}()` on a tensor in compiled code: {why} under torch.compile: graph break ({gb})")

    def visit_Assign(self, node: cst.Assign, ctx) -> None:
        for target in node.targets:
            t = target.target
            if isinstance(t, cst.Attribute) and t.attr.value == "requires_grad" and ctx.is_tensor(t.value):
                ctx.report(
                    target.target,
                    "assigning `.requires_grad` of a tensor in compiled code is not supported: graph break (GB0206)",
                )
