"""FL405 data-augmented-assignment: `param.data *= k` (and `+=`, `-=`, `/=`) inside compiled code."""

from __future__ import annotations

import libcst as cst

from fusionlint.analysis.inplace import is_parameter, no_grad_wrap, param_loops, under_no_grad
from fusionlint.rule import Applicability, Effect, Invalid, Rule, Severity

_METHOD = {
    cst.AddAssign: "add_", cst.SubtractAssign: "sub_", cst.MultiplyAssign: "mul_", cst.DivideAssign: "div_",
    cst.PowerAssign: "pow_", cst.FloorDivideAssign: "floor_divide_", cst.ModuloAssign: "remainder_",
}


class DataAugmentedAssignment(Rule):
    code = "FL405"
    name = "data-augmented-assignment"
    message = "`param.data op= value` in compiled code: torch.compile fails when gradients are enabled"
    effects = (Effect.RUNTIME_ERROR,)
    severity = Severity.ERROR
    fix_applicability = Applicability.UNSAFE
    triggers = (".data",)
    measured_on = ("torch 2.13.0 CPU", "torch 2.11.0 H200")
    docs = """
## What it does
Flags augmented assignments to the `.data` of a parameter in code that `torch.compile` traces:
`self.w.data *= 0.5`, `self.lin.weight.data += noise`, `p.data -= lr * p.grad` inside
`for p in self.parameters()`.

## Why is this bad?
Python executes `p.data *= k` as `p.data = p.data.__imul__(k)`: an in-place multiply followed by an
assignment to `.data`, which is a `set_` on the parameter. With gradients enabled, AOTAutograd
cannot keep both mutations of a graph input and gives up. Measured with torch 2.13.0 on CPU
(`fixtures/FL405_data_augmented_assignment`, `self.a.weight.data *= 0.5` before a Linear): eager
runs; the compiled model fails at its first call with `BackendCompilerFailed: ... AssertionError:
Encountered a set_ on a graph input, but the input has other mutations that we cannot keep in the
graph`. torch 2.11 on an H200 fails the same way. Under `torch.no_grad()` both modes run.
`with torch.no_grad(): self.a.weight.mul_(0.5)` compiles (3 launches, no extra copy), and so does
the plain rebinding `p.data = p.data.clamp(...)` (measured: runs, no extra copy).

Not flagged: the same statement inside `with torch.no_grad():` (measured: compiles, 3 launches).

## Example
```python
def forward(self, x):
    self.a.weight.data *= 0.5
    return self.a(x)
```

## Use instead
```python
def forward(self, x):
    with torch.no_grad():
        self.a.weight.data.mul_(0.5)
    return self.a(x)
```
Keep `.data` when the module may run two forwards before one backward (a siamese network, a layer
used twice): `with torch.no_grad(): self.a.weight.mul_(0.5)` bumps the weight's version counter and
eager backward then raises "one of the variables needed for gradient computation has been modified
by an inplace operation" (measured, torch 2.13 CPU); through `.data` it does not.

## Fix safety
Unsafe (it changes code that runs in training). The fix turns `p.data op= v` into the in-place
method on `.data`, `p.data.mul_(v)` (`+=` `add_`, `-=` `sub_`, `/=` `div_`, `**=` `pow_`, `//=`
`floor_divide_`, `%=` `remainder_`), inside `with torch.no_grad():`. In eager this computes the same
values: `p.data *= v` was already an in-place op on `.data` followed by re-assigning the same tensor.
The parameter's version counter stays untouched, as before. Measured with torch 2.13 CPU on a module
that runs two forwards and then one backward: the original runs eagerly (and fails compiled);
the fixed code runs in eager, `aot_eager` and inductor with the same gradients and weights as the
original in eager. What changes: the value `v` is computed with autograd off (it only feeds a
`.data` write, which autograd never sees), and the compiled model now runs.
"""
    VALID = [
        # the fixed form
        "import torch\nfrom torch import nn\nclass M(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.a = nn.Linear(8, 8)\n    def forward(self, x):\n        with torch.no_grad():\n"
        "            self.a.weight.data.mul_(0.5)\n        return self.a(x)\n",
        # the augmented assignment itself, under no_grad: measured to compile
        "import torch\nfrom torch import nn\nclass M(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.a = nn.Linear(8, 8)\n    def forward(self, x):\n        with torch.no_grad():\n"
        "            self.a.weight.data *= 0.5\n        return self.a(x)\n",
        # rebinding .data: measured to compile
        "import torch\nfrom torch import nn\nclass M(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.w = nn.Parameter(torch.ones(8))\n    def forward(self, x):\n"
        "        self.w.data = self.w.data.clamp(-1, 1)\n        return x * self.w\n",
        # augmented assignment on a local tensor's .data (not a parameter)
        "import torch\nfrom torch import nn\nclass M(nn.Module):\n    def forward(self, x):\n"
        "        y = x * 2\n        y.data *= 0.5\n        return y\n",
        # outside compiled code: an optimizer step written by hand
        "import torch\ndef sgd(model, lr):\n    for p in model.parameters():\n        p.data -= lr * p.grad\n",
    ]
    INVALID = [
        Invalid(
            "import torch\nfrom torch import nn\nclass M(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.a = nn.Linear(8, 8)\n    def forward(self, x):\n        self.a.weight.data *= 0.5\n"
            "        return self.a(x)\n",
            expected_fix="import torch\nfrom torch import nn\nclass M(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.a = nn.Linear(8, 8)\n    def forward(self, x):\n        with torch.no_grad():\n"
            "            self.a.weight.data.mul_(0.5)\n        return self.a(x)\n",
            line=8,
        ),
        Invalid(
            "import torch\nfrom torch import nn\nclass M(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.scale = nn.Parameter(torch.ones(8))\n    def forward(self, x):\n"
            "        self.scale.data += 0.01 * x.mean(0)\n        return x * self.scale\n",
            expected_fix="import torch\nfrom torch import nn\nclass M(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.scale = nn.Parameter(torch.ones(8))\n    def forward(self, x):\n        with torch.no_grad():\n"
            "            self.scale.data.add_(0.01 * x.mean(0))\n        return x * self.scale\n",
            line=8,
        ),
        Invalid(
            "import torch\nfrom torch import nn\nclass M(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.lin = nn.Linear(8, 8)\n    def forward(self, x):\n"
            "        for name, p in self.lin.named_parameters():\n            p.data /= 2\n        return self.lin(x)\n",
            line=9,
        ),
    ]

    def visit_AugAssign(self, node: cst.AugAssign, ctx) -> None:
        target = node.target
        if not (isinstance(target, cst.Attribute) and target.attr.value == "data"):
            return
        if ctx.function is None:
            return
        if not is_parameter(target.value, ctx, param_loops(ctx)) or under_no_grad(ctx):
            return
        pcode = ctx.code(target.value)
        method = _METHOD.get(type(node.operator))
        fix = None
        if method is not None:
            # keep `.data`: the version counter stays untouched (a no_grad write to the parameter itself
            # makes eager backward raise after two forwards, measured)
            wrapped = no_grad_wrap(ctx, node, f"{pcode}.data.{method}({ctx.code(node.value)})")
            if wrapped:
                fix = ctx.fix(Applicability.UNSAFE, ctx.replace(node, wrapped), title="In-place method under `torch.no_grad()`")
        op = ctx.code(node.operator).strip()
        ctx.report(
            node,
            f"`{pcode}.data {op} ...` is an in-place op plus a `.data` assignment (set_) on a parameter: "
            "with gradients enabled torch.compile fails at the first call (BackendCompilerFailed); "
            f"use `{pcode}.data.{method or '<op>_'}(...)` inside `with torch.no_grad():`",
            fix=fix,
        )
