"""FL103 data-dependent-output-shape: ops whose output size depends on tensor values, in compiled code.

The check itself is ``fusionlint.analysis.dynamic_shapes`` (FL108 runs it inside autograd.Function bodies).
"""

from __future__ import annotations

import libcst as cst

from fusionlint.analysis.dynamic_shapes import ShapeChecker
from fusionlint.analysis.judge import Found
from fusionlint.rule import Effect, Invalid, Rule


class DataDependentOutputShape(Rule):
    code = "FL103"
    name = "data-dependent-output-shape"
    message = "op with a data-dependent output shape inside compiled code: graph break and host sync"
    effects = (Effect.GRAPH_BREAK, Effect.HOST_SYNC)
    explains_tensors = True
    triggers = (
        "[", "nonzero", "argwhere", "masked_select", "unique", "bincount", "where(", "repeat_interleave",
        "arange(", "zeros(", "ones(", "empty(", "full(", "rand", "linspace(", "narrow(", "one_hot(", "div(",
        "floor_divide(", "tensor(",
    )
    gb_ids = ("GB0036", "GB0033", "GB0124", "GB0246")
    measured_on = ("torch 2.13.0 CPU", "torch 2.11.0 H200")
    docs = """
## What it does
Flags ops in code that `torch.compile` traces whose output *size* depends on tensor values:
`torch.nonzero`/`.nonzero()`, boolean-mask indexing (`h[h > 0]`, `h[mask]` with `mask` a
comparison, `isnan(...)`, `~m`, `m & n` or a name bound only to such), `masked_select`,
`unique`/`unique_consecutive`, `argwhere`, `bincount`, one-argument `torch.where(cond)`,
`repeat_interleave` with a tensor `repeats` and no `output_size`, and
`arange`/`zeros`/`ones`/`empty`/`full`/`rand`/`randn`/`linspace`/`new_zeros`/`new_ones`/
`new_empty`/`new_full` sized by a tensor; slices bounded by a tensor (`h[:, : lens.max()]`),
indexing with a 0-d tensor (`h[lens.argmax()]`, also as a write target: `out[n] = 1`, `out[:, :k] = 0`),
`narrow` with a tensor start or length, a size, count or shift from a tensor in `view`/`reshape`/
`expand`/`repeat`/`tile`/`topk`/`kthvalue`/`chunk`/`split`/`roll`/`tril`/`triu`/`unfold`/`select`/
`diagonal`/`movedim`/`squeeze`/`transpose`/`unflatten`/`multinomial`, `torch.eye`, `torch.randint`,
`F.pad`, `F.interpolate(size=...)` and `F.avg_pool2d`/`F.max_pool2d`,
and `F.one_hot` without `num_classes`. A masked *write* (`h[mask] = 0`) is not flagged.

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

Sizes, offsets and indices read from a 0-d tensor (measured with torch 2.13.0+cpu, backend "eager",
`lens` a forward argument; `tests/test_gb_forms.py` re-measures each):

| pattern | graph-break id | what Dynamo does |
|---|---|---|
| `h[:, : lens.max()]`, `h[s:e]`, `h[::step]` with tensor bounds | GB0124 (`Tensor.item()`) | cannot resume: the frame falls back to eager (0 compiled graphs), or compiles up to the slice and runs the rest of the function eagerly |
| `h[lens.argmax()]`, `h[:, lens.sum() - 10]` (a 0-d index) | GB0033 | 2 graphs |
| `h.narrow(1, 0, lens.max())`, `torch.narrow(h, 1, 0, n)` with a tensor `n` | GB0033 | 2 graphs |
| `F.one_hot(idx)` / `F.one_hot(idx, num_classes=-1)` | GB0246 / GB0033 | 2 frames |
| `F.one_hot(idx, max(idx.max() + 2, n))` (a tensor width, here through the builtin `max`: mixture-of-experts 0.2.3's `safe_one_hot`, recall bench) | GB0033 | measured with `tests/test_fixture_effects`' helper; the same `max(...)` used in arithmetic: no break |
| `h.view(lens.min() + 1, -1)`, `h[:1].expand(lens.max(), -1)`, `h.repeat(lens.min(), 1)`, `h.chunk(lens.max())`, `h.roll(lens.min(), 0)`, `h.topk(lens.min(), dim=-1)`, `torch.tril(h, lens.min())`, `torch.eye(lens.max() * 2 + 2)`, `F.pad(h, (0, lens.min()))` | GB0033 | the break id (`tests/test_gb_forms.py`); regions not counted |
| `F.interpolate(h[None], size=lens.max() * 2)`, `h.unfold(1, lens.max(), 1)`, `torch.randint(0, lens.max(), (8,))`, `h.select(1, lens.min())`, `F.max_pool2d(h[None], lens.min() + 1)`, `h.unflatten(1, (lens.min() + 1, -1))` | GB0033 | the break id (`tests/test_gb_forms.py`); regions not counted |
| `out[lens.argmax()] = 0` (0-d index of a write) / `out[:, : lens.min()] = 0` | GB0033 / GB0124 | the break id (`tests/test_gb_forms.py`); regions not counted |

A size that torch makes from Python numbers (`torch.div(seq_len, w, rounding_mode="trunc")`,
`torch.floor_divide`, `torch.tensor`; transformers' LED and Longformer) is a constant while tracing as
long as those numbers are: measured with torch 2.13.0+cpu, `x.new_zeros((b, torch.div(seq_len, 4,
rounding_mode="trunc")))` with `seq_len` from `x.size()` breaks 0 times over one length and once
(GB0033) after a second length (automatic dynamic shapes) or with `dynamic=True`. The finding says so
("once `seq_len` is a dynamic size"); made from literal numbers only, it is not reported. The same
holds for a shape entry of `view`/`reshape`/`as_strided` (`x.view(b, torch.div(x.size(1), 4,
rounding_mode="trunc"), 4, d)`, LED's `_chunk`; measured: 0 breaks over one length, 1 after a second
length, and `n // 4` instead: 0 in both).

Not flagged, because they measured no break: `h[:, idx]` with a 1-d index tensor, `h[idx.view(1)]`,
`h.index_select(0, idx.view(1))`, `h.narrow(1, 0, 3)`, `F.one_hot(idx, num_classes=10)`, and a
*list* sliced by a tensor (`parts[: lens.min()]`, which torch 2.13 traces; its registry id GB0038
"Dynamic slicing with Tensor arguments" did not show). A 0-d index is recognised only when it is
surely 0-d: a reduction without `dim` (`.max()`, `.argmax()`, `.sum()`...), arithmetic of one with
numbers, or a name bound only to such.

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
GB0033 https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0033.html ·
GB0246 https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0246.html
"""
    VALID = [
        # sizes unpacked from a parameter nothing shows to be a tensor (focalnet's `input_dimensions`)
        "import torch\nfrom torch import nn\nclass M(nn.Module):\n"
        "    def forward(self, x, input_dimensions, groups):\n        height, width = input_dimensions\n"
        "        b, _, c = x.shape\n        n = x.shape[1] // groups\n"
        "        return x.view(b, height, width, c).split(n, dim=1)[0].repeat(1, height * width, 1)\n",
        # the size of a write's slice from shapes, a masked write
        "import torch\nfrom torch import nn\nclass M(nn.Module):\n"
        "    def forward(self, x):\n        out = x.clone()\n        out[:, : x.shape[1] // 2] = 0\n"
        "        out[x > 0] = 1\n        return out\n",
        # sizes from shapes, a 1-element index tensor, one_hot with its width (measured: no break)
        "import torch\nimport torch.nn.functional as F\nfrom torch import nn\nclass M(nn.Module):\n"
        "    def forward(self, h, lens):\n        a = h[:, : h.shape[1] // 2]\n        b = h[lens.argmax().view(1)]\n"
        "        c = h.narrow(1, 0, 3)\n        d = F.one_hot(lens, num_classes=10)\n        e = h[:, lens]\n"
        "        return a, b, c, d, e\n",
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
        # a width that is a tensor value, through the builtin max (measured: GB0033 at the one_hot line)
        Invalid(
            "import torch\nimport torch.nn.functional as F\nfrom torch import nn\n\nclass M(nn.Module):\n"
            "    def forward(self, x):\n        idx = x.long()\n        top = idx.max() + 1\n"
            "        return F.one_hot(idx, max(top + 1, 8)) * max(top, 8)\n",
            line=9,
            count=1,
        ),
        Invalid(
            "import torch\nimport torch.nn.functional as F\nfrom torch import nn\nclass M(nn.Module):\n"
            "    def forward(self, h, lens):\n        a = h[:, : lens.max()]\n        idx = lens.argmax()\n"
            "        b = h[idx + 1]\n        c = h.narrow(1, 0, lens.max())\n        d = F.one_hot(lens)\n"
            "        return a, b, c, d\n",
            count=4,
        ),
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
        if ctx.autograd_function is None:
            self._run(self.checker.check_Call(node, ctx), ctx)

    def visit_Subscript(self, node: cst.Subscript, ctx) -> None:
        if ctx.autograd_function is None:
            self._run(self.checker.check_Subscript(node, ctx), ctx)
