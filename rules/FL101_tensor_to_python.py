"""FL101 tensor-to-python: `.item()`, `.tolist()`, `float(t)`/`int(t)`/`bool(t)` inside compiled code."""

from __future__ import annotations

import libcst as cst

from fusionlint.rule import Effect, Invalid, Rule

_METHODS = {"item": "GB0124", "tolist": "GB0109"}
_BUILTINS = ("float", "int", "bool", "complex")


def _in_message_lambda(ctx) -> bool:
    """Inside ``lambda: f"..."``: a lazily built error message (``torch._check(cond, lambda: ...)``),
    evaluated only when the check fails, so not on the traced path."""
    for parent in ctx.iter_parents():
        if isinstance(parent, cst.Lambda):
            return isinstance(parent.body, (cst.FormattedString, cst.SimpleString, cst.ConcatenatedString))
        if isinstance(parent, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
            return False
    return False


class TensorToPython(Rule):
    code = "FL101"
    name = "tensor-to-python"
    message = "tensor converted to a Python value inside compiled code: graph break and host sync"
    effects = (Effect.GRAPH_BREAK, Effect.HOST_SYNC)
    triggers = (".item(", ".tolist(", "float(", "int(", "bool(", "complex(")
    gb_ids = ("GB0124", "GB0109")
    measured_on = ("torch 2.13.0 CPU", "torch 2.11.0 H200")
    docs = """
## What it does
Flags code traced by `torch.compile` that turns a tensor into a Python number or list:
`t.item()`, `t.tolist()`, `float(t)`, `int(t)`, `bool(t)`.

## Why is this bad?
A Python number does not exist until the tensor's value has been computed, so Dynamo must stop
the graph there (GB0124 for `.item()`/`float()`, GB0109 for `.tolist()`), run what it has, copy
the value to the host and resume in a new graph. Measured with torch 2.13.0 on CPU
(`h * h.mean().item()`): 1 graph-break site, 4 compiled regions per forward instead of 1, and 4
recompiles instead of 1 on a second input shape. On an H200 with torch 2.11 the same code
triggers 1 host sync (sync-debug warning) and 1 device-to-host copy per forward. If the
value changes between calls and ends up in a guard, every call recompiles until
`recompile_limit` (8) and then the frame runs eagerly.

Note: `fullgraph=True` no longer rejects `.item()` (torch 2.11+/2.13 capture scalar outputs
there), but the host sync stays for most uses; a finding here is still a real cost.

## Example
```python
class Model(nn.Module):
    def forward(self, h):
        scale = h.mean().item()
        return h * scale
```

## Use instead
Keep the value a tensor; tensor ops broadcast a 0-d tensor:
```python
class Model(nn.Module):
    def forward(self, h):
        return h * h.mean()
```
`clamp`, `where`, `masked_fill` and friends accept tensors as bounds/values.

## Fix safety
No automatic fix: what replaces the Python value depends on how it is used.

## PyTorch reference
GB0124 https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0124.html ·
GB0109 https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0109.html
"""
    VALID = [
        # shapes and Python attributes are not tensors
        "import torch\nfrom torch import nn\nclass M(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n        self.eps = 1e-5\n"
        "    def forward(self, x):\n        n = int(x.shape[0])\n        return x.view(n, -1) * float(self.eps)\n",
        # .item() outside compiled code (a training loop) is fine
        "import torch\ndef train(model, batch):\n    loss = model(batch).sum()\n    print(loss.item())\n",
        # int() of a size() result is a shape, not a tensor value
        "import torch\nfrom torch import nn\nclass M(nn.Module):\n"
        "    def forward(self, x, scale: float = 2.0):\n        return x * float(scale) + int(x.size(1))\n",
        # bool() of a None check
        "import torch\nfrom torch import nn\nclass M(nn.Module):\n"
        "    def forward(self, x, mask=None):\n        if bool(mask is None):\n            return x\n        return x * mask\n",
        # a lazy error message: the lambda runs only when the check fails (transformers'
        # `torch_compilable_check`, `torch._check`); found on transformers 5.24
        "import torch\nfrom torch import nn\nclass M(nn.Module):\n"
        "    def forward(self, x, ids):\n        n = (ids == 3).sum()\n"
        "        torch._check(n * x.shape[-1] == x.numel(), lambda: f'got {int(n)} tokens')\n        return x\n",
        # torch.seed() returns a Python int, not a tensor
        "import sys\nimport torch\nfrom torch import nn\nclass M(nn.Module):\n"
        "    def forward(self, x):\n        self.seed = int(torch.seed() % sys.maxsize)\n        return x\n",
        # forward arguments named like sizes are ints (transformers 5.24, DepthAnything's head)
        "import torch\nfrom torch import nn\nclass M(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n        self.patch_size = 14\n"
        "    def forward(self, x, patch_height, patch_width):\n"
        "        size = (int(patch_height * self.patch_size), int(patch_width * self.patch_size))\n"
        "        return nn.functional.interpolate(x, size)\n",
        # a KV-cache object wrongly annotated as a tensor: `get_seq_length` is no Tensor method
        "import torch\nfrom torch import nn\nclass M(nn.Module):\n"
        "    def forward(self, x, cache: torch.Tensor | None = None):\n"
        "        start = 0 if cache is None else int(cache.get_seq_length())\n        return x[:, start:]\n",
    ]
    INVALID = [
        Invalid(
            "import torch\nfrom torch import nn\nclass M(nn.Module):\n"
            "    def forward(self, h):\n        return h * h.mean().item()\n",
            line=5,
        ),
        Invalid(
            "import torch\nfrom torch import nn\nclass M(nn.Module):\n"
            "    def forward(self, x):\n        t = torch.amax(x)\n        return x.clamp(-float(t), float(t))\n",
            line=6,
            count=2,
        ),
        Invalid(
            "import torch\n\n@torch.compile\ndef f(x):\n    return [v * 2 for v in x.tolist()]\n",
            line=5,
        ),
        # reached through a helper method: reported with the chain
        Invalid(
            "import torch\nfrom torch import nn\nclass M(nn.Module):\n"
            "    def forward(self, x):\n        return self._scale(x)\n"
            "    def _scale(self, x: torch.Tensor):\n        return x / int(x.sum())\n",
            line=7,
        ),
    ]

    def visit_Call(self, node: cst.Call, ctx) -> None:
        if ctx.autograd_function is not None:
            return  # FL108 reports these, naming the Function; one construct, one finding
        if _in_message_lambda(ctx):
            return
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in _METHODS and not node.args:
            receiver = func.value
            qual = ctx.qualname(receiver) or ""
            if qual.startswith(("numpy", "np.", "math.")) or isinstance(receiver, (cst.Integer, cst.Float)):
                return
            if ctx.is_tensor(receiver):
                gb = _METHODS[func.attr.value]
                ctx.report(
                    node,
                    f"`.{func.attr.value}()` turns a tensor into Python data inside compiled code: "
                    f"graph break ({gb}) and a host sync",
                )
            return
        if isinstance(func, cst.Name) and func.value in _BUILTINS and len(node.args) == 1 and not node.args[0].keyword:
            if ctx.qualname(func) != func.value:
                return  # shadowed by an import
            if ctx.is_tensor(node.args[0].value):
                ctx.report(
                    node,
                    f"`{func.value}()` of a tensor reads its value on the host inside compiled code: "
                    "graph break (GB0124) and a host sync",
                )
