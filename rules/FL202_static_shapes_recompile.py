"""FL202 static-shapes-recompile: `dynamic=False`, `mark_static` or automatic dynamic shapes turned off."""

from __future__ import annotations

import re

import libcst as cst

from fusionlint.rule import Effect, Invalid, Rule

_COMPILE_CALLS = frozenset({"torch.compile", "torch.compiler.compile", "torch._dynamo.optimize"})
_MARK_STATIC = frozenset({"torch._dynamo.mark_static", "torch._dynamo.decorators.mark_static"})
_AUTO_DYNAMIC = "torch._dynamo.config.automatic_dynamic_shapes"
_ALIASED = _COMPILE_CALLS | _MARK_STATIC | {_AUTO_DYNAMIC}
_DYNAMIC_FALSE = re.compile(r"\bdynamic[\s\\]*=[\s\\]*False\b")

_COST = (
    "every new input shape recompiles (measured, torch 2.13 CPU: 1 recompile per new batch size, "
    "recompile_limit (8) hit after 8 sizes, then the forward runs eagerly)"
)


def _is_false(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "False"


_DOCS = """
## What it does
Flags the three ways of turning dynamic shapes off, anywhere in a file (training scripts included):
- `torch.compile(..., dynamic=False)` (also as a decorator, and `torch._dynamo.optimize(..., dynamic=False)`);
- `torch._dynamo.mark_static(x, dim)` on a tensor (a dimension index given, or `x` known to be a tensor);
- `torch._dynamo.config.automatic_dynamic_shapes = False`.

It cannot know whether the shapes really vary; the message says what it costs when they do.
Silence it (`# noqa: FL202`) where every call has the same shapes.

## Why is this bad?
By default dynamo compiles for the first shape, and when a second shape arrives it recompiles
**once** with that dimension symbolic (automatic dynamic shapes), which then serves every size.
The three forms above turn that off: each new size fails the size guard and compiles a new graph.
After `torch._dynamo.config.recompile_limit` (8) recompiles dynamo gives up on the frame, and it
runs **eagerly** from then on, without an error.

Measured with torch 2.13.0+cpu, a Linear+GELU model fed batch sizes 2..11:
- `mark_static(x, 0)` (the fixture): 8 recompiles, the `recompile_limit` warning;
- `torch.compile(model, dynamic=False)`: 8 recompiles, limit hit, then 0 compiled regions (eager);
- `automatic_dynamic_shapes = False`: 8 recompiles, limit hit;
- default `torch.compile(model)`: 1 recompile; `mark_dynamic(x, 0)`: 0 recompiles.
The fixture on torch 2.11.0+cu130 (H200): `mark_static` 8 recompiles, limit hit; the
`mark_dynamic` version 1 (the first call's input is not marked). Create the tensor on its device
before marking it: `x.to("cuda")` returns a new tensor without the mark.
The ground-truth runs (`e4`, `h15`) saw the same for `dynamic=False` with varying batch size and
varying sequence length, on torch 2.13 CPU and torch 2.11 H200.

## Example
```python
compiled = torch.compile(model, dynamic=False)
for batch in loader:          # the last batch is smaller, eval uses another size...
    compiled(batch)
```

## Use instead
```python
compiled = torch.compile(model)            # one recompile, then dynamic
# or, to start dynamic on a known-varying dimension:
torch._dynamo.mark_dynamic(batch, 0)
```
Keep `dynamic=False` only where shapes never change (e.g. padded, fixed-size batches), or bucket
the sizes yourself so that at most a few distinct shapes occur.

## Fix safety
No automatic fix: `dynamic=False` is sometimes deliberate (fixed shapes, CUDA graphs).

## PyTorch reference
No graph-break id (this is a recompile). Recompilation (the page torch's own
`recompile_limit` warning links to):
https://docs.pytorch.org/docs/main/user_guide/torch_compiler/compile/programming_model.recompilation.html
"""


class StaticShapesRecompile(Rule):
    code = "FL202"
    name = "static-shapes-recompile"
    message = "dynamic shapes turned off: " + _COST
    effects = (Effect.RECOMPILE,)
    scope = "file"
    triggers = ("dynamic", "mark_static")

    @classmethod
    def pins(cls, text: str, names: set, aliases: dict) -> bool:
        # the three forms as written: `dynamic=False`, `...automatic_dynamic_shapes = False`, mark_static, or
        # an import alias of one (`from torch._dynamo import mark_static as ms`); timm's
        # `dynamic_img_size=False` is none of these
        if "mark_static" in text or "automatic_dynamic_shapes" in text or _DYNAMIC_FALSE.search(text):
            return True
        return any(aliases.get(n) in _ALIASED for n in names)
    measured_on = ("torch 2.13.0 CPU", "torch 2.11.0 H200")
    docs = _DOCS

    VALID = [
        "import torch\n\nmodel = torch.nn.Linear(4, 4)\ncompiled = torch.compile(model)\n",
        "import torch\n\nmodel = torch.nn.Linear(4, 4)\ncompiled = torch.compile(model, dynamic=True)\n",
        "import torch\n\n\ndef run(model, x):\n    torch._dynamo.mark_dynamic(x, 0)\n    return torch.compile(model)(x)\n",
        # `dynamic=False` of something that is not torch.compile
        "import torch\n\n\ndef build(cfg, dynamic=False):\n    return cfg\n\n\nnet = build({}, dynamic=False)\n",
        # mark_static on a module class marks its attributes static, not a tensor's shape
        "import torch\nfrom torch import nn\n\n\nclass Block(nn.Module):\n    pass\n\n\n"
        "torch._dynamo.mark_static(Block)\n",
        "import torch\n\ntorch._dynamo.config.automatic_dynamic_shapes = True\n",
    ]
    INVALID = [
        Invalid(
            "import torch\n\nmodel = torch.nn.Linear(4, 4)\ncompiled = torch.compile(model, dynamic=False)\n",
            line=4,
        ),
        Invalid(
            "import torch\n\n\n@torch.compile(dynamic=False, fullgraph=True)\ndef f(x):\n    return x.sin() * 2\n",
            line=4,
        ),
        Invalid(
            "import torch\n\n\ndef train(model, loader):\n    step = torch.compile(model)\n"
            "    for x in loader:\n        torch._dynamo.mark_static(x, 0)\n        step(x)\n",
            line=7,
        ),
        Invalid(
            "import torch._dynamo.config as dynamo_config\n\ndynamo_config.automatic_dynamic_shapes = False\n",
            line=3,
        ),
        Invalid(
            "import torch\nfrom torch._dynamo import mark_static\n\n\ndef prep(x):\n"
            "    x = torch.as_tensor(x)\n    mark_static(x)\n    return x\n",
            line=7,
        ),
    ]

    def visit_Call(self, node: cst.Call, ctx) -> None:
        qual = ctx.qualname(node.func)
        if qual in _COMPILE_CALLS:
            for arg in node.args:
                if arg.keyword is not None and arg.keyword.value == "dynamic" and _is_false(arg.value):
                    ctx.report(
                        arg,
                        f"`dynamic=False` turns dynamic shapes off: {_COST}; drop it unless shapes never change",
                    )
            return
        if qual in _MARK_STATIC:
            positional = [a for a in node.args if a.keyword is None and not a.star]
            has_index = len(positional) >= 2 or any(a.keyword is not None and a.keyword.value == "index" for a in node.args)
            if not positional:
                return
            if has_index or ctx.is_tensor(positional[0].value):
                what = "that dimension" if has_index else "every dimension of the tensor"
                ctx.report(
                    node,
                    f"`{ctx.code(node).strip()}` makes {what} static: {_COST}; "
                    "drop it (or use `mark_dynamic`) when the size varies",
                )

    def visit_Assign(self, node: cst.Assign, ctx) -> None:
        if not _is_false(node.value):
            return
        for target in node.targets:
            if ctx.qualname(target.target) == _AUTO_DYNAMIC:
                ctx.report(
                    node,
                    f"`automatic_dynamic_shapes = False` turns dynamic shapes off for every compiled frame: {_COST}",
                )
