"""FL207 size-formatted-into-string: compiled code builds a string from a tensor's size, which fixes that size."""

from __future__ import annotations

import re

import libcst as cst

from fusionlint.rule import Effect, Invalid, Rule
from fusionlint.semantic.sizes import Sizes


# a printf-style conversion's type letter (`%s`, `%5.2f`, `%(name)d`); `%%` is a literal percent sign
_CONVERSION = re.compile(r"%(?:\([^)]*\))?[#0\- +]*(?:\*|\d+)?(?:\.(?:\*|\d+))?([a-zA-Z])")


def _built_only_on_failure(ctx) -> bool:
    """The string is built only when something has gone wrong, or not while tracing: in a ``raise``, an
    ``assert`` statement (its message is evaluated only when the test fails), a ``lambda``, or a block
    that ends by raising. (A logging call's message is built while tracing, before the call breaks the
    graph: it counts.)"""
    for parent in ctx.iter_parents():
        if isinstance(parent, (cst.Raise, cst.Assert, cst.Lambda)):
            return True
        if isinstance(parent, cst.IndentedBlock):
            last = parent.body[-1] if parent.body else None
            if isinstance(last, cst.SimpleStatementLine) and any(isinstance(s, cst.Raise) for s in last.body):
                return True
        if isinstance(parent, cst.FunctionDef):
            return False
    return False


def _pinned(ctx) -> frozenset:
    """Sizes fixed to one value by an equality check that runs whenever the string is built: a
    statement of the block holding it, or of a block around it (``torch._assert(H == 224, ...)``,
    ``_assert(H == self.img_size[0] and W == ..., ...)``, ``assert H == 224``); a check in another
    branch does not count. Dynamo guards on that equality anyway, so formatting the size costs no
    further recompile."""
    found: set = set()
    for parent in ctx.iter_parents():
        if isinstance(parent, cst.IndentedBlock):
            found |= ctx.memo(("FL207-checked", id(parent)), lambda: _equality_checked(parent.body, ctx))
        elif isinstance(parent, (cst.FunctionDef, cst.Lambda)):
            break
    return frozenset(found)


def _equality_checked(statements, ctx) -> frozenset:
    found: set = set()

    def note(test: cst.BaseExpression) -> None:
        if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
            note(test.left)
            note(test.right)
        elif isinstance(test, cst.Comparison) and len(test.comparisons) == 1 and isinstance(test.comparisons[0].operator, cst.Equal):
            found.add(ctx.code(test.left).strip())
            found.add(ctx.code(test.comparisons[0].comparator).strip())

    for line in statements:
        if not isinstance(line, cst.SimpleStatementLine):
            continue  # a check inside a compound statement may not run
        for small in line.body:
            if isinstance(small, cst.Assert):
                note(small.test)
            elif isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
                call = small.value
                if call.args and call.args[0].keyword is None:
                    note(call.args[0].value)
    del note  # a nested function that calls itself is a reference cycle (it holds ctx, and so the file's tree)
    return frozenset(found)


_DOCS = """
## What it does
Flags an f-string in compiled code that puts a tensor's size into literal text:
`f"height ({H}) must be divisible by {p}"` after `B, C, H, W = x.shape`, `f"h{x.shape[2]}"`,
`f"n={x.numel()}"`, `"%s x %s" % (H, W)`; also arithmetic on a size (`f"{H // p} patches"`). The
usual place is an assertion helper whose message is built on every call (`torch._assert(cond,
f"...")`, timm's `_assert`) and a cache key (`self.cache[f"{h}x{w}"]`).

## Why is this bad?
Under dynamic shapes a size is a symbol, but joining it into a string needs its value: Dynamo
specialises the size to the number it has now and guards on it. The dimension that automatic
dynamic shapes made symbolic is constant again, so every new size recompiles, and after
`torch._dynamo.config.recompile_limit` (8) recompiles the frame runs **eagerly**.

Measured with torch 2.13.0+cpu (backend eager, image sizes 32, 40, ... ; a frame that does not
format the size compiles twice: once static, once with the size symbolic):
- `torch._assert(H % 4 == 0, f"Input height ({H}) must be divisible by 4")`: a new frame for every
  size; with 10 sizes 8 recompiles and the `recompile_limit` warning; the fixture
  (`fixtures/FL207_size_formatted_into_string`, heights 16, 20, 24, 28) 3 recompiles, 1 without the f-string;
- the same for `f"h={x.shape[2]}"`, `f"h={H + 1}"`, `f"h={H // 4}"`, `f"h={H!r}"`, `f"{H}x{W}"`,
  `f"n={x.numel()}"`, `{f"h{x.shape[2]}": 1}`, `"h=%s" % (H,)`, even when the string is never used
  (`"h=%d" % (H,)` and `"h=%s" % H` gave one frame for 6 sizes and are not flagged);
- not for an f-string that is only the value (`f"{H}"`), a whole shape (`f"{x.shape}"`,
  `f"{tuple(x.shape)}"`), `"h={}".format(H)`, an `assert` statement's message (built only when it
  fails), a message built only before `raise`, or a size that never changes (a channel count): 2 frames.
- A size checked for equality where the string is built (`_assert(H == self.img_size[0], f"... {H} ...")`,
  in the same block or a block around it) is fixed by that check already; it is not reported.
- `str(H)` is a graph break as well (GB0059).
- In a logging call (`log.warning(f"h={H}")`) or `print`: 7 frames for 6 sizes, 2 with a constant
  message. The call is a graph break too (FL104); its message is built while tracing, before it.

The same probe on torch 2.11.0+cu130 (CPU tensors, on the H200 machine) gave the same frame counts.
On a real model: timm 1.0.31's `vit_tiny_patch16_224` with `dynamic_img_size=True` compiled a new
frame for each of 5 image sizes; with `PatchEmbed`'s two `_assert` messages made constant, 2.
transformers 5.24.0's `LlavaModel.get_placeholder_mask` (the check that the image features match the
image tokens, repeated in most vision-language models), compiled and called with 6 feature counts:
7 frames; the same code with a constant message, 3.

## Example
```python
def forward(self, x):
    B, C, H, W = x.shape
    torch._assert(H % self.patch == 0, f"height {H} is not a multiple of {self.patch}")
    return self.proj(x)
```

## Use instead
A constant message, or an `assert` statement, whose message is built only when it fails:
```python
def forward(self, x):
    B, C, H, W = x.shape
    assert H % self.patch == 0, f"height {H} is not a multiple of {self.patch}"
    return self.proj(x)
```

## Fix safety
No automatic fix: an `assert` statement is removed under `python -O`, and a cache keyed by a
string needs another key (a tuple of sizes); which one fits is the author's choice.

## PyTorch reference
No graph-break id (this is a recompile):
https://docs.pytorch.org/docs/main/user_guide/torch_compiler/compile/programming_model.recompilation.html
"""


def _fwd(body: str) -> str:
    return "import torch\nfrom torch import nn\n\n\nclass Model(nn.Module):\n    def forward(self, x):\n" + body


class SizeFormattedIntoString(Rule):
    code = "FL207"
    name = "size-formatted-into-string"
    message = "a tensor size formatted into a string in compiled code: every new size recompiles"
    effects = (Effect.RECOMPILE,)
    triggers = ("shape", "size(", "numel(")
    measured_on = ("torch 2.13.0 CPU", "torch 2.11.0 CPU")
    docs = _DOCS

    VALID = [
        # the value alone, a whole shape, str.format: no specialisation (measured)
        _fwd("        H = x.shape[2]\n        key = f\"{H}\"\n        return x * 2, f\"{x.shape}\", \"h={}\".format(H)\n"),
        # built only when the check fails
        _fwd("        B, C, H, W = x.shape\n        assert H % 4 == 0, f\"height ({H}) must be divisible by 4\"\n"
             "        if W % 4:\n            raise ValueError(f\"width ({W}) must be divisible by 4\")\n        return x\n"),
        # not a size: ndim, a loop index, a Python number
        _fwd("        n = 3\n        msg = f\"{x.ndim}D input, {n} heads\"\n        return [f\"layer{i}\" for i in range(4)]\n"),
        # the block's checks already fix the sizes to one value (timm's CrossViT / TNT patch embeddings)
        _fwd("        B, C, H, W = x.shape\n        torch._assert(H == 224, f\"Input size ({H}*{W}) doesn't match model.\")\n"
             "        torch._assert(W == 224, f\"Input size ({H}*{W}) doesn't match model.\")\n        return x\n"),
        # outside compiled code
        "import torch\n\n\ndef describe(x):\n    return f\"batch of {x.shape[0]}\"\n",
        # printf-style forms measured without a new frame per size
        _fwd("        H = x.shape[2]\n        a = \"h=%d\" % (H,)\n        b = \"h=%s\" % H\n        return x\n"),
        # inside a lambda: built only if called
        _fwd("        H = x.shape[2]\n        torch._check(H > 0, lambda: f\"bad height {H}\")\n        return x\n"),
    ]
    INVALID = [
        Invalid(
            _fwd("        B, C, H, W = x.shape\n        torch._assert(H % 4 == 0, f\"Input height ({H}) must be divisible by 4\")\n"
                 "        return x * 2\n"),
            line=8,
        ),
        # a logging call breaks the graph (FL104), and its message is built while tracing, first
        Invalid(_fwd("        print(f\"padded to {x.shape[1]}\")\n        return x\n"), line=7),
        # transformers' LED: the sizes come from a slice of one of two shapes
        Invalid(
            _fwd("        shape = x.shape if x.dim() == 2 else x.flatten(1).shape\n        b, n = shape[:2]\n"
                 "        print(f\"padded from {n} to {n + 4}\")\n        return x\n"),
            line=9,
        ),
        Invalid(_fwd("        key = f\"h{x.shape[2]}w{x.size(3)}\"\n        return x * 2\n"), line=7, count=1),
        Invalid(_fwd("        H = x.shape[2]\n        h = H // 4\n        msg = f\"{h} patches\"\n        return x * 2\n"), line=9),
        # an equality check in another branch fixes nothing here (timm's PatchEmbed, strict_img_size=False)
        Invalid(
            _fwd("        H = x.shape[2]\n        if self.strict:\n            torch._assert(H == 224, 'wrong height')\n"
                 "        else:\n            torch._assert(H % 4 == 0, f\"height {H} is not a multiple of 4\")\n        return x\n"),
            line=11,
        ),
        Invalid(_fwd("        n = x.numel()\n        tag = \"n=%s\" % (n,)\n        return x * 2\n"), line=8),
        # a size unpacked from a display, element by element (PyG's `N, H, C = x.size(0), self.heads, ...`)
        Invalid(_fwd("        n, c = x.size(0), 4\n        msg = f\"{n} rows of {c}\"\n        return x * 2\n"), line=8, count=1),
    ]

    def visit_FormattedString(self, node: cst.FormattedString, ctx) -> None:
        if not any(isinstance(p, cst.FormattedStringText) and p.value for p in node.parts) and sum(
            isinstance(p, cst.FormattedStringExpression) for p in node.parts
        ) < 2:
            return  # `f"{H}"` is the value alone: no string is joined (measured: not specialised)
        values = [
            p.expression for p in node.parts
            # a format spec (`{H:d}`) makes torch 2.13's Dynamo raise while tracing; not this rule's claim
            if isinstance(p, cst.FormattedStringExpression) and p.format_spec is None
        ]
        self._check(node, values, ctx)

    def visit_BinaryOperation(self, node: cst.BinaryOperation, ctx) -> None:
        # `"h=%s" % (H,)`: measured like an f-string; `"h=%d" % (H,)`, `"h=%d" % H` and `"h=%s" % H` were
        # not (torch 2.13: one frame for 6 sizes), so only `%s` conversions of a tuple are flagged
        if not (isinstance(node.operator, cst.Modulo) and isinstance(node.left, cst.SimpleString) and isinstance(node.right, cst.Tuple)):
            return
        conversions = _CONVERSION.findall(node.left.value)
        if not conversions or any(c != "s" for c in conversions):
            return
        self._check(node, [e.value for e in node.right.elements if not isinstance(e, cst.StarredElement)], ctx)

    def _check(self, node: cst.CSTNode, values: list[cst.BaseExpression], ctx) -> None:
        if not values or _built_only_on_failure(ctx):
            return
        sizes = Sizes(ctx)
        for value in values:
            tensor = sizes.of(value)
            if tensor is None:
                continue
            written = ctx.code(value).strip()
            if written in _pinned(ctx):
                continue
            ctx.report(
                node,
                f"`{written}` (a size of `{tensor}`) is formatted into a string: Dynamo specialises the size to "
                "its current value, so every new size recompiles, and after 8 recompiles (recompile_limit) the "
                "frame runs eagerly; use a constant message or an `assert` statement (its message is built only "
                "when it fails)",
            )
            return
