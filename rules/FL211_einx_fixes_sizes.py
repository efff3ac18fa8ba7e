"""FL211 einx-fixes-sizes: an einx operation in compiled code fixes every size it sees."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from fusionlint.rule import Effect, Invalid, Rule

_DOCS = """
## What it does
Flags the first call of an einx operation on each path (`einx.add("b n d, d -> b n d", x, bias)`, `einx.where(...)`,
`einx.get_at(...)`, however einx or the operation is imported: the call whose first argument is the
einx expression string) in each function that `torch.compile` traces.

## Why is this bad?
einx works out the shapes of an operation in Python, from the sizes of the tensors it is given, and
keeps the compiled operation keyed by those sizes. Under `torch.compile` that needs each size as a
number: Dynamo fixes every size the operation sees to its value now (the `dynamic` log shows
`eval Eq(s27, 12) [guard added]` on the einx line), so each new size of any of them compiles the frame
again, automatic dynamic shapes cannot make it symbolic, and after `recompile_limit` (8) recompiles the
frame runs eagerly. einops does the same work with symbolic sizes.

Measured with torch 2.13.0+cpu and einx 0.4.3 (backend eager), sequence lengths 8, 12, 16, 20, 24:
`einx.add("b n d, d -> b n d", x, w)`, `einx.subtract("j, i -> i j", i, i)` with `i = torch.arange(n)`,
`einx.sum("b [n] d", x)` and `einx.where("b n, b n d, -> b n d", m, x, 0.)` each recompiled 4 times,
every time on the input's size guard (`tensor 'x' size mismatch at index 1`); the same computations
with einops' `rearrange` or plain torch ops recompiled once (the dimension made dynamic). The fixture
(`fixtures/FL211_einx_fixes_sizes`) shows it. On the recall bench the sizes were fixed at five einx
lines of x-transformers 2.x and at vector-quantize-pytorch's `einx.get_at` (2 models); einx 0.4.3's
deprecated `einx.rearrange` also breaks the graph (a skipped `warnings.warn`).

Only the first einx call of a block is reported, and no call after one in a block around it: that
call ran first and fixed the sizes the later calls see again. einx calls on sizes that never change (weights, fixed lengths) cost nothing:
silence the finding there (`# noqa: FL211`).

## Example
```python
def forward(self, x):                                    # x: (batch, seq, dim), seq varies
    return einx.add("b n d, d -> b n d", x, self.bias)   # every new seq compiles again
```

## Use instead
Express the operation with torch broadcasting or einops, which keep sizes symbolic:
```python
def forward(self, x):
    return x + self.bias
```

## Fix safety
No automatic fix: each einx expression needs its own torch or einops spelling.

## PyTorch reference
No graph-break id (this is a recompile):
https://docs.pytorch.org/docs/main/user_guide/torch_compiler/compile/programming_model.recompilation.html
"""

_HEAD = "import einx\nimport torch\nfrom torch import nn\n\n\nclass Model(nn.Module):\n"


class EinxFixesSizes(Rule):
    code = "FL211"
    name = "einx-fixes-sizes"
    message = "an einx operation in compiled code fixes every size it sees: each new size recompiles"
    effects = (Effect.RECOMPILE,)
    triggers = ("einx",)
    measured_on = ("torch 2.13.0 CPU, einx 0.4.3",)
    docs = _DOCS

    VALID = [
        # einops keeps sizes symbolic
        "import einops\nimport torch\nfrom torch import nn\n\n\nclass Model(nn.Module):\n"
        "    def forward(self, x):\n        return einops.rearrange(x, 'b n d -> b d n')\n",
        # outside compiled code
        "import einx\n\n\ndef describe(x):\n    return einx.sum('b [n] d', x)\n",
        # an einx helper that is no operation on an expression
        _HEAD + "    def forward(self, x):\n        einx.backend.get('torch')\n        return x * 2\n",
    ]
    INVALID = [
        Invalid(_HEAD + "    def forward(self, x):\n        return einx.add('b n d, d -> b n d', x, self.bias)\n", line=8, count=1),
        # imported by name; only the first call of the function
        Invalid(
            "from einx import subtract, where\nimport torch\nfrom torch import nn\n\n\nclass Model(nn.Module):\n"
            "    def forward(self, x, mask):\n        i = torch.arange(x.shape[1])\n"
            "        rel = subtract('j, i -> i j', i, i)\n        return where('b n, b n d, -> b n d', mask, x, 0.) + rel.sum()\n",
            line=9,
            count=1,
        ),
        # a call in a branch does not hide the call after the branch; the one after it in the same block is hidden
        Invalid(_HEAD + "    def forward(self, x, mask=None):\n        if mask is not None:\n"
                "            x = einx.where('b n, b n d, -> b n d', mask, x, 0.)\n"
                "        x = einx.add('b n d, d -> b n d', x, self.bias)\n        return einx.sum('b [n] d', x)\n",
                line=9, count=2),
        # an alias, in a compiled function
        Invalid("import einx as ex\nimport torch\n\n\n@torch.compile\ndef pool(x):\n    return ex.sum('b [n] d', x)\n",
                line=7, count=1),
    ]

    def visit_Call(self, node: cst.Call, ctx) -> None:
        operation = self._operation(node, ctx)
        if operation is None:
            return
        # an einx call that surely ran before this one (in this block or one around it) has fixed the
        # sizes here already; one in a branch has not (x-transformers' Attention.forward: the einx call
        # in the model's branch at line 2752, not the first one in the function, fixed the batch size)
        reported = ctx.memo(("FL211", id(ctx.function.node) if ctx.function else None), set)
        blocks = {id(p) for p in ctx.iter_parents() if isinstance(p, cst.IndentedBlock)}
        if reported & blocks:
            return
        reported.add(next((id(p) for p in ctx.iter_parents() if isinstance(p, cst.IndentedBlock)), None))
        ctx.report(
            node,
            f"`{operation}` works out its shapes in Python from the sizes of its tensors: Dynamo fixes each of "
            "them to its value now, so every new size recompiles the frame (automatic dynamic shapes cannot "
            "help; after 8 recompiles the frame runs eagerly); spell it with torch broadcasting or einops, "
            "which keep sizes symbolic (the einx calls after it in this block see the sizes it fixes)",
        )

    @staticmethod
    def _operation(node: cst.Call, ctx) -> Optional[str]:
        """``einx.add`` for a call of an einx operation: a function of the einx package whose first
        argument is the expression string."""
        name = ctx.qualname(node.func)
        if name is None or not name.startswith("einx.") or name.count(".") != 1:
            return None
        first = node.args[0] if node.args else None
        if first is None or first.keyword is not None or not isinstance(first.value, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
            return None
        return name
