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
    "to_sparse": ("GB0015", "a sparse tensor cannot be traced"),
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
# torch.nn modules whose constructor makes parameters (by default): building one in compiled code runs
# `nn.Parameter(...)`, measured GB0264 for nn.Linear, nn.Conv2d, nn.LayerNorm (torch 2.13 CPU);
# parameter-free ones (nn.Softmax, nn.Upsample, nn.Dropout) trace. keyword -> value that drops the parameters.
_PARAM_MODULES: dict[str, tuple[str, ...]] = {
    **{n: ("bias",) for n in ("Linear", "Bilinear", "LazyLinear")},
    **{f"{kind}{d}d": () for kind in ("Conv", "ConvTranspose", "LazyConv", "LazyConvTranspose") for d in (1, 2, 3)},
    **{n: ("elementwise_affine",) for n in ("LayerNorm", "RMSNorm")},
    **{n: ("affine",) for n in ("GroupNorm", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm")},
    **{n: () for n in ("Embedding", "EmbeddingBag", "MultiheadAttention", "PReLU")},
}
# Tensor attributes with C setters Dynamo does not model (measured GB0058: `.real`, `.imag`).
_SETTER_ATTRS = frozenset({"real", "imag"})
_COMPARISONS = (cst.Equal, cst.NotEqual, cst.LessThan, cst.LessThanEqual, cst.GreaterThan, cst.GreaterThanEqual)


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
        "Parameter", "repr(", "jit.isinstance", "torch.jit import", ".data", ".real", ".imag", "data_ptr", "to_sparse",
        *_PARAM_MODULES,
    )
    gb_ids = ("GB0007", "GB0045", "GB0046", "GB0125", "GB8985", "GB0126", "GB0127", "GB0107", "GB0117", "GB0108", "GB0123",
              "GB0206", "GB0225", "GB0264", "GB0569", "GB0056", "GB0058", "GB5976", "GB0015")
    measured_on = ("torch 2.13.0 CPU",)
    docs = """
## What it does
Flags, in code that `torch.compile` traces, tensor methods and torch calls that Dynamo does not
trace: `t.is_inference()`, `t.requires_grad_()` (not `requires_grad_(False)`), `t.requires_grad =
...`, `t.resize_(...)`, `t.resize_as_(...)`, `t.random_(...)`, `t.share_memory_()`,
`t.retain_grad()`, `t.backward()`, `t.to_sparse()`, `repr(t)`, `torch.is_inference_mode_enabled()`, `torch.jit.isinstance(...)`,
`nn.Parameter(...)`, torch.nn modules that make parameters (`nn.Linear(...)`, `nn.Conv2d(...)`,
`nn.LayerNorm(...)`...), torch factory functions called with `requires_grad=True`, `y.data = ...` on a
tensor created in the compiled code, `t.real = ...`/`t.imag = ...`, and comparisons of
`t.data_ptr()`.

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
| `t.to_sparse()` | GB0015 "Attempted to wrap sparse Tensor" |
| `repr(t)` | GB0569 |
| `nn.Parameter(torch.ones(8))` | GB0264 |
| `torch.ones(8, requires_grad=True)`, `torch.tensor([...], requires_grad=True)` | GB0225 |
| `nn.Linear(8, 8)(h)`, `nn.Conv2d(1, 1, 3)(h)`, `nn.LayerNorm(8)(h)` built in forward | GB0264 |
| `y = h * 3; y.data = h * 2` | GB0056 "Failed to mutate tensor data attribute" |
| `c.real = h`, `c.imag = h` | GB0058 "Failed to set tensor attribute" |
| `y.data_ptr() == h.data_ptr()`, `!=` | GB5976 "Data pointer comparison" |

`tests/test_gb_forms.py` re-measures the last four rows. Not flagged, because they measured no
break: `.data =` on a forward input, a parameter or a buffer (`self.w.data = ...`), parameter-free
modules built in forward (`nn.Softmax(dim=-1)(h)`, `nn.Upsample(...)`, `nn.Dropout(...)`), and
`t.data_ptr()` read without a comparison.

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
        # `.data =` on an input and a parameter, parameter-free modules, a data_ptr read (measured: no break)
        "import torch\nfrom torch import nn\n\nclass M(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.w = nn.Parameter(torch.ones(8))\n\n    def forward(self, x):\n        x.data = x * 2\n"
        "        self.w.data = self.w.data * 0.5\n        p = x.data_ptr()\n"
        "        return nn.Softmax(dim=-1)(x) + nn.LayerNorm(8, elementwise_affine=False)(x)\n",
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
            "        y = x.relu()\n        y.data = x * 2\n        c = torch.complex(x, x)\n        c.real = x\n"
            "        if y.data_ptr() == x.data_ptr():\n            y = y + 1\n        return nn.Linear(8, 8)(y)\n",
            count=4,
        ),
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
        if qual.startswith("torch.nn.") and qual.count(".") == 2 and qual[9:] in _PARAM_MODULES:
            dropping = _PARAM_MODULES[qual[9:]]
            if any(a.keyword is not None and a.keyword.value in dropping for a in node.args):
                return  # `nn.LayerNorm(d, elementwise_affine=False)`: may make no parameter
            ctx.report(
                node,
                f"`{ctx.code(node.func)}(...)` built in compiled code creates its parameters with `nn.Parameter`, which "
                "Dynamo does not trace: graph break (GB0264), and the weights are new random ones on every call; "
                "build the module in `__init__`",
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
            if not isinstance(t, cst.Attribute):
                continue
            attr = t.attr.value
            if attr == "requires_grad" and ctx.is_tensor(t.value):
                ctx.report(
                    target.target,
                    "assigning `.requires_grad` of a tensor in compiled code is not supported: graph break (GB0206)",
                )
            elif attr == "data" and _intermediate(t.value, ctx):
                # measured, torch 2.13 CPU: `y = x.relu(); y.data = x * 2` -> GB0056; `.data =` on an input,
                # a parameter or a buffer traces (no break)
                ctx.report(
                    target.target,
                    f"assigning `.data` of `{ctx.code(t.value)}`, a tensor created in compiled code: Dynamo only "
                    "supports `.data =` on tensors made outside the compiled region: graph break (GB0056); bind the "
                    "new value to the name instead (`y = new.detach()`)",
                )
            elif attr in _SETTER_ATTRS and ctx.is_tensor(t.value):
                ctx.report(
                    target.target,
                    f"assigning `.{attr}` of a tensor in compiled code is not supported: graph break (GB0058); "
                    "build the new tensor (`torch.complex(real, imag)`) instead",
                )

    def visit_Comparison(self, node: cst.Comparison, ctx) -> None:
        if not any(isinstance(c.operator, _COMPARISONS) for c in node.comparisons):
            return
        operands = [node.left, *(c.comparator for c in node.comparisons)]
        ptr = next((o for o in operands if _data_ptr(o, ctx)), None)
        if ptr is None:
            return
        # measured, torch 2.13 CPU: `y.data_ptr() == x.data_ptr()` and `!=` -> GB5976, 2 graphs
        ctx.report(
            node,
            f"comparing `{ctx.code(ptr)}` in compiled code: Dynamo can only compare data pointers it can prove "
            "equal or different without running the code: graph break (GB5976); decide it outside the compiled "
            "region, or compare shapes/strides",
        )


def _data_ptr(expr: cst.BaseExpression, ctx) -> bool:
    """``t.data_ptr()`` on a tensor."""
    return (
        isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "data_ptr"
        and not expr.args and ctx.is_tensor(expr.func.value)
    )


def _intermediate(expr: cst.BaseExpression, ctx) -> bool:
    """A local name bound only to tensors computed in the function (not a parameter, not ``self.x``)."""
    if not isinstance(expr, cst.Name) or not ctx.is_tensor(expr) or ctx.function is None:
        return False
    values = ctx.bindings().get(expr.value)
    return bool(values) and all(v is not None for v in values)
