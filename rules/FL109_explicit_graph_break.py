"""FL109 explicit-graph-break: compiled code calls `torch._dynamo.graph_break()` (or skip_frame/step_unsupported)."""

from __future__ import annotations

import libcst as cst

from fusionlint.rule import Effect, Invalid, Rule

# qualified name -> (what happens, graph-break id measured on torch 2.13 CPU)
_CALLS = {
    "torch._dynamo.graph_break": ("the graph ends here and tracing resumes in a new graph", "GB0025"),
    "torch._dynamo.decorators.graph_break": ("the graph ends here and tracing resumes in a new graph", "GB0025"),
    "torch._dynamo.skip_frame": ("Dynamo skips the whole function: all of it runs eagerly", "GB4297"),
    "torch._dynamo.decorators.skip_frame": ("Dynamo skips the whole function: all of it runs eagerly", "GB4297"),
    "torch._dynamo.step_unsupported": ("Dynamo skips the whole function: all of it runs eagerly", "GB0275"),
    "torch._dynamo.decorators.step_unsupported": ("Dynamo skips the whole function: all of it runs eagerly", "GB0275"),
    "torch._dynamo.comptime.comptime.graph_break": ("the graph ends here and tracing resumes in a new graph", "GB0030"),
}


class ExplicitGraphBreak(Rule):
    code = "FL109"
    name = "explicit-graph-break"
    message = "explicit `torch._dynamo.graph_break()` in compiled code: graph break"
    effects = (Effect.GRAPH_BREAK,)
    triggers = ("graph_break", "skip_frame", "step_unsupported")
    gb_ids = ("GB0025", "GB4297", "GB0275", "GB4636", "GB0030")
    measured_on = ("torch 2.13.0 CPU",)
    docs = """
## What it does
Flags calls of `torch._dynamo.graph_break()`, `torch._dynamo.skip_frame()`,
`torch._dynamo.step_unsupported()` and `comptime.graph_break()` (`from torch._dynamo.comptime
import comptime`; however imported) in code that `torch.compile` traces.

## Why is this bad?
They exist to break the graph on purpose, and are often left behind after debugging. Measured with
torch 2.13.0 on CPU (backend "eager", `x.relu()` before the call and `+ 1` after it):
- `torch._dynamo.graph_break()`: 1 break site, GB0025 "Call to `torch._dynamo.graph_break()`"; the
  fixture (`fixtures/FL109_explicit_graph_break`, Linear → relu → graph_break → Linear → sigmoid)
  has 1 break site and 2 compiled regions per forward, 1 region without the call;
- `torch._dynamo.skip_frame()`: GB4297 "Call to `torch._dynamo.skip_frame()`", and Dynamo skips the
  whole function ("Skipping the function and falling back to eager"): nothing of it is compiled;
- `torch._dynamo.step_unsupported()`: also skips the function (reported as GB0275
  "step_unsupported() with empty checkpoint"; the registry's id for the call is GB4636);
- `comptime.graph_break()`: 1 break site, GB0030 "ComptimeContext graph break" (`comptime.print(...)`
  does not break).

torch 2.13 has no `torch.compiler.graph_break`; only the `torch._dynamo` names exist.

## Example
```python
def forward(self, x):
    h = self.a(x).relu()
    torch._dynamo.graph_break()
    return self.b(h)
```

## Use instead
```python
def forward(self, x):
    h = self.a(x).relu()
    return self.b(h)
```
If the break is wanted (to isolate a region while debugging), silence the finding where it is
intended (`# noqa: FL109`).

## Fix safety
No automatic fix: the call may be deliberate.

## PyTorch reference
GB0025 https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0025.html ·
GB4297 https://meta-pytorch.github.io/compile-graph-break-site/gb/gb4297.html ·
GB4636 https://meta-pytorch.github.io/compile-graph-break-site/gb/gb4636.html
"""
    VALID = [
        # outside compiled code (a training loop) the call is harmless
        "import torch\n\ndef train_step(model, x):\n    torch._dynamo.graph_break()\n    return model(x)\n",
        # a user function that merely shares the name
        "import torch\nfrom torch import nn\n\ndef graph_break():\n    return None\n\n"
        "class M(nn.Module):\n    def forward(self, x):\n        graph_break()\n        return x * 2\n",
        # a method of another object named graph_break
        "import torch\nfrom torch import nn\n\nclass M(nn.Module):\n    def forward(self, x):\n"
        "        self.tracer.graph_break()\n        return x * 2\n",
    ]
    INVALID = [
        Invalid(
            "import torch\nfrom torch import nn\n\nclass M(nn.Module):\n    def forward(self, x):\n"
            "        h = x.relu()\n        torch._dynamo.graph_break()\n        return h + 1\n",
            line=7,
        ),
        Invalid(
            "import torch\nfrom torch._dynamo import graph_break as gb\n\n@torch.compile\ndef f(x):\n"
            "    gb()\n    return x.sin()\n",
            line=6,
        ),
        Invalid(
            "import torch\nimport torch._dynamo as dynamo\nfrom torch import nn\n\nclass M(nn.Module):\n"
            "    def helper(self, h):\n        dynamo.skip_frame()\n        return h\n\n"
            "    def forward(self, x):\n        return self.helper(x)\n",
            line=7,
        ),
        Invalid(
            "import torch\nfrom torch import nn\n\nclass M(nn.Module):\n    def forward(self, x):\n"
            "        torch._dynamo.step_unsupported()\n        return x\n",
            line=6,
        ),
        Invalid(
            "import torch\nfrom torch._dynamo.comptime import comptime\n\n@torch.compile\ndef f(x):\n"
            "    comptime.graph_break()\n    return x.sin()\n",
            line=6,
        ),
    ]

    def visit_Call(self, node: cst.Call, ctx) -> None:
        qual = ctx.qualname(node.func)
        if qual not in _CALLS:
            return
        what, gb = _CALLS[qual]
        short = qual.replace(".decorators.", ".")
        ctx.report(node, f"`{short}()` in compiled code: {what} ({gb})")
