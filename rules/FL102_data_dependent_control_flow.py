"""FL102 data-dependent-control-flow: `if`/`while`/ternary/`and`/`or`/`not` on tensor values in compiled code.

The check itself is ``fusionlint.analysis.control_flow`` (FL108 runs it inside autograd.Function bodies).
"""

from __future__ import annotations

import libcst as cst

from fusionlint.analysis.control_flow import ControlFlowChecker
from fusionlint.rule import Applicability, Effect, Invalid, Rule


class DataDependentControlFlow(Rule):
    code = "FL102"
    name = "data-dependent-control-flow"
    message = "control flow on a tensor value inside compiled code: graph break and host sync"
    effects = (Effect.GRAPH_BREAK, Effect.HOST_SYNC)
    explains_tensors = True
    fix_applicability = Applicability.UNSAFE
    triggers = ("if ", "while ", "assert ", " and ", " or ", "not ", "equal(", "allclose(", "is_nonzero(", "any(", "all(", "_assert(")
    gb_ids = ("GB0170", "GB0033")
    measured_on = ("torch 2.13.0 CPU", "torch 2.11.0 H200")
    docs = """
## What it does
Flags Python control flow that depends on the *value* of a tensor in code that `torch.compile`
traces: `if`/`elif`/`while` tests, conditional expressions (`a if cond else b`), comprehension
`if` clauses, `and`/`or`/`not` applied to tensors, `assert` tests that take a tensor's truth
before their last operand (`assert t and u`, `assert not t`), and
`torch.equal`/`torch.allclose`/`Tensor.is_nonzero` (they return a Python bool computed from values),
Python's `any`/`all` over tensor values (`any(t.sum() > 0 for t in parts)`, `all(x > 0)`), and
`torch._assert(cond, msg)` on a tensor `cond` (GB0033; a plain `assert` compiles into a runtime check).
Tests on shapes (`x.shape[0] > 8`, `x.dim()`, `x.size(1)`, `len(x)`, `x.numel()`), `is None`
checks, `self.training`, `isinstance` and dtype/device checks are not flagged. A condition read
through `.item()`/`float()` is FL101's finding; inside a custom `autograd.Function` it is FL108's.
When an `and` chain tests a dtype or the configuration first (`h.dtype == torch.float16 and ...`,
`self.config.rope_parameters["rope_type"] != "default" and seq_len`), Dynamo decides that part while
tracing and reaches the tensor only when it holds: the message says when the break happens (measured,
torch 2.13 CPU: transformers' `PhimoeRotaryEmbedding` breaks at that line with a longrope configuration
and not with the default one; bart's float16 test breaks only in float16).

## Why is this bad?
To trace one branch Dynamo needs the tensor's value, which does not exist until the graph so far
has run. It stops the graph, runs it, copies the value to the host and resumes in a new graph.
Measured with torch 2.13.0+cpu (1 thread), one forward after warm-up, each form in a small
function called from `forward` (1 compiled region when the form is absent):

| pattern | graph-break id | compiled regions | `aten::_local_scalar_dense` |
|---|---|---|---|
| `if h.sum() > 0:` | GB0170 | 3 (1 without) | 1 |
| `h * 2 if h.mean() > 0 else h - 1` | GB0170 | 3 | 1 |
| `while (h > 100).any():` | GB0170 | 3 | 1 |
| `if h.max() > 0 and h.min() < 0:` | GB0170 | 4 | 2 |
| `m = (h > 0).any() and (h < 1).all()` | GB0170 | 3 | 1 |
| `if not (h > 0).any():` / `if torch.isnan(h).any():` | GB0170 | 3 | 1 |
| `done = not (h > 0).any()` (outside a test) | GB0033, the function falls back to eager | 1 (helper eager) | 1 |
| `[r for r in h if r.sum() > 0]` | GB0170 | 3 | 4 |
| `assert (h >= 0).all() and h is not None`, `assert t.any() or u.any()`, `assert not t.any()` | GB0170 | 3 | 1 |
| `if any(t.sum() > 0 for t in parts):`, `if all(h.flatten() > -10):` (backend "eager", `tests/test_gb_forms.py`) | GB0170; over a generator the function then runs eagerly | 0 compiled frames (`any` over a generator) / 1 (`all` over rows), counted with a compile counter | not measured |
| `if torch.equal(h, h.abs()):` | GB0033 | 3 | 0 (`aten::equal`: CPU proxy blind) |
| `if torch.allclose(a, b):` / `if t.is_nonzero():` | GB0033 | 3 / 2 | 1 |

The fixture (`if h.sum() > 0: y = h * 2 else: y = h - 1`, truth case f04) breaks at the `if`
(GB0170) and runs as 2 compiled regions with 1 `aten::_local_scalar_dense` and 3 launches per
forward; the `torch.where` version (what the fix writes) runs as 1 region, 2 launches, no sync. The truth table measured f04 at 4 recompiles
instead of 1 for a second input shape and 1 sync-debug warning per forward on an H200 (torch 2.11).
Not flagged, because measured harmless on 2.13: a plain `assert (x >= 0).all()` and a tensor as the
*last* operand (`assert x is not None and (x >= 0).all()`) are compiled into a runtime assert (1
region, no sync; a failing one raises `RuntimeError` instead of `AssertionError`),
and shape branches (`x.shape[0] > 8`: no break; 1 recompile when the batch crosses the threshold).

## Example
```python
def forward(self, x):
    h = self.lin(x)
    if h.sum() > 0:
        y = h * 2
    else:
        y = h - 1
    return torch.relu(y)
```

## Use instead
```python
def forward(self, x):
    h = self.lin(x)
    y = torch.where(h.sum() > 0, h * 2, h - 1)
    return torch.relu(y)
```
For `and`/`or`/`not` on bool tensors use `&`, `|`, `~`; for `torch.equal(a, b)` use
`(a == b).all()` and keep it a tensor. When the branches really must differ in structure,
`torch.cond` traces both as subgraphs.

## Fix safety
Unsafe, offered for `y = a if cond else b`, for `if cond: y = a / else: y = b` (one assignment to
the same name in each branch) and for `if cond: return a / else: return b`, when the condition is
a single tensor comparison/value and both branches are side-effect-free tensor expressions (torch
functions and non-in-place tensor methods; no submodule calls, no random ops). It changes
behaviour because: both branches are always computed (cost; a NaN/inf in the unused branch still
reaches gradients through `torch.where`); the two branches are broadcast and type-promoted
together; and a multi-element condition, which raises in `if`, selects elementwise.

## PyTorch reference
GB0170 https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0170.html ·
GB0033 https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0033.html
"""
    VALID = [
        # shape, None, training and isinstance checks are not tensor values
        "import torch\nfrom torch import nn\nclass M(nn.Module):\n"
        "    def forward(self, x, mask=None):\n"
        "        if x.shape[0] > 8 and x.dim() == 2:\n            x = x * 2\n"
        "        if mask is not None and self.training:\n            x = x * mask\n"
        "        if isinstance(x, torch.Tensor) and x.size(1) > 3 and len(x) > 1:\n            x = x + 1\n"
        "        while x.numel() > 100:\n            x = x[::2]\n"
        "        return x if x.dtype == torch.float32 else x.float()\n",
        # a plain tensor assert stays in the graph (measured: runtime assert, no break)
        "import torch\nfrom torch import nn\nclass M(nn.Module):\n"
        "    def forward(self, x):\n        assert (x >= 0).all(), 'negative input'\n        return x.sqrt()\n",
        # a tensor as the last operand of an assert is a runtime assert too (measured: no break)
        "import torch\nfrom torch import nn\nclass M(nn.Module):\n"
        "    def forward(self, x, mask=None):\n        assert mask is None or (mask >= 0).all()\n        return x\n",
        # value branching outside compiled code (a training loop) is fine
        "import torch\ndef train_step(model, batch, opt):\n    loss = model(batch).mean()\n"
        "    if loss > 10:\n        print('spike')\n    if torch.isnan(loss):\n        return None\n"
        "    return loss\n",
        # already a torch.where; bool tensors combined with & and ~
        "import torch\nfrom torch import nn\nclass M(nn.Module):\n"
        "    def forward(self, h):\n        keep = (h > 0) & ~torch.isnan(h)\n"
        "        return torch.where(keep, h, torch.zeros_like(h))\n",
        # an int argument and a Python flag are not tensors; .item() is FL101's
        "import torch\nfrom torch import nn\nclass M(nn.Module):\n"
        "    def forward(self, x, steps, use_bias):\n        if use_bias and steps > 2:\n            x = x + 1\n"
        "        if x.sum().item() > 0:\n            x = x * 2\n        return x\n",
        # strings, devices and methods of non-tensor arguments are not tensor values
        "import torch\nfrom torch import nn\nclass M(nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.dev = torch.device('cpu')\n"
        "    def forward(self, x, group, target_device):\n        target_device = _index(target_device)\n"
        "        if target_device == 'cpu' or group.get_backend() != 'gloo':\n            x = x * 2\n"
        "        if x.device != self.dev:\n            x = x.to(self.dev)\n        return x\n",
        # found on transformers 5.24: a KV-cache object annotated as a tensor (`get_seq_length` is no
        # Tensor method), a flag annotated as a tensor with a `False` default, an autocast query
        "import torch\nfrom torch import nn\nclass M(nn.Module):\n"
        "    def forward(self, x, cache: torch.Tensor | None = None, output_attentions: torch.Tensor | None = False):\n"
        "        cache_length = 0 if cache is None else cache.get_seq_length()\n"
        "        if cache_length == 0 and not output_attentions:\n            x = x * 2\n"
        "        fp16 = torch.get_autocast_dtype('cuda') == torch.float16\n"
        "        return x.half() if fp16 and torch.is_autocast_enabled('cuda') else x\n",
        # a check that only runs in eager mode, and the length of *args
        "import torch\nfrom torch import nn\nfrom transformers.utils import is_torchdynamo_compiling\n"
        "class M(nn.Module):\n    def forward(self, x, *args):\n"
        "        if not is_torchdynamo_compiling() and (x < 0).any():\n            raise ValueError('negative')\n"
        "        return args[0] if args else x\n",
        # found on MONAI 1.6.1 (RetinaNet heads): a NaN check that only runs in eager mode
        "import torch\nfrom torch import nn\nclass M(nn.Module):\n    def forward(self, x):\n"
        "        y = torch.relu(x)\n        if not torch.compiler.is_compiling():\n"
        "            if torch.isnan(y).any() or torch.isinf(y).any():\n                raise ValueError('nan')\n"
        "        return y\n",
        # inside an autograd.Function the finding belongs to FL108
        "import torch\nclass Fn(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, x):\n"
        "        if x.sum() > 0:\n            return x * 2\n        return x\n"
        "    @staticmethod\n    def backward(ctx, g):\n        return g\n",
    ]
    INVALID = [
        Invalid(
            "import torch\nfrom torch import nn\n\n\nclass Model(nn.Module):\n"
            "    def forward(self, h):\n        if h.sum() > 0:\n            y = h * 2\n        else:\n"
            "            y = h - 1\n        return torch.relu(y)\n",
            expected_fix="import torch\nfrom torch import nn\n\n\nclass Model(nn.Module):\n"
            "    def forward(self, h):\n        y = torch.where(h.sum() > 0, h * 2, h - 1)\n        return torch.relu(y)\n",
            line=7,
        ),
        Invalid(
            "import torch as T\nfrom torch import nn\nclass M(nn.Module):\n"
            "    def forward(self, x):\n        return x * 2 if (x.mean() > 0) else x.abs()\n",
            expected_fix="import torch as T\nfrom torch import nn\nclass M(nn.Module):\n"
            "    def forward(self, x):\n        return T.where(x.mean() > 0, x * 2, x.abs())\n",
            line=5,
        ),
        Invalid(
            "import torch\nfrom torch import nn\nclass M(nn.Module):\n"
            "    def forward(self, x):\n        if x.max() > 1.0:\n            return x / x.max()\n"
            "        else:\n            return x\n",
            expected_fix="import torch\nfrom torch import nn\nclass M(nn.Module):\n"
            "    def forward(self, x):\n        return torch.where(x.max() > 1.0, x / x.max(), x)\n",
            line=5,
        ),
        # while + `not` + and: three findings, none fixable
        Invalid(
            "import torch\nfrom torch import nn\nclass M(nn.Module):\n"
            "    def forward(self, h, mask=None):\n"
            "        while (h > 100).any():\n            h = h / 2\n"
            "        if mask is not None and mask.any():\n            h = h * mask\n"
            "        done = not torch.isnan(h).any()\n        return h, done\n",
            line=5,
            count=3,
        ),
        Invalid(
            "import torch\nfrom torch import nn\nclass M(nn.Module):\n"
            "    def forward(self, a, b):\n        if torch.equal(a, b):\n            return a\n        return a + b\n",
            line=5,
            count=1,
        ),
        Invalid(
            "import torch\nfrom torch import nn\nclass M(nn.Module):\n"
            "    def forward(self, x):\n        assert (x >= 0).all() and (x < 10).all()\n"
            "        rows = [r for r in x.unbind(0) if r.sum() > 0]\n        return torch.stack(rows)\n",
            line=5,
            count=2,
        ),
        # in a helper reached from forward
        Invalid(
            "import torch\nfrom torch import nn\nclass M(nn.Module):\n"
            "    def forward(self, x):\n        return self._gate(x)\n"
            "    def _gate(self, x: torch.Tensor):\n        if torch.isnan(x).any():\n"
            "            x = torch.nan_to_num(x)\n        return x\n",
            line=7,
        ),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.checker = ControlFlowChecker()

    def _run(self, method: str, node: cst.CSTNode, ctx) -> None:
        if ctx.autograd_function is not None:
            return  # FL108 reports constructs inside autograd.Function bodies
        for at, message, fix in getattr(self.checker, method)(node, ctx):
            ctx.report(at, message, fix=fix)

    def visit_If(self, node: cst.If, ctx) -> None:
        self._run("check_If", node, ctx)

    def visit_While(self, node: cst.While, ctx) -> None:
        self._run("check_While", node, ctx)

    def visit_IfExp(self, node: cst.IfExp, ctx) -> None:
        self._run("check_IfExp", node, ctx)

    def visit_CompIf(self, node: cst.CompIf, ctx) -> None:
        self._run("check_CompIf", node, ctx)

    def visit_Assert(self, node: cst.Assert, ctx) -> None:
        self._run("check_Assert", node, ctx)

    def visit_BooleanOperation(self, node: cst.BooleanOperation, ctx) -> None:
        self._run("check_BooleanOperation", node, ctx)

    def visit_UnaryOperation(self, node: cst.UnaryOperation, ctx) -> None:
        self._run("check_UnaryOperation", node, ctx)

    def visit_Call(self, node: cst.Call, ctx) -> None:
        self._run("check_Call", node, ctx)
