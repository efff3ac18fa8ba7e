"""FL103 data-dependent-output-shape: ops whose output size depends on tensor values, in compiled code."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from fusionlint.rule import Effect, Invalid, Rule

from .FL102_data_dependent_control_flow import Found, TensorJudge, autograd_owner, short, source

# op -> hint; every one measured on torch 2.13.0+cpu as GB0036 "Dynamic shape operator".
_SHAPE_OPS = {
    "nonzero": "`(mask).sum()` for a count, `torch.where(mask, x, 0)` to keep the shape",
    "argwhere": "`torch.where(mask, x, 0)` to keep the shape",
    "masked_select": "`torch.where(mask, x, 0)` (or `masked_fill`) and reduce over the fixed shape",
    "unique": "a fixed-size encoding (one-hot / `scatter` over a known range)",
    "unique_consecutive": "a fixed-size encoding over a known range",
    "bincount": "`torch.zeros(n).scatter_add_(...)` or `one_hot(...).sum(0)` with a known `n`",
}
# Factories whose size arguments a tensor may fill: measured GB0033 when one is a 0-d tensor.
# name -> (positional indexes holding sizes, keyword names); None = every positional argument.
_FACTORIES: dict[str, tuple[Optional[tuple[int, ...]], tuple[str, ...]]] = {
    "arange": (None, ("start", "end", "step")),
    "zeros": (None, ("size",)),
    "ones": (None, ("size",)),
    "empty": (None, ("size",)),
    "rand": (None, ("size",)),
    "randn": (None, ("size",)),
    "full": ((0,), ("size",)),
    "linspace": ((2,), ("steps",)),
}
_NEW_FACTORIES: dict[str, tuple[Optional[tuple[int, ...]], tuple[str, ...]]] = {
    "new_zeros": (None, ("size",)),
    "new_ones": (None, ("size",)),
    "new_empty": (None, ("size",)),
    "new_full": ((0,), ("size",)),
}
# Calls that produce a bool tensor from a tensor.
_BOOL_TORCH = frozenset(
    "isnan isinf isfinite isneginf isposinf isreal isclose isin signbit logical_and logical_or logical_not "
    "logical_xor eq ne gt lt ge le greater less greater_equal less_equal not_equal".split()
)
_BOOL_METHODS = _BOOL_TORCH | {"bool"}


class ShapeChecker:
    """Finds value-dependent output shapes; FL103 reports them outside autograd.Function bodies."""

    def __init__(self) -> None:
        self.judge = TensorJudge()
        self._masks: dict[int, dict[str, list[cst.BaseExpression]]] = {}

    # -- calls ----------------------------------------------------------------------------------
    def check_Call(self, node: cst.Call, ctx) -> list[Found]:
        func = node.func
        qual = ctx.qualname(func) or ""
        op: Optional[str] = None
        method = False
        if qual.startswith("torch.") and qual.count(".") == 1:
            op = qual[len("torch."):]
        elif isinstance(func, cst.Attribute) and not (isinstance(func.value, cst.Name) and func.value.value == "self"):
            if not qual.startswith("torch.") and self.judge.receiver(func.value, func.attr.value, ctx):
                op, method = func.attr.value, True
        if op is None:
            return []
        text = short(source(ctx, node))
        if op in _SHAPE_OPS:
            return [(node, self._shape_message(op, text), None)]
        if op == "where" and not method and len(node.args) == 1 and node.args[0].keyword is None:
            return [(node, self._shape_message("where", text), None)]
        if op == "repeat_interleave":
            return self._repeat_interleave(node, method, text, ctx)
        table = _NEW_FACTORIES if method else _FACTORIES
        if op in table:
            sized = self._tensor_size(node, *table[op], ctx)
            if sized is not None:
                return [
                    (
                        node,
                        f"`{text}` is sized by a tensor value (`{short(source(ctx, sized))}`): Dynamo reads it on the "
                        "host: graph break (GB0033) and a host sync; size it from shapes (`x.shape[0]`) or allocate "
                        "the maximum size and mask",
                        None,
                    )
                ]
        return []

    @staticmethod
    def _shape_message(op: str, text: str) -> str:
        hint = _SHAPE_OPS.get(op, _SHAPE_OPS["nonzero"])
        return f"`{text}` returns a tensor whose size depends on the data: graph break (GB0036) and a host sync; use {hint}"

    def _repeat_interleave(self, node: cst.Call, method: bool, text: str, ctx) -> list[Found]:
        if any(a.keyword is not None and a.keyword.value == "output_size" for a in node.args):
            return []
        positional = [a.value for a in node.args if a.keyword is None and not a.star]
        keyword = {a.keyword.value: a.value for a in node.args if a.keyword is not None}
        if method:
            repeats = positional[0] if positional else keyword.get("repeats")
        elif len(positional) == 1 and not keyword:
            repeats = positional[0]  # torch.repeat_interleave(repeats): the index form
        else:
            repeats = positional[1] if len(positional) > 1 else keyword.get("repeats")
        if repeats is None or not self.judge.strong(repeats, ctx):
            return []
        return [
            (
                node,
                f"`{text}` with tensor `repeats` and no `output_size` has a data-dependent size: graph break "
                "(GB0036) and a host sync; pass `output_size=` when the total is known",
                None,
            )
        ]

    def _tensor_size(self, node: cst.Call, positions, keywords, ctx) -> Optional[cst.BaseExpression]:
        candidates: list[cst.BaseExpression] = []
        positional = [a for a in node.args if a.keyword is None]
        for i, arg in enumerate(positional):
            if arg.star:
                return None
            if positions is None or i in positions:
                candidates.append(arg.value)
        for arg in node.args:
            if arg.keyword is not None and arg.keyword.value in keywords:
                candidates.append(arg.value)
        for cand in candidates:
            parts = [e.value for e in cand.elements] if isinstance(cand, (cst.Tuple, cst.List)) else [cand]
            for part in parts:
                if self.judge.strong(part, ctx):
                    return part
        return None

    # -- boolean-mask indexing ----------------------------------------------------------------------
    def check_Subscript(self, node: cst.Subscript, ctx) -> list[Found]:
        parent = ctx.parent
        if isinstance(parent, cst.AssignTarget) and parent.target is node:
            return []  # `h[mask] = v` is a masked write (index_put): measured no break
        if isinstance(parent, cst.Del):
            return []
        if not ctx.is_tensor(node.value):
            return []
        for element in node.slice:
            index = element.slice
            if isinstance(index, cst.Index) and self.bool_mask(index.value, node.value, ctx):
                return [
                    (
                        node,
                        f"boolean-mask indexing `{short(source(ctx, node))}` returns a tensor whose size depends on the "
                        "data: graph break (GB0036) and a host sync (aten::nonzero); keep the shape with "
                        "`torch.where(mask, x, 0)` / `masked_fill` and reduce",
                        None,
                    )
                ]
        return []

    def bool_mask(self, expr: cst.BaseExpression, indexed: cst.BaseExpression, ctx, depth: int = 0) -> bool:
        """Is ``expr`` surely a bool tensor (a comparison on tensors, isnan(), ~m, m & n, a name bound to one)?"""
        if depth > 4:
            return False
        judge = self.judge
        if isinstance(expr, cst.Comparison):
            if any(isinstance(c.operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn)) for c in expr.comparisons):
                return False
            operands = [expr.left, *(c.comparator for c in expr.comparisons)]
            same = ctx.code(indexed).strip()
            return any(judge.strong(o, ctx) or (ctx.is_tensor(o) and ctx.code(o).strip() == same) for o in operands)
        if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.BitInvert):
            return self.bool_mask(expr.expression, indexed, ctx, depth + 1)
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, (cst.BitAnd, cst.BitOr, cst.BitXor)):
            return self.bool_mask(expr.left, indexed, ctx, depth + 1) and self.bool_mask(expr.right, indexed, ctx, depth + 1)
        if isinstance(expr, cst.Call):
            func = expr.func
            qual = ctx.qualname(func) or ""
            if qual.startswith("torch.") and qual.count(".") == 1 and qual[6:] in _BOOL_TORCH:
                return True
            if isinstance(func, cst.Attribute) and func.attr.value in _BOOL_METHODS:
                return judge.receiver(func.value, func.attr.value, ctx) and not qual.startswith("torch.")
            if isinstance(func, cst.Attribute) and func.attr.value in ("to", "type") and len(expr.args) == 1:
                return ctx.qualname(expr.args[0].value) == "torch.bool" and judge.receiver(func.value, "bool", ctx)
            return False
        if isinstance(expr, cst.Name):
            bound = self._bindings(ctx).get(expr.value)
            return bool(bound) and all(self.bool_mask(v, indexed, ctx, depth + 1) for v in bound)
        return False

    def _bindings(self, ctx) -> dict[str, list[cst.BaseExpression]]:
        """name -> values assigned to it in the current function (None marks a non-plain binding)."""
        fn = ctx.function
        if fn is None:
            return {}
        key = id(fn.node)
        found = self._masks.get(key)
        if found is None:
            found = self._masks[key] = _plain_bindings(fn.node)
        return found


def _plain_bindings(fn: cst.FunctionDef) -> dict[str, list[cst.BaseExpression]]:
    found: dict[str, list] = {}
    params = [*fn.params.posonly_params, *fn.params.params, *fn.params.kwonly_params]
    for p in params:
        found.setdefault(p.name.value, []).append(cst.Name("__param__"))  # never a known bool mask

    class Walker(cst.CSTVisitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return node is fn

        def visit_Assign(self, node: cst.Assign) -> None:
            for target in node.targets:
                if isinstance(target.target, cst.Name):
                    found.setdefault(target.target.value, []).append(node.value)
                else:
                    _opaque(target.target)

        def visit_AugAssign(self, node: cst.AugAssign) -> None:
            _opaque(node.target)

        def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
            if isinstance(node.target, cst.Name) and node.value is not None:
                found.setdefault(node.target.value, []).append(node.value)
            else:
                _opaque(node.target)

        def visit_For(self, node: cst.For) -> None:
            _opaque(node.target)

        def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
            if isinstance(node.target, cst.Name):
                found.setdefault(node.target.value, []).append(node.value)

    def _opaque(target: cst.BaseExpression) -> None:
        if isinstance(target, cst.Name):
            found.setdefault(target.value, []).append(cst.Name("__opaque__"))
        elif isinstance(target, (cst.Tuple, cst.List)):
            for e in target.elements:
                _opaque(e.value)
        elif isinstance(target, cst.StarredElement):
            _opaque(target.value)

    fn.visit(Walker())
    return found


class DataDependentOutputShape(Rule):
    code = "FL103"
    name = "data-dependent-output-shape"
    message = "op with a data-dependent output shape inside compiled code: graph break and host sync"
    effects = (Effect.GRAPH_BREAK, Effect.HOST_SYNC)
    triggers = (
        "[", "nonzero", "argwhere", "masked_select", "unique", "bincount", "where(", "repeat_interleave",
        "arange(", "zeros(", "ones(", "empty(", "full(", "rand", "linspace(",
    )
    gb_ids = ("GB0036", "GB0033")
    measured_on = ("torch 2.13.0 CPU", "torch 2.11.0 H200")
    docs = """
## What it does
Flags ops in code that `torch.compile` traces whose output *size* depends on tensor values:
`torch.nonzero`/`.nonzero()`, boolean-mask indexing (`h[h > 0]`, `h[mask]` with `mask` a
comparison, `isnan(...)`, `~m`, `m & n` or a name bound only to such), `masked_select`,
`unique`/`unique_consecutive`, `argwhere`, `bincount`, one-argument `torch.where(cond)`,
`repeat_interleave` with a tensor `repeats` and no `output_size`, and
`arange`/`zeros`/`ones`/`empty`/`full`/`rand`/`randn`/`linspace`/`new_zeros`/`new_ones`/
`new_empty`/`new_full` sized by a tensor. A masked *write* (`h[mask] = 0`) is not flagged.

## Why is this bad?
Inductor compiles for static (or symbolic) sizes; an output whose size is only known after the
data is computed forces Dynamo to end the graph, run the op eagerly and resume in a new graph.
The op materialises its indices on the host (`aten::nonzero` and friends: a device→host copy
and sync on GPUs). Measured with torch 2.13.0+cpu (1 thread), one forward after warm-up, each
form in a small function called from `forward` (1 compiled region when the form is absent):

| pattern | graph-break id | compiled regions | sync-prone aten ops |
|---|---|---|---|
| `torch.nonzero(h > 0)`, `(h > 0).nonzero()`, `torch.argwhere`, `torch.where(h > 0)` | GB0036 | 3 | `nonzero` ×1 |
| `h[h > 0]`, `h[mask]`, `h[:, h[0] > 0]`, `h[m] *= 2` | GB0036 | 3 | `nonzero` ×1 |
| `torch.masked_select(h, h > 0)` | GB0036 | 3 | `masked_select`, `_local_scalar_dense` |
| `torch.unique(t)`, `t.unique()`, `unique(dim=0)`, `unique_consecutive` | GB0036 | 3 | `_unique2` / `unique_dim` / `unique_consecutive` |
| `torch.bincount(t)` | GB0036 | 3 | none in the CPU proxy |
| `torch.repeat_interleave(x, r)` (`r` a tensor) | GB0036 | 3 | `repeat_interleave`, `_local_scalar_dense` ×3 |
| `torch.arange(n)`, `zeros`/`ones`/`empty`/`full`/`rand`/`randn`/`linspace`/`new_*` with `n = (h > 0).sum()` | GB0033 | 3 | `_local_scalar_dense` ×1 |

Measured harmless, so not flagged: `h[h > 0] = 0` (1 region), `repeat_interleave(x, r,
output_size=32)` and `repeat_interleave(x, 2)` (1 region), `torch.arange(h.shape[0])`, and
indexing with a long index tensor. A size read through `.item()` breaks at the `.item()`
(GB0124): that is FL101's finding. The fixture (`h[h > 0].sum()`, truth case f06) shows 1 break
site (GB0036), 2 compiled regions, 1 `aten::nonzero` and 4 launches per forward; the
`torch.where(h > 0, h, 0.0).sum()` version: 1 region, 2 launches, no sync-prone op. On an H200 (torch 2.11) f05/f06 showed 1
sync-debug warning per forward and 4 recompiles instead of 1 for a second input shape.

`fullgraph=True` on torch ≥ 2.11 captures `nonzero`/bool-mask as one graph (dynamic output
shapes), but the host sync remains (truth premise 7).

## Example
```python
def forward(self, x):
    h = self.lin(x)
    positive = h[h > 0].sum()
    return torch.tanh(h) * positive
```

## Use instead
```python
def forward(self, x):
    h = self.lin(x)
    positive = torch.where(h > 0, h, 0.0).sum()
    return torch.tanh(h) * positive
```
Keep shapes fixed: `torch.where`/`masked_fill` and a reduction instead of selecting, a count via
`mask.sum()`, `output_size=` for `repeat_interleave`, sizes from `x.shape`. Where a dynamic size
is unavoidable, move the op outside the compiled region.

## Fix safety
No automatic fix: replacing a selection by a fixed-shape masked tensor changes the result's shape;
it is only equivalent after a reduction.

## PyTorch reference
GB0036 https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0036.html ·
GB0033 https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0033.html
"""
    VALID = [
        # fixed-shape alternatives, masked writes, sizes from shapes, output_size given
        "import torch\nfrom torch import nn\nclass M(nn.Module):\n"
        "    def forward(self, h, r):\n        h = h.clone()\n        h[h > 0] = 0\n"
        "        pos = torch.where(h > 0, h, 0.0).sum() + (h > 0).sum()\n"
        "        idx = torch.arange(h.shape[0])\n        z = torch.zeros(h.size(0), 4)\n"
        "        rep = torch.repeat_interleave(h, 2, dim=0)\n"
        "        out = h.repeat_interleave(r, dim=0, output_size=8)\n"
        "        return pos, idx, z, rep, out, h.masked_fill(h < 0, 0.0)\n",
        # int arguments and long index tensors are not data-dependent sizes
        "import torch\nfrom torch import nn\nclass M(nn.Module):\n"
        "    def forward(self, x, seq_len, idx: torch.Tensor):\n"
        "        pos = torch.arange(seq_len)\n        rows = x[idx]\n        cols = x[:, idx.long()]\n"
        "        return pos, rows, cols, torch.where(x > 0, x, -x)\n",
        # outside compiled code: data prep in a plain function
        "import torch\ndef prep(batch):\n    keep = batch[batch.sum(1) > 0]\n    return torch.unique(keep)\n",
        # numpy's unique is not torch's
        "import numpy as np\nimport torch\nfrom torch import nn\nclass M(nn.Module):\n"
        "    def forward(self, x):\n        return x * len(np.unique([1, 2, 2]))\n",
        # a mask parameter of unknown dtype is not assumed to be boolean
        "import torch\nfrom torch import nn\nclass M(nn.Module):\n"
        "    def forward(self, x, mask):\n        return x[mask]\n",
        # a KV-cache object annotated as a tensor: its `get_seq_length()` is an int (transformers 5.24)
        "import torch\nfrom torch import nn\nclass M(nn.Module):\n"
        "    def forward(self, x, cache: torch.Tensor | None = None):\n"
        "        cache_length = 0 if cache is None else cache.get_seq_length()\n"
        "        return x + torch.arange(cache_length, cache_length + x.shape[1])\n",
        # transformers 5.24 MoE experts: `@use_experts_implementation` replaces this forward with a
        # `grouped_mm` dispatcher, so the eager loop below is traced only with experts_implementation="eager"
        "import torch\nfrom torch import nn\nfrom transformers.integrations import use_experts_implementation\n"
        "@use_experts_implementation\nclass Experts(nn.Module):\n"
        "    def forward(self, h, top_k_index):\n        out = torch.zeros_like(h)\n"
        "        mask = nn.functional.one_hot(top_k_index, num_classes=4).permute(2, 1, 0)\n"
        "        for e in (mask.sum(dim=(-1, -2)) > 0).nonzero():\n"
        "            pos, tok = torch.where(mask[e[0]])\n            out[tok] += h[tok]\n        return out\n",
        # inside an autograd.Function the finding belongs to FL108
        "import torch\nclass Fn(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, x):\n"
        "        return x[x > 0].sum()\n    @staticmethod\n    def backward(ctx, g):\n        return g\n",
    ]
    INVALID = [
        Invalid(
            "import torch\nfrom torch import nn\nclass M(nn.Module):\n"
            "    def __init__(self):\n        super().__init__()\n        self.lin = nn.Linear(16, 16)\n"
            "    def forward(self, x):\n        h = self.lin(x)\n        return h[h > 0].sum()\n",
            line=9,
        ),
        Invalid(
            "import torch\nfrom torch import nn\nclass M(nn.Module):\n"
            "    def forward(self, x):\n        idx = torch.nonzero(x > 0)\n        rows = (x < 0).nonzero(as_tuple=True)\n"
            "        return idx, rows, torch.where(x > 1)\n",
            line=5,
            count=3,
        ),
        Invalid(
            "import torch\nfrom torch import nn\nclass M(nn.Module):\n"
            "    def forward(self, x):\n        bad = torch.isnan(x) | torch.isinf(x)\n        keep = ~bad\n"
            "        vals = x[keep]\n        return vals, torch.masked_select(x, keep), x.unique()\n",
            line=7,
            count=3,
        ),
        Invalid(
            "import torch\nfrom torch import nn\nclass M(nn.Module):\n"
            "    def forward(self, x):\n        n = (x > 0).sum()\n        pos = torch.arange(n)\n"
            "        pad = x.new_zeros((n, 4))\n        return pos, pad\n",
            line=6,
            count=2,
        ),
        Invalid(
            "import torch\nfrom torch import nn\nclass M(nn.Module):\n"
            "    def forward(self, x):\n        counts = (x > 0).long().sum(1)\n"
            "        return torch.repeat_interleave(x, counts, dim=0), torch.bincount(counts)\n",
            line=6,
            count=2,
        ),
        # `outputs` is a ModelOutput (it has `.attentions`), but `outputs[0]` is still a tensor
        Invalid(
            "import torch\nfrom torch import nn\nclass M(nn.Module):\n    def __init__(self):\n"
            "        super().__init__()\n        self.model = Encoder()\n"
            "    def forward(self, x, labels: torch.Tensor):\n        outputs = self.model(x)\n"
            "        h = outputs[0]\n        h = h[labels != -100]\n        return h, outputs.attentions\n",
            line=10,
        ),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.checker = ShapeChecker()

    def _run(self, found: list[Found], ctx) -> None:
        for at, message, fix in found:
            ctx.report(at, message, fix=fix)

    def visit_Call(self, node: cst.Call, ctx) -> None:
        if autograd_owner(ctx) is None:
            self._run(self.checker.check_Call(node, ctx), ctx)

    def visit_Subscript(self, node: cst.Subscript, ctx) -> None:
        if autograd_owner(ctx) is None:
            self._run(self.checker.check_Subscript(node, ctx), ctx)
