"""FL901 constant-scalar-attribute (off by default): a never-changed Python float attribute in compiled tensor math."""

from __future__ import annotations

import libcst as cst

from fusionlint.analysis.attributes import classify_use, collect_writes, scalar_kind, self_attr
from fusionlint.rule import Effect, Invalid, Rule, Severity, module_example

_DOCS = """
## What it does
Points at a Python `float` attribute of an `nn.Module` (`self.threshold = 5.0` in `__init__`) that
compiled code uses in tensor math, and that nothing in the linted files ever changes.
Informational, off by default (`--select FL901`); it is reported once per attribute and class.

It exists to answer a common belief with a measurement: such a constant is **not** a fusion
problem. The finding claims no cost (its effect list is empty); it tells you where a future
change of the value would start to cost (see FL201).

## Why is this bad?
It is not: measured harmless while it never changes. Dynamo compiles the float into the graph as a constant
and guards on its value (`self.threshold == 5.0`); the guard passes on every call.
Ground truth `a1` (clamp with `self.threshold = 5.0` vs a registered buffer): on torch 2.13.0 CPU
0 graph breaks, 1 compiled region, the same 4 generated C++ kernels and 3 launches per forward for
both; on torch 2.11.0 H200 1 Triton kernel each and no host sync.

It becomes a problem only when the value changes between calls: for `clamp`/`pow`/`masked_fill`...
arguments every new value recompiles until `recompile_limit` (FL201), while as a `*`/`+` operand
it costs one recompile. Changing it from a file that was not linted is invisible to fusionlint.

## Example
```python
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.threshold = 5.0

    def forward(self, x):
        return x.clamp(-self.threshold, self.threshold)
```

## Use instead
Nothing needs to change. If the value is going to be annealed or tuned at run time, store it as
`self.register_buffer("threshold", torch.tensor(5.0), persistent=False)` and update it in place.

## Fix safety
No fix: there is nothing to fix.

## PyTorch reference
No graph-break id. Guards:
https://docs.pytorch.org/docs/main/user_guide/torch_compiler/compile/programming_model.recompilation.html
"""


class ConstantScalarAttribute(Rule):
    code = "FL901"
    name = "constant-scalar-attribute"
    message = "a constant Python float attribute in compiled tensor math (measured harmless while it never changes)"
    effects = ()  # informational: measured to cost nothing (truth case a1); see docs
    severity = Severity.INFO
    default_enabled = False
    triggers = ("self.",)
    measured_on = ("torch 2.13.0 CPU", "torch 2.11.0 H200")
    docs = _DOCS

    VALID = [
        # mutated: FL201's business, not this rule's
        module_example(
            "    def __init__(self):\n        super().__init__()\n        self.threshold = 5.0\n\n"
            "    def anneal(self):\n        self.threshold *= 0.9\n\n"
            "    def forward(self, x):\n        return x.clamp(-self.threshold, self.threshold)\n"
        ),
        # only used in Python control flow, not in tensor math
        module_example(
            "    def __init__(self):\n        super().__init__()\n        self.p = 0.1\n\n"
            "    def forward(self, x):\n        if self.p > 0.0:\n            return x.relu()\n        return x\n"
        ),
        # an int used as a shape argument (ints are shapes far more often than thresholds)
        module_example(
            "    def __init__(self):\n        super().__init__()\n        self.heads = 4\n\n"
            "    def forward(self, x):\n        return x.view(x.size(0), self.heads, -1)\n"
        ),
        # already a buffer
        module_example(
            "    def __init__(self):\n        super().__init__()\n"
            '        self.register_buffer("eps", torch.tensor(1e-5), persistent=False)\n\n'
            "    def forward(self, x):\n        return x / (x.norm() + self.eps)\n"
        ),
    ]
    INVALID = [
        Invalid(
            module_example(
                "    def __init__(self):\n        super().__init__()\n        self.threshold = 5.0\n\n"
                "    def forward(self, x):\n        return x.clamp(-self.threshold, self.threshold)\n"
            ),
            line=11,
            count=1,
        ),
        # one finding per attribute, at its first use
        Invalid(
            module_example(
                "    def __init__(self, eps: float = 1e-6):\n        super().__init__()\n        self.eps = eps\n\n"
                "    def forward(self, x):\n        y = x / (x.norm() + self.eps)\n        return y * (1.0 + self.eps)\n"
            ),
            line=11,
            count=1,
        ),
        Invalid(
            module_example(
                "    def __init__(self):\n        super().__init__()\n        self.slope = 0.2\n\n"
                "    def forward(self, x):\n        return torch.nn.functional.leaky_relu(x, self.slope)\n"
            ),
            line=11,
        ),
    ]

    def __init__(self) -> None:
        super().__init__()
        self._seen: set[tuple[str, str]] = set()

    def visit_Attribute(self, node: cst.Attribute, ctx) -> None:
        attr = self_attr(node)
        cls = ctx.cls
        if attr is None or cls is None or cls.kind != "module" or (cls.name, attr) in self._seen:
            return
        if scalar_kind(cls, attr) != "float":
            return
        use = classify_use(node, ctx.parents, ctx.is_tensor, ctx.qualname)
        if use is None or use.kind == "index":
            return
        writes = collect_writes(ctx, cls, attr)
        if writes.in_class or writes.same_file or writes.other_files:
            return
        self._seen.add((cls.name, attr))
        ctx.report(
            use.site,
            f"`self.{attr}` is a constant Python float in compiled tensor math (`{use.op}`): dynamo bakes it in "
            "and guards its value; measured harmless while it never changes (same kernels as a buffer, "
            "torch 2.13 CPU and 2.11 H200). If it will be changed at run time, make it a buffer (FL201)",
        )
