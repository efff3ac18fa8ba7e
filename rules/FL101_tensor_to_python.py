"""FL101 tensor-to-python: `.item()`, `.tolist()`, `float(t)`/`int(t)`/`bool(t)` inside compiled code."""

from __future__ import annotations

import libcst as cst

from fusionlint.semantic.bindings import sole_value
from fusionlint.analysis.walk import iter_nodes
from fusionlint.semantic.guards import PYTHON
from fusionlint.analysis.judge import TO_PYTHON_BREAKS, TensorJudge
from fusionlint.rule import Effect, Invalid, Rule

_METHODS = TO_PYTHON_BREAKS
# the same methods of a numpy value (torch 2.13.0 CPU: `h.numpy().tolist()` GB0109, `.item()` GB0033)
_NUMPY_BREAKS = {"item": "GB0033", "tolist": "GB0109"}
_BUILTINS = ("float", "int", "bool", "complex")
# `range(n)` and `items[i]` also take Python ints, so a tensor is claimed only when surely one (not an
# unannotated parameter that nothing shows to be a tensor: transformers 5.24's
# `HungarianMatcher.forward(self, outputs, targets, group_detr)` gets an int)
_JUDGE = TensorJudge()


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
    explains_tensors = True
    triggers = (".item(", ".tolist(", "float(", "int(", "bool(", "complex(", "range(", "[", "math.", "from math", "index(")
    gb_ids = ("GB0124", "GB0109", "GB0059", "GB0033")
    measured_on = ("torch 2.13.0 CPU", "torch 2.11.0 H200")
    docs = """
## What it does
Flags code traced by `torch.compile` that turns a tensor into a Python number or list:
`t.item()`, `t.tolist()`, `float(t)`, `int(t)`, `bool(t)` (also inside `range(int(t))`), and the same
on a numpy value taken from a tensor: `float(t.numpy().mean())`, `t.cpu().numpy().tolist()`; and the
implicit conversions `range(t)`, a `math` function of a tensor (`math.sqrt(t.sum())`,
`math.isnan(t.mean())`), `operator.index(t)`, a shape indexed by a tensor (`x.shape[t]`), and a Python list, `nn.ModuleList` or `nn.Sequential` indexed by a
tensor (`self.experts[idx]`, `parts[lens.argmax()]`).

## Why is this bad?
A Python number does not exist until the tensor's value has been computed, so Dynamo must stop
the graph there (GB0124 for `.item()`/`float()`; for `.tolist()` GB0109 on a float tensor and GB0033
"Data dependent operator" on an integer or bool one), run what it has, copy
the value to the host and resume in a new graph. Measured with torch 2.13.0 on CPU
(`h * h.mean().item()`): 1 graph-break site, 4 compiled regions per forward instead of 1, and 4
recompiles instead of 1 on a second input shape. On an H200 with torch 2.11 the same code
triggers 1 host sync (sync-debug warning) and 1 device-to-host copy per forward. If the
value changes between calls and ends up in a guard, every call recompiles until
`recompile_limit` (8) and then the frame runs eagerly.

`.numpy()` alone is traced (torch 2.13 compiles numpy calls through `torch._numpy`), but taking a
Python value from the result breaks too. Measured with torch 2.13.0 on CPU: `float(h.numpy().mean())`,
`int(h.numpy().argmax())`, `bool(h.numpy().any())` and `h.cpu().numpy().max().item()` each gave 1
graph break (GB0033, 2 compiled regions); `h.numpy().tolist()` gave GB0109; `range(int(n))` with a
tensor `n` gave GB0124.

The implicit conversions break the same way (torch 2.13.0 CPU, backend "eager", `lens` a forward
argument; `tests/test_gb_forms.py` re-measures them): `for _ in range(lens.max()):` gave GB0059 "Failed
to trace builtin operator" (2 graphs); `self.experts[lens.argmax()](h)` on an `nn.ModuleList`,
`parts[lens.argmin()]` on a list of tensors and `sizes[lens.argmin()]` on a list of ints each gave
GB0124 (2 graphs). `torch.stack(parts).index_select(0, idx.view(1))` does not break; indexing the
stacked tensor with the 0-d `idx` itself does (GB0033, FL103). `math.sqrt`, `math.ceil`,
`math.floor`, `math.log`, `math.exp`, `math.pow`, `math.isnan` and `math.isfinite` of a 0-d tensor each
gave GB0033 "Data dependent operator" (torch 2.13.0 CPU); `torch.sqrt(t)` and friends stay in the graph.

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
GB0109 https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0109.html ·
GB0059 https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0059.html ·
GB0033 https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0033.html
"""
    VALID = [
        # a math function of a size or a Python number is plain Python
        "import math\nimport torch\nfrom torch import nn\nclass M(nn.Module):\n"
        "    def forward(self, x, scale: float = 2.0):\n        return x * math.sqrt(x.shape[-1]) * math.log(scale)\n",
        # range over a shape, a list indexed by a Python int, a dict indexed by a tensor-named key
        "import torch\nfrom torch import nn\nclass M(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.experts = nn.ModuleList([nn.Linear(8, 8) for _ in range(3)])\n"
        "    def forward(self, x, lens):\n        for i in range(x.shape[0]):\n            x = self.experts[i % 3](x)\n"
        "        parts = [x, x * 2]\n        return parts[0] + parts[-1]\n",
        # an unannotated parameter used only as a Python number (transformers 5.24, HungarianMatcher)
        "import torch\nfrom torch import nn\nclass M(nn.Module):\n"
        "    def forward(self, outputs, targets, groups):\n        size = outputs.shape[1] // groups\n"
        "        parts = list(outputs.split(size, dim=1))\n        for g in range(groups):\n            parts[g] = parts[g] * 2\n"
        "        return parts\n",
        # shapes and Python attributes are not tensors
        "import torch\nfrom torch import nn\nclass M(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n        self.eps = 1e-5\n"
        "    def forward(self, x):\n        n = int(x.shape[0])\n        return x.view(n, -1) * float(self.eps)\n",
        # .item() outside compiled code (a training loop) is fine
        "import torch\ndef train(model, batch):\n    loss = model(batch).sum()\n    print(loss.item())\n",
        # int() of a size() result is a shape, not a tensor value
        "import torch\nfrom torch import nn\nclass M(nn.Module):\n"
        "    def forward(self, x, scale: float = 2.0):\n        return x * float(scale) + int(x.size(1))\n",
        # numpy of something that is not a tensor; .numpy() kept as an array (traced, no break)
        "import numpy as np\nimport torch\nfrom torch import nn\nclass M(nn.Module):\n"
        "    def forward(self, h, table=None):\n        w = torch.from_numpy(np.tanh(h.numpy()))\n"
        "        k = float(np.float32(2.0).item())\n        return h * w * k\n",
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
        # the index re-bound to a Python int first (transformers 5.24, moshi): only the `.item()` is reported
        Invalid(
            "import torch\nfrom torch import nn\nclass M(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.embed = nn.ModuleList([nn.Embedding(8, 8) for _ in range(3)])\n"
            "    def forward(self, ids, codebook):\n        out = []\n        for idx in codebook:\n"
            "            idx = idx.item()\n            out.append(self.embed[idx - 1](ids))\n        return out\n",
            line=10,
            count=1,
        ),
        Invalid(
            "import torch\nfrom torch import nn\nclass M(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.experts = nn.ModuleList([nn.Linear(8, 8) for _ in range(3)])\n"
            "    def forward(self, x, lens):\n        for _ in range(lens.max()):\n            x = x * 0.5\n"
            "        parts = [x, x * 2]\n        return self.experts[lens.argmax()](x) + parts[lens.argmin()]\n",
            count=3,
        ),
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
        # a Python value from a numpy view of a tensor
        Invalid(
            "import torch\nfrom torch import nn\nclass M(nn.Module):\n"
            "    def forward(self, h):\n        a = h.detach().cpu().numpy()\n        return h * float(a.mean())\n",
            line=6,
        ),
        # a math function of a tensor converts it (`from math import` too)
        Invalid(
            "import math\nfrom math import isnan\nimport torch\nfrom torch import nn\nclass M(nn.Module):\n"
            "    def forward(self, x):\n        s = x.abs().sum()\n"
            "        return x * math.sqrt(s) if not isnan(x.mean()) else x\n",
            line=8,
            count=2,
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
        if isinstance(func, (cst.Attribute, cst.Name)) and ctx.qualname(func) == "operator.index":
            if len(node.args) == 1 and ctx.is_tensor(node.args[0].value):
                # measured, torch 2.13 CPU: `operator.index((x > 0).sum())` -> GB0124
                ctx.report(node, "`operator.index()` of a tensor reads its value on the host inside compiled code: "
                                 "graph break (GB0124) and a host sync")
            return
        if isinstance(func, (cst.Attribute, cst.Name)) and (ctx.qualname(func) or "").startswith("math."):
            arg = next((a.value for a in node.args if a.keyword is None and not a.star and ctx.is_tensor(a.value)), None)
            if arg is not None:
                name = ctx.qualname(func)
                ctx.report(
                    node,
                    f"`{name}()` of a tensor (`{ctx.code(arg)}`) turns it into a Python float on the host inside "
                    f"compiled code: graph break (GB0033) and a host sync; use `torch.{name[5:]}` on the tensor "
                    "where torch has it",
                )
            return
        if isinstance(func, cst.Attribute) and func.attr.value in _METHODS and not node.args:
            receiver = func.value
            if _numpy_of_tensor(receiver, ctx):
                gb = _NUMPY_BREAKS[func.attr.value]
                ctx.report(
                    node,
                    f"`.{func.attr.value}()` of a numpy value taken from a tensor (`.numpy()`) inside compiled "
                    f"code: graph break ({gb})",
                )
                return
            qual = ctx.qualname(receiver) or ""
            if qual.startswith(("numpy", "np.", "math.")) or isinstance(receiver, (cst.Integer, cst.Float)):
                return
            gb = _METHODS[func.attr.value]
            if ctx.is_tensor(receiver):
                ctx.report(
                    node,
                    f"`.{func.attr.value}()` turns a tensor into Python data inside compiled code: "
                    f"graph break ({gb}) and a host sync",
                )
            elif not _surely_python(receiver, ctx):
                # decision policy (README): only tensors and numpy values have `.item()`/`.tolist()`,
                # and both break the graph, so an unknown receiver is reported too
                ctx.report(
                    node,
                    f"`.{func.attr.value}()` exists only on tensors and numpy values, and inside compiled code "
                    f"it reads the value on the host: graph break ({gb}; {_NUMPY_BREAKS[func.attr.value]} for numpy)",
                )
            return
        if isinstance(func, cst.Name) and func.value == "range" and ctx.qualname(func) == "range":
            bound = next((a.value for a in node.args if a.keyword is None and not a.star
                          and _JUDGE.strong(a.value, ctx) and not _converted_name(a.value, ctx)), None)
            if bound is not None:
                # measured, torch 2.13 CPU: `for i in range(lens.max())` -> GB0059, 2 graphs
                ctx.report(
                    node,
                    f"`range()` of a tensor (`{ctx.code(bound)}`) reads its value on the host inside compiled code: "
                    "graph break (GB0059) and a host sync; loop over a Python int (a shape) or vectorise",
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
            elif _numpy_of_tensor(node.args[0].value, ctx):
                ctx.report(
                    node,
                    f"`{func.value}()` of a numpy value taken from a tensor (`.numpy()`) inside compiled code: "
                    "graph break (GB0033)",
                )

    def visit_Subscript(self, node: cst.Subscript, ctx) -> None:
        """``parts[idx]`` / ``self.experts[idx]`` with a tensor ``idx``: a Python list indexed by a tensor."""
        if ctx.autograd_function is not None or len(node.slice) != 1:
            return
        index = node.slice[0].slice
        if not isinstance(index, cst.Index) or not _JUDGE.strong(index.value, ctx) or _converted_name(index.value, ctx):
            return
        if _size_of_tensor(node.value, ctx):
            # measured, torch 2.13 CPU: `x.shape[t]` with a 0-d tensor `t` -> GB0124
            ctx.report(
                node,
                f"`{ctx.code(node)}` indexes a shape with a tensor, which Dynamo turns into a Python int on the host: "
                "graph break (GB0124) and a host sync; index with a Python int",
            )
            return
        if not _python_list(node.value, ctx):
            return
        # measured, torch 2.13 CPU: `parts[lens.argmax()]` on a list, `self.experts[idx](x)` on an
        # nn.ModuleList -> GB0124 (the index is converted with `.item()`), 2 graphs
        ctx.report(
            node,
            f"`{ctx.code(node)}` indexes a Python list with a tensor, which Dynamo turns into a Python int on the "
            "host: graph break (GB0124) and a host sync; stack the items and select with "
            "`torch.stack(items).index_select(0, idx.view(1))`, or pass the index as a Python int",
        )


def _converted_name(expr: cst.BaseExpression, ctx) -> bool:
    """A name in ``expr`` that is also bound to a Python value taken from a tensor (``i = i.item()``,
    ``n = int(n)``): the tensor facts do not follow the order of bindings, and the conversion itself is
    this rule's finding (found on transformers 5.24, moshi: ``idx = idx.item(); self.embed[idx - 1]``)."""
    names = [expr] if isinstance(expr, cst.Name) else [n for n in iter_nodes(expr, (cst.Name,)) if isinstance(n, cst.Name)]
    table = ctx.bindings()
    for name in names:
        for value in table.get(name.value) or ():
            if isinstance(value, cst.Call):
                func = value.func
                if isinstance(func, cst.Attribute) and func.attr.value in _METHODS:
                    return True
                if isinstance(func, cst.Name) and func.value in _BUILTINS:
                    return True
    return False


def _size_of_tensor(expr: cst.BaseExpression, ctx) -> bool:
    """``x.shape`` / ``x.size()`` of a tensor: a torch.Size."""
    if isinstance(expr, cst.Attribute) and expr.attr.value == "shape":
        return ctx.is_tensor(expr.value)
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "size" and not expr.args:
        return ctx.is_tensor(expr.func.value)
    return False


_LIST_MODULES = frozenset({"torch.nn.ModuleList", "torch.nn.Sequential", "torch.nn.ParameterList"})


def _python_list(expr: cst.BaseExpression, ctx) -> bool:
    """A list display, a name bound only to one (or to a list comprehension), or ``self.<ModuleList>``."""
    if isinstance(expr, (cst.List, cst.ListComp)):
        return True
    if isinstance(expr, cst.Name):
        values = ctx.bindings().get(expr.value)
        return bool(values) and all(isinstance(v, (cst.List, cst.ListComp)) for v in values)
    if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self":
        cls = ctx.cls
        if cls is None:
            return False
        return cls.submodules.get(expr.attr.value) in _LIST_MODULES or cls.container_attrs.get(expr.attr.value) == "list"
    return False


def _surely_python(expr: cst.BaseExpression, ctx) -> bool:
    """Provably not a tensor nor a numpy value: a literal, a container display, a Python number attribute."""
    if isinstance(expr, (cst.Integer, cst.Float, cst.SimpleString, cst.List, cst.Dict, cst.Tuple, cst.Set)):
        return True
    if isinstance(expr, cst.Name):
        facts = ctx.facts()  # `if isinstance(v, (int, float)): v.item()` cannot be reached with a tensor
        return facts is not None and facts.guarded(expr) == PYTHON
    if isinstance(expr, cst.Call) and (ctx.qualname(expr.func) or "").startswith(("numpy.", "math.")):
        return not _numpy_of_tensor(expr, ctx)  # `np.float32(2.0).item()`: a constant Dynamo folds
    attr = expr.attr.value if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self" else None
    cls = ctx.cls
    return attr is not None and cls is not None and attr in cls.scalar_attrs


# numpy results that are still arrays (so `.numpy()` stays traced until a Python value is taken)
_NUMPY_CHAIN = frozenset(
    {"mean", "sum", "max", "min", "argmax", "argmin", "any", "all", "std", "var", "prod", "abs", "round",
     "astype", "copy", "reshape", "flatten", "ravel", "squeeze", "clip", "cumsum", "T"}
)


def _numpy_of_tensor(expr: cst.BaseExpression, ctx, depth: int = 0) -> bool:
    """``t.numpy()`` / ``t.cpu().numpy().mean()`` / a name bound once to one, where ``t`` is a tensor.

    Measured on torch 2.13.0 CPU: `.numpy()` itself is traced (torch._numpy), but `float()`, `int()`,
    `bool()`, `.item()` of the result break the graph (GB0033) and `.tolist()` breaks (GB0109).
    """
    if depth > 6:
        return False
    if isinstance(expr, cst.Name):
        value = sole_value(ctx.bindings(), expr.value)
        return value is not None and _numpy_of_tensor(value, ctx, depth + 1)
    if isinstance(expr, cst.Subscript):
        return _numpy_of_tensor(expr.value, ctx, depth + 1)
    if isinstance(expr, cst.Attribute) and expr.attr.value == "T":
        return _numpy_of_tensor(expr.value, ctx, depth + 1)
    if not (isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute)):
        return False
    method = expr.func.attr.value
    if method == "numpy" and not expr.args:
        return ctx.is_tensor(expr.func.value)
    return method in _NUMPY_CHAIN and _numpy_of_tensor(expr.func.value, ctx, depth + 1)
