"""FL402 data-mutation: a parameter written in place through `.data` inside compiled code."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from fusionlint.analysis.inplace import is_inplace_write, is_parameter, no_grad_wrap, param_loops, under_no_grad
from fusionlint.rule import Applicability, Effect, Invalid, Rule


class DataMutation(Rule):
    code = "FL402"
    name = "data-mutation"
    message = "parameter mutated through `.data` in compiled code: an extra eager copy per forward when training"
    effects = (Effect.EXTRA_KERNEL,)
    fix_applicability = Applicability.UNSAFE
    triggers = (".data",)
    measured_on = ("torch 2.13.0 CPU", "torch 2.11.0 H200")
    docs = """
## What it does
Flags in-place writes to a **parameter** through `.data` in code that `torch.compile` traces:
`self.w.data.clamp_(...)`, `self.lin.weight.data.mul_(...)`, `self.w.data[0] = ...`, and the same on
the loop variable of `for p in self.parameters()`.

## Why is this bad?
`.data` hides the mutation from autograd. When the forward runs with gradients enabled (training),
AOTAutograd cannot keep such a mutation of a graph input inside the compiled graph, so every
compiled forward ends with an extra eager copy back into the parameter. Measured with torch 2.13.0
on CPU (`fixtures/FL402_data_mutation`, `self.a.weight.data.clamp_(-0.1, 0.1)` before a Linear,
grad enabled): 4 launches per compiled forward (2 `cpp_fused` + `addmm` + an eager `aten::copy_`)
instead of 3 for the `torch.no_grad()` version, where inductor fuses the write into the clamp kernel.
On an H200 with torch 2.11: 4 kernels + 1 device-to-device memcpy vs 4 kernels + 0 memcpy (the copy
is a memcpy there, which the truth table's first smoke run did not count; in the fixed version the
copy is fused into the clamp kernel, `triton_poi_fused_clamp_copy_`). The confirm pass counts device
kernels without memcpys, so on CUDA it reports this rule `not-reproduced` (docs/gpu-evidence.md). `weight.data[0] = 0.0`
behaves the same (+1 `aten::copy_`). Results and gradients equal eager in both versions.

Checked and not flagged, because they measured no extra copy: `.data` writes to buffers and to
inputs that do not require grad, `.data` writes inside a `with torch.no_grad():` block (3 launches,
like the fixed form) or with the whole forward under `torch.no_grad()`/inference, and reading `.data`
(`h.data * 2`). The augmented assignment `p.data *= k` is worse, see FL405.

## Example
```python
def forward(self, x):
    self.a.weight.data.clamp_(-0.1, 0.1)
    return self.a(x)
```

## Use instead
```python
def forward(self, x):
    with torch.no_grad():
        self.a.weight.data.clamp_(-0.1, 0.1)
    return self.a(x)
```
Keeping `.data` inside the block matters when the module runs two forwards before one backward
(a siamese network, a layer used twice): `with torch.no_grad(): self.a.weight.clamp_(...)` (without
`.data`) bumps the weight's version counter, and eager backward then raises "one of the variables
needed for gradient computation has been modified by an inplace operation" (measured, torch 2.13
CPU). Better still, clip in the training loop after `optimizer.step()`, outside the compiled model.

## Fix safety
Unsafe (it changes code that runs in training). The fix wraps the statement, unchanged, in
`with torch.no_grad():`; the write still goes through `.data`, so the parameter's version counter
is untouched, as before. Measured with torch 2.13 CPU on a module that runs two forwards and then
one backward, inputs requiring grad: the original, and the fixed code in eager, `aot_eager` and
inductor, all run and give the same gradients and weights. What changes: the arguments of the
write are evaluated with autograd off (they only feed a `.data` write, which autograd never sees).
Not offered when the write shares its line with other statements.
"""
    VALID = [
        # no_grad + in-place
        "import torch\nfrom torch import nn\nclass M(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.a = nn.Linear(8, 8)\n    def forward(self, x):\n        with torch.no_grad():\n"
        "            self.a.weight.clamp_(-0.1, 0.1)\n        return self.a(x)\n",
        # the fixed form: the `.data` write inside a no_grad block (measured: no extra copy)
        "import torch\nfrom torch import nn\nclass M(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.a = nn.Linear(8, 8)\n    def forward(self, x):\n        with torch.no_grad():\n"
        "            self.a.weight.data.clamp_(-0.1, 0.1)\n        return self.a(x)\n",
        # reading .data
        "import torch\nfrom torch import nn\nclass M(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.w = nn.Parameter(torch.ones(8))\n    def forward(self, x):\n        return x * self.w.data\n",
        # a buffer: measured no extra copy
        "import torch\nfrom torch import nn\nclass M(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.register_buffer('avg', torch.zeros(8))\n    def forward(self, x):\n"
        "        self.avg.data.mul_(0.9)\n        return x - self.avg\n",
        # outside compiled code: the training loop
        "import torch\ndef clip(model):\n    for p in model.parameters():\n        p.data.clamp_(-0.01, 0.01)\n",
    ]
    INVALID = [
        Invalid(
            "import torch\nfrom torch import nn\nclass M(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.a = nn.Linear(8, 8)\n    def forward(self, x):\n        self.a.weight.data.clamp_(-0.1, 0.1)\n"
            "        return self.a(x)\n",
            expected_fix="import torch\nfrom torch import nn\nclass M(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.a = nn.Linear(8, 8)\n    def forward(self, x):\n        with torch.no_grad():\n"
            "            self.a.weight.data.clamp_(-0.1, 0.1)\n        return self.a(x)\n",
            line=8,
        ),
        Invalid(
            "import torch\nfrom torch import nn\nclass M(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.w = nn.Parameter(torch.ones(8))\n    def forward(self, x):\n"
            "        for p in self.parameters():\n            p.data.clamp_(-1, 1)  # clip\n        return x * self.w\n",
            expected_fix="import torch\nfrom torch import nn\nclass M(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.w = nn.Parameter(torch.ones(8))\n    def forward(self, x):\n"
            "        for p in self.parameters():\n            with torch.no_grad():\n                p.data.clamp_(-1, 1)  # clip\n"
            "        return x * self.w\n",
            line=9,
        ),
        Invalid(
            "import torch\nfrom torch import nn\nclass M(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.w = nn.Parameter(torch.ones(8))\n    def forward(self, x):\n        self.w.data[0] = 0.0\n"
            "        return x * self.w\n",
            expected_fix="import torch\nfrom torch import nn\nclass M(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.w = nn.Parameter(torch.ones(8))\n    def forward(self, x):\n        with torch.no_grad():\n"
            "            self.w.data[0] = 0.0\n        return x * self.w\n",
            line=8,
        ),
        Invalid(
            "from torch import nn\nclass M(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.a = nn.Linear(8, 8)\n    def forward(self, x):\n"
            "        self.a.bias.data.zero_(); return self.a(x)\n",
            line=7,
        ),
    ]

    @staticmethod
    def _param_data(expr: cst.BaseExpression, ctx) -> Optional[cst.BaseExpression]:
        """The parameter expression when ``expr`` is ``<param>.data``."""
        if isinstance(expr, cst.Attribute) and expr.attr.value == "data":
            if is_parameter(expr.value, ctx, param_loops(ctx)):
                return expr.value
        return None

    def visit_Call(self, node: cst.Call, ctx) -> None:
        func = node.func
        if not (isinstance(func, cst.Attribute) and is_inplace_write(func.attr.value)):
            return
        param = self._param_data(func.value, ctx)
        if param is None or under_no_grad(ctx):
            return
        pcode = ctx.code(param)
        # keep `.data`: the version counter stays untouched (a no_grad write to the parameter itself
        # makes eager backward raise after two forwards, measured)
        wrapped = no_grad_wrap(ctx, node, ctx.code(node).strip())
        fix = ctx.fix(Applicability.UNSAFE, ctx.replace(node, wrapped), title="Write under `torch.no_grad()`") if wrapped else None
        ctx.report(node, self._msg(pcode, f".{func.attr.value}()"), fix=fix)

    def visit_Assign(self, node: cst.Assign, ctx) -> None:
        if len(node.targets) != 1:
            return
        target = node.targets[0].target
        if not isinstance(target, cst.Subscript):
            return
        param = self._param_data(target.value, ctx)
        if param is None or under_no_grad(ctx):
            return
        pcode = ctx.code(param)
        wrapped = no_grad_wrap(ctx, node, ctx.code(node).strip())
        fix = ctx.fix(Applicability.UNSAFE, ctx.replace(node, wrapped), title="Write under `torch.no_grad()`") if wrapped else None
        ctx.report(node, self._msg(pcode, "[...] ="), fix=fix)

    @staticmethod
    def _msg(param: str, op: str) -> str:
        return (
            f"`{param}.data{op}` mutates a parameter behind autograd's back: with gradients enabled the compiled "
            "forward adds an eager copy into it on every call; do the `.data` write inside `with torch.no_grad():`"
        )
