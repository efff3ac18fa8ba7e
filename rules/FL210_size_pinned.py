"""FL210 size-pinned: compiled code reads a tensor's size in a way that fixes it: `(size / k).is_integer()`."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from fusionlint.analysis.walk import iter_nodes
from fusionlint.rule import Effect, Invalid, Rule, module_example
from fusionlint.semantic.sizes import Sizes

_DOCS = """
## What it does
Flags compiled code that needs a Python number computed from a tensor's size:
- `.is_integer()` on a true division of a size, directly or through a local bound only to one:
  `m = seqlen / multiple` then `if m.is_integer():`, with `seqlen = x.shape[1]` (lucidrains'
  `pad_to_multiple` helper: local-attention 1.11, soft-moe-pytorch 0.1.9, and the packages that copy it);
- `range(...)`, the `steps` of `torch.linspace`/`torch.logspace` or the count of `t.chunk(n, dim)` given
  an int made from a size by Python or numpy float math: `int(math.log2(L))`, `int(sqrt(n))`,
  `math.ceil(n / k)`, `int(np.ceil(n / k))` (TabNet's ghost batch norm), arithmetic on one
  (`num_steps - 2`), or a local bound only to those (mambapy 1.2's parallel scan, vit-pytorch's RvT);
  the first such use of a size in a function (a later one is decided by the first one's guard);
- `t.split(s, dim)` / `torch.split(t, s, dim)` where `s` caps a number at a size,
  `min(seq_len, bucket_size)` (ring-attention-pytorch's buckets); the first such split in a function
  (a second split by the same `s` adds no guard).

## Why is this bad?
Under dynamic shapes a size is a symbol and `seqlen / multiple` a symbolic float. Asking whether that
float is an integer needs its value: Dynamo guards on the float being exactly what it is now, so every
new size fails the guard and recompiles, even when the answer stays the same, and after
`torch._dynamo.config.recompile_limit` (8) recompiles the frame runs **eagerly**. Measured with torch
2.13.0+cpu (backend eager), sequence lengths 16, 24, 32, 40, 48 (all multiples of 8): 4 recompiles,
each after the first with the guard `(x.size()[1] / 8) == 3.0` on the `if m.is_integer():` line;
with `if seqlen % multiple == 0:` 1 recompile (the one that makes the length symbolic); the fixture
(`fixtures/FL210_size_pinned`) shows the same. On the recall bench (first runs, 2026-12-05) the guard
failed on that line in 5 local-attention models and 1 soft-moe model.

The other forms, measured the same way (`tests/test_size_pinned_forms.py`, lengths 16, 32, 64, 128):
`for _ in range(int(math.log2(L)) - 2)` recompiled 3 times with the guard
`((-2) + math.trunc(math.log2(torch.sym_float(x.size()[1])))) == 2` on the `for` line;
`torch.linspace(-1.0, 1.0, steps=int(sqrt(n)))` with `math.trunc(torch._sym_sqrt(...)) == 4` on its
line; `x.split(min(x.shape[1], 8), dim=1)` with the piece count
`(((-1) + x.size()[1] + min(8, x.size()[1])) // min(8, x.size()[1])) == 2`. The recall bench recorded
these guards in mambapy's `pscan.py:54`, vit-pytorch's `rvt.py:31` and ring-attention-pytorch's
`ring_flash_attention.py:145`. Not flagged: `x.split(x.shape[1] // 2, dim=1)` (the count stays 2 and its
guard holds), `int(n // 4)` and other integer arithmetic on a size (it stays symbolic). TabNet's
`x.chunk(int(np.ceil(x.shape[0] / self.virtual_batch_size)), 0)` recompiled for every new batch size on the
recall bench (`(x.size()[0] / 128) == 0.09375`: numpy takes the quotient as a number); measured the same
way, `np.ceil(x.shape[0] / 4)` fixed the quotient (4 recompiles for 5 batch sizes), and
`x.chunk(math.ceil(x.shape[0] / 4), 0)` recompiled with `math.ceil(x.size()[0] / 4) == 3` on its line.

Measured the same way and not flagged: `torch.linspace(-1.0, 1.0, steps=n)` (and `torch.logspace`) with
`n` a size also fixes it (4 recompiles for the 5 lengths; `torch.arange(n) / n`: 1), and perceiver-pytorch
0.11's Fourier positions fixed its input sizes that way on the recall bench. But the sizes handed to
`linspace` in the corpora are mostly model constants (a number of bins, of position axes: transformers'
chmv2 and esmfold2, diffusers' ltx2 and a Sana refiner: 8 calls), whose specialisation costs nothing, so that form would
mostly be noise.

## Example
```python
def pad_to_multiple(t, multiple):
    seqlen = t.shape[1]
    m = seqlen / multiple
    if m.is_integer():
        return t
    return F.pad(t, (0, 0, 0, math.ceil(m) * multiple - seqlen))
```

## Use instead
Test divisibility on the integer size; Dynamo guards on the remainder's test, which holds for every
size with the same answer:
```python
    if seqlen % multiple == 0:
        return t
    return F.pad(t, (0, 0, 0, -seqlen % multiple))
```

## Fix safety
No automatic fix yet: the rewrite also changes the `math.ceil(m)` that usually follows.

## PyTorch reference
No graph-break id (this is a recompile):
https://docs.pytorch.org/docs/main/user_guide/torch_compiler/compile/programming_model.recompilation.html
"""


def _fwd(body: str) -> str:
    return module_example("    def forward(self, x):\n" + body)


class SizePinned(Rule):
    code = "FL210"
    name = "size-pinned"
    message = "compiled code reads a tensor's size in a way that fixes it: every new size recompiles"
    effects = (Effect.RECOMPILE,)
    triggers = ("is_integer", "split", "range", "linspace", "logspace", "chunk")
    measured_on = ("torch 2.13.0 CPU",)
    docs = _DOCS

    VALID = [
        # divisibility tested on the int size (measured: 1 recompile for 5 sizes, the automatic-dynamic one)
        _fwd("        n = x.shape[1]\n        if n % 8 == 0:\n            return x\n        return x * 2\n"),
        # a float that is no size
        _fwd("        m = 10 / 4\n        if m.is_integer():\n            return x\n        return x * 2\n"),
        # a local bound to something else on another path
        _fwd("        m = x.shape[1] / 8\n        if self.training:\n            m = 2.5\n"
             "        return x if m.is_integer() else x * 2\n"),
        # outside compiled code
        "import torch\n\n\ndef describe(x):\n    return (x.shape[1] / 8).is_integer()\n",
        # `linspace` with a size: measured to fix it too, left alone (the sizes it gets are mostly model constants)
        _fwd("        n_bins = x.shape[1]\n        bins = torch.linspace(0.0, 1.0, n_bins)\n"
             "        return x * bins[None, :, None]\n"),
        # half of a size: the count stays 2; a fixed split size; a plain size as a loop count
        _fwd("        a, b = x.split(x.shape[1] // 2, dim=1)\n        c = x.split(4, dim=2)\n"
             "        for _ in range(x.shape[1] // 4):\n            a = a * 2\n        return a + b + c[0]\n"),
        # float math on something that is no size
        _fwd("        steps = int(math.log2(self.dim))\n        for _ in range(steps):\n            x = x * 2\n"
             "        return x\n").replace("import torch\n", "import math\nimport torch\n", 1),
    ]
    INVALID = [
        # mambapy's parallel scan: the trip count is log2 of the length
        Invalid(_fwd("        num_steps = int(math.log2(x.size(1)))\n        for _ in range(num_steps - 2):\n"
                     "            x = x * 2\n        return x\n").replace("import torch\n", "import math\nimport torch\n", 1),
                line=9, count=1),
        # TabNet's ghost batches: numpy's ceil of the batch size over the virtual batch size
        Invalid(_fwd("        chunks = x.chunk(int(np.ceil(x.shape[0] / 128)), 0)\n        return chunks[0]\n")
                .replace("import torch\n", "import numpy as np\nimport torch\n", 1), line=8, count=1),
        # a grid side from the token count, as linspace steps
        Invalid(_fwd("        side = int(x.shape[1] ** 0.5)\n        return x + torch.linspace(0.0, 1.0, side).sum()\n"),
                line=8, count=1),
        # buckets capped at the length: the first split only
        Invalid(_fwd("        bucket = min(x.shape[1], 8)\n        a = x.split(bucket, dim=1)\n"
                     "        b = x.split(bucket, dim=1)\n        return a[0] + b[0]\n"), line=8, count=1),
        # lucidrains' pad_to_multiple, reached from forward
        Invalid(
            "import torch\nimport torch.nn.functional as F\nfrom torch import nn\n\n\n"
            "def pad_to_multiple(t, multiple):\n    seqlen = t.shape[1]\n    m = seqlen / multiple\n"
            "    if m.is_integer():\n        return t\n    return F.pad(t, (0, 0, 0, 3))\n\n\n"
            "class Model(nn.Module):\n    def forward(self, x):\n        return pad_to_multiple(x, 8) * 2\n",
            line=9,
            count=1,
        ),
        Invalid(_fwd("        return x if (x.size(1) / 4).is_integer() else x * 2\n"), line=7, count=1),
        # the window first: `k / size` is a symbolic float too
        Invalid(_fwd("        B, N, C = x.shape\n        ratio = 64 / N\n        if ratio.is_integer():\n"
                     "            return x\n        return x * 2\n"), line=9, count=1),
    ]

    def visit_Call(self, node: cst.Call, ctx) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "split":
            return self._split(node, ctx)
        name = ctx.qualname(func)
        if name in ("range", "torch.linspace", "torch.logspace", "torch.chunk"):
            return self._count(node, name, ctx)
        if isinstance(func, cst.Attribute) and func.attr.value == "chunk" and ctx.is_tensor(func.value):
            return self._count(node, "chunk", ctx)
        if not (isinstance(func, cst.Attribute) and func.attr.value == "is_integer" and not node.args):
            return
        found = self._size_division(func.value, ctx)
        if found is None:
            return
        size, tensor = found
        ctx.report(
            node,
            f"`{ctx.code(node).strip()}` tests a size divided by a number (`{size}`, a size of `{tensor}`) as a "
            "Python float: Dynamo guards on the float's exact value, so every new size recompiles, and after "
            "8 recompiles the frame runs eagerly; test divisibility on the int instead (`n % k == 0`)",
        )

    def _count(self, node: cst.Call, name: str, ctx) -> None:
        """``range(n)``, ``torch.linspace(a, b, steps=n)``: Python needs the int ``n`` itself. A size is
        left alone (most sizes handed to them are model constants, see the docs); an int made from a
        size by float math (``int(math.log2(L))``, ``int(sqrt(n))``) is a sequence length or a grid
        side that varies, and each value it takes compiles the frame again."""
        if name == "range":
            counts = [a.value for a in node.args if a.keyword is None and not a.star]
        elif name in ("chunk", "torch.chunk"):  # `t.chunk(n, dim)`, `torch.chunk(t, n, dim)`: how many pieces
            positional = [a.value for a in node.args if a.keyword is None and not a.star]
            counts = positional[int(name == "torch.chunk"):][:1]
            counts += [a.value for a in node.args if a.keyword is not None and a.keyword.value == "chunks"]
        else:
            counts = [a.value for a in node.args if (a.keyword is not None and a.keyword.value == "steps")]
            positional = [a.value for a in node.args if a.keyword is None and not a.star]
            counts += positional[2:3]
        sizes = Sizes(ctx)
        for count in counts:
            found = sizes.through_float_math(count)
            if found is None:
                continue
            size, tensor = found
            # a second count from the same size is fixed by the first one's guard (measured: mambapy's
            # down sweep, `range(num_steps - 3)` after `range(num_steps - 2)`, recorded no guard of its own)
            seen = ctx.memo(("FL210-count", id(ctx.function.node) if ctx.function else None), set)
            if (size, tensor) in seen:
                return
            seen.add((size, tensor))
            what = {"range": "the trip count of a Python loop", "chunk": "the number of pieces",
                    "torch.chunk": "the number of pieces"}.get(name, "the number of steps")
            ctx.report(
                node,
                f"`{ctx.code(count).strip()}` is {what}, an int computed from the size `{size}` of `{tensor}` "
                "by Python float math: Dynamo needs its value, guards on it, and recompiles the frame for every "
                "size that changes it (after 8 recompiles the frame runs eagerly); compute it from the int "
                "size with integer operations, or pass it in as a constant",
            )
            return

    def _split(self, node: cst.Call, ctx) -> None:
        """``t.split(s, dim)`` / ``torch.split(t, s, dim)`` with ``s`` capped at a size (``min(n, bucket)``):
        how many pieces come out is a Python int Dynamo guards on (``ceil(n / min(n, bucket))``), so a size
        that changes it recompiles."""
        func = node.func
        if ctx.qualname(func) == "torch.split":
            tensor_arg = node.args[0].value if node.args and node.args[0].keyword is None else None
            rest = node.args[1:]
        else:
            tensor_arg, rest = func.value, node.args
        if tensor_arg is None or not ctx.is_tensor(tensor_arg):
            return
        chunk = next((a.value for a in rest if a.keyword is None and not a.star), None)
        if chunk is None:
            chunk = next((a.value for a in rest if a.keyword is not None and a.keyword.value in ("split_size", "split_size_or_sections")), None)
        if chunk is None or isinstance(chunk, (cst.List, cst.Tuple, cst.Integer)):
            return
        tensor = Sizes(ctx).capped(chunk)
        if tensor is None:  # `n // 2` keeps the count at 2; a constant size may split a dimension that never varies
            return
        # the same pieces' size again makes the same guard (measured: Dynamo names only the first split)
        seen = ctx.memo(("FL210-split", id(ctx.function.node) if ctx.function else None), set)
        if ctx.code(chunk).strip() in seen:
            return
        seen.add(ctx.code(chunk).strip())
        ctx.report(
            node,
            f"`{ctx.code(node).strip()}` splits into pieces of `{ctx.code(chunk).strip()}`, a number capped at a size of `{tensor}`: "
            "the number of pieces is a Python int Dynamo guards on, so every size that changes it recompiles "
            "the frame (after 8 recompiles it runs eagerly); where the algorithm allows, split into a fixed "
            "number of pieces (`.chunk(k, dim)`)",
        )

    def _size_division(self, expr: cst.BaseExpression, ctx) -> Optional[tuple[str, str]]:
        """(the size as written, its tensor) when ``expr`` is ``size / k`` (or ``k / size``), or a local
        every binding of which in the function is one."""
        sizes = Sizes(ctx)
        if isinstance(expr, cst.Name) and ctx.function is not None:
            values = [
                stmt.value for stmt in iter_nodes(ctx.function.node.body, (cst.Assign,))
                if any(isinstance(t.target, cst.Name) and t.target.value == expr.value for t in stmt.targets)
            ]
            found = [self._division(v, sizes, ctx) for v in values]
            if found and all(f is not None for f in found):
                return found[0]
            return None
        return self._division(expr, sizes, ctx)

    @staticmethod
    def _division(expr: cst.BaseExpression, sizes: Sizes, ctx) -> Optional[tuple[str, str]]:
        if not (isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Divide)):
            return None
        for side in (expr.left, expr.right):
            tensor = sizes.of(side)
            if tensor is not None:
                return ctx.code(side).strip(), tensor
        return None
