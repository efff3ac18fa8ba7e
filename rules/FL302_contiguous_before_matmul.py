"""FL302 contiguous-before-matmul: `.contiguous()` of a transposed tensor that goes straight into a matmul."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from fusionlint.semantic.bindings import target_names
from fusionlint.analysis.walk import children
from fusionlint.rule import Applicability, Effect, Invalid, Rule

# Ops whose result has permuted strides, which a matmul consumes directly (no copy needed).
_LAYOUT_METHODS = frozenset({"transpose", "permute", "t", "swapaxes", "swapdims", "movedim", "moveaxis"})
_LAYOUT_ATTRS = frozenset({"T", "mT", "H", "mH"})
_MATMUL_FUNCS = frozenset({"torch.matmul", "torch.bmm", "torch.mm", "torch.einsum", "torch.nn.functional.linear"})
_MATMUL_METHODS = frozenset({"matmul", "bmm", "mm"})


def _layout_op(expr: cst.BaseExpression) -> Optional[str]:
    """``.transpose()``/``.t()``/``.mT``... when ``expr`` is directly such an op."""
    if isinstance(expr, cst.Attribute) and expr.attr.value in _LAYOUT_ATTRS:
        return "." + expr.attr.value
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value in _LAYOUT_METHODS:
        return f".{expr.func.attr.value}()"
    return None


def _contiguous_of_layout(expr: cst.BaseExpression) -> Optional[str]:
    """The layout op when ``expr`` is ``<layout op>.contiguous()`` (no memory_format argument)."""
    if (
        isinstance(expr, cst.Call)
        and not expr.args
        and isinstance(expr.func, cst.Attribute)
        and expr.func.attr.value == "contiguous"
    ):
        return _layout_op(expr.func.value)
    return None


def _module_root(func: cst.Attribute, ctx) -> bool:
    """``np.matmul``/``torch.mm``: the dotted name starts at an imported module, not at a tensor."""
    root = func.value
    while isinstance(root, cst.Attribute):
        root = root.value
    return isinstance(root, cst.Name) and root.value in ctx.file.aliases


class _Uses:
    """Per function: assignments and loads of each local name (nested defs excluded).

    Every ``Name`` under the function counts as a load except assignment targets, attribute names
    (``x.y`` loads ``x``), keyword names and parameters; an augmented assignment and a ``for``
    target count as an assignment too.
    """

    def __init__(self, fn: cst.FunctionDef) -> None:
        self.assigns: dict[str, list[cst.CSTNode]] = {}
        self.loads: dict[str, int] = {}
        assigns, loads = self.assigns, self.loads
        stack: list[cst.CSTNode] = [fn]
        while stack:
            node = stack.pop()
            if isinstance(node, cst.Name):
                loads[node.value] = loads.get(node.value, 0) + 1
                continue
            if isinstance(node, cst.AssignTarget):
                for name in target_names(node.target):
                    assigns.setdefault(name, []).append(node)
                continue
            if isinstance(node, cst.Param) or (isinstance(node, cst.FunctionDef) and node is not fn):
                continue
            if isinstance(node, (cst.Attribute, cst.Arg)):
                stack.append(node.value)  # `x.y`: `x` only, never the attribute name; no keyword names
                continue
            if isinstance(node, cst.AugAssign):
                for name in target_names(node.target):
                    assigns.setdefault(name, []).append(node)
                    loads[name] = loads.get(name, 0) + 1
            elif isinstance(node, cst.For):
                for name in target_names(node.target):
                    assigns.setdefault(name, []).append(node)
            kids = list(children(node))
            kids.reverse()
            stack.extend(kids)


class ContiguousBeforeMatmul(Rule):
    code = "FL302"
    name = "contiguous-before-matmul"
    message = "`.contiguous()` on a transposed matmul operand adds a copy kernel; the matmul takes strides"
    effects = (Effect.EXTRA_KERNEL,)
    fix_applicability = Applicability.SAFE
    triggers = (".contiguous()",)
    measured_on = ("torch 2.13.0 CPU", "torch 2.11.0 H200")
    docs = """
## What it does
Flags `.contiguous()` applied to the result of `transpose`/`permute`/`.t()`/`swapaxes`/`movedim`/
`.T`/`.mT` when that result goes straight into a matrix multiply: an operand of `@`,
`torch.matmul`, `torch.bmm`, `torch.mm`, `torch.einsum`, `.matmul()`/`.bmm()`/`.mm()`, or the
weight of `F.linear` (its input only for a 2-D `.t()`). "Straight" means as the operand itself, or
through a local name assigned once and used only in that matmul.

## Why is this bad?
Matmul kernels (BLAS `bmm`/`mm`, inductor's extern kernels) accept transposed strides directly, so
the copy that `.contiguous()` forces is pure overhead; under `torch.compile` inductor cannot fuse
it away, because the matmul is an extern kernel that needs its input materialised. Measured with
torch 2.13.0 on CPU (profiler `cpp_fused` events, one forward, `(q @ k.transpose(-1, -2).contiguous()).relu()`
on (4, 2, 16, 16) inputs): 2 generated kernels (`cpp_fused_clone_transpose` + the relu) instead of
1 without `.contiguous()`. The same 2-vs-1 holds for `torch.matmul`, `torch.bmm`, `torch.mm`,
`torch.einsum`, `.mT` and the `F.linear` weight; on an H200 with torch 2.11 the truth table shows
2 Triton kernels instead of 1 for the `@` case.

Not flagged, because it measured free or necessary: `.contiguous()` before elementwise chains
(inductor fuses the copy: 1 kernel either way), before `.view()` (needed: `view` raises on
permuted strides), before a 3-D+ input of `nn.Linear`/`F.linear` (the flattening copy happens
anyway: 2 kernels with or without it), and `.contiguous()` of a tensor that is not freshly
transposed (a no-op: 2 vs 2).

## Example
```python
scores = q @ k.transpose(-1, -2).contiguous()
```

## Use instead
```python
scores = q @ k.transpose(-1, -2)
```

## Fix safety
Safe: `.contiguous()` only changes the memory layout, and every flagged consumer accepts any
strides, so the values are the same (up to floating-point summation order inside BLAS, which
also varies between runs). The fix deletes the call.
"""
    VALID = [
        # no .contiguous(): nothing to drop
        "import torch\nfrom torch import nn\nclass M(nn.Module):\n"
        "    def forward(self, q, k):\n        return q @ k.transpose(-1, -2)\n",
        # before an elementwise chain: inductor fuses the copy, free
        "import torch\nfrom torch import nn\nclass M(nn.Module):\n"
        "    def forward(self, q):\n        y = q.permute(0, 2, 1, 3).contiguous()\n        return (y * 2 + 1).relu()\n",
        # before .view(): needed
        "import torch\nfrom torch import nn\nclass M(nn.Module):\n"
        "    def forward(self, q, w):\n        y = q.transpose(1, 2).contiguous()\n        return y.view(y.shape[0], -1) @ w\n",
        # the name is used twice: the copy may serve the other use
        "import torch\nfrom torch import nn\nclass M(nn.Module):\n"
        "    def forward(self, q, k):\n        kt = k.transpose(-1, -2).contiguous()\n        return q @ kt, kt\n",
        # a 3-D+ input of an nn.Linear submodule: flattening copies anyway (measured 2 vs 2 kernels)
        "import torch\nfrom torch import nn\nclass M(nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.lin = nn.Linear(16, 16)\n"
        "    def forward(self, q):\n        return self.lin(q.permute(0, 2, 1, 3).contiguous())\n",
        # not a freshly transposed tensor
        "import torch\nfrom torch import nn\nclass M(nn.Module):\n"
        "    def forward(self, q, k):\n        return (q * 2).contiguous() @ k\n",
        # outside compiled code
        "import torch\ndef prep(q, k):\n    return q @ k.transpose(-1, -2).contiguous()\n",
        # numpy's matmul is not a torch kernel
        "import numpy as np\nimport torch\nfrom torch import nn\nclass M(nn.Module):\n"
        "    def forward(self, a, b):\n        return torch.from_numpy(np.matmul(a.T.contiguous(), b))\n",
    ]
    INVALID = [
        Invalid(
            "import torch\nfrom torch import nn\nclass M(nn.Module):\n"
            "    def forward(self, q, k):\n        return (q @ k.transpose(-1, -2).contiguous()).relu()\n",
            expected_fix="import torch\nfrom torch import nn\nclass M(nn.Module):\n"
            "    def forward(self, q, k):\n        return (q @ k.transpose(-1, -2)).relu()\n",
            line=5,
        ),
        Invalid(
            "import torch\nfrom torch import nn\nclass M(nn.Module):\n"
            "    def forward(self, q, k):\n        kt = k.transpose(-1, -2).contiguous()\n"
            "        scores = torch.matmul(q, kt)\n        return scores.softmax(-1)\n",
            expected_fix="import torch\nfrom torch import nn\nclass M(nn.Module):\n"
            "    def forward(self, q, k):\n        kt = k.transpose(-1, -2)\n"
            "        scores = torch.matmul(q, kt)\n        return scores.softmax(-1)\n",
            line=5,
        ),
        Invalid(
            "import torch\nimport torch.nn.functional as F\nfrom torch import nn\nclass M(nn.Module):\n"
            "    def __init__(self):\n        super().__init__()\n        self.w = nn.Parameter(torch.randn(8, 8))\n"
            "    def forward(self, x):\n        return F.linear(x, self.w.t().contiguous())\n",
            expected_fix="import torch\nimport torch.nn.functional as F\nfrom torch import nn\nclass M(nn.Module):\n"
            "    def __init__(self):\n        super().__init__()\n        self.w = nn.Parameter(torch.randn(8, 8))\n"
            "    def forward(self, x):\n        return F.linear(x, self.w.t())\n",
            line=9,
        ),
        Invalid(
            "import torch\n\n@torch.compile\ndef f(a, b):\n    return torch.bmm(a.mT.contiguous(), b) + a.permute(0, 2, 1).contiguous().bmm(b)\n",
            expected_fix="import torch\n\n@torch.compile\ndef f(a, b):\n    return torch.bmm(a.mT, b) + a.permute(0, 2, 1).bmm(b)\n",
            count=2,
        ),
    ]

    def __init__(self) -> None:
        super().__init__()
        self._uses: dict[int, _Uses] = {}

    def visit_Call(self, node: cst.Call, ctx) -> None:
        op = _contiguous_of_layout(node)
        if op is None:
            return
        parents = ctx.parents
        consumer = self._direct_consumer(node, parents, ctx)
        if consumer is None:
            consumer = self._consumer_through_name(node, parents, ctx)
        if consumer is None:
            return
        fix = ctx.fix(
            Applicability.SAFE, ctx.replace(node, ctx.code(node.func.value)), title="Drop `.contiguous()`"
        )
        ctx.report(
            node,
            f"`.contiguous()` after `{op}` copies the tensor only to feed {consumer}, which accepts "
            "transposed strides: 1 extra kernel per call; drop it",
            fix=fix,
        )

    # -- who consumes the value --------------------------------------------------------------
    def _direct_consumer(self, node: cst.CSTNode, parents: tuple, ctx) -> Optional[str]:
        if not parents:
            return None
        parent = parents[0]
        if isinstance(parent, cst.BinaryOperation) and isinstance(parent.operator, cst.MatrixMultiply):
            return "`@`"
        if isinstance(parent, cst.Arg) and len(parents) > 1 and isinstance(parents[1], cst.Call):
            call = parents[1]
            return self._call_consumer(call, parent, node, ctx)
        if isinstance(parent, cst.Attribute) and parent.value is node and len(parents) > 1:
            call = parents[1]
            if isinstance(call, cst.Call) and call.func is parent and parent.attr.value in _MATMUL_METHODS:
                return f"`.{parent.attr.value}()`"
        return None

    @staticmethod
    def _call_consumer(call: cst.Call, arg: cst.Arg, value: cst.CSTNode, ctx) -> Optional[str]:
        func = call.func
        if isinstance(func, cst.Attribute) and _module_root(func, ctx) and (ctx.qualname(func) or "") not in _MATMUL_FUNCS:
            return None  # np.matmul(...) and other modules' functions
        if isinstance(func, cst.Attribute) and func.attr.value in _MATMUL_METHODS and ctx.qualname(func) is None:
            return f"`.{func.attr.value}()`"  # receiver.matmul(<arg>) on a computed receiver
        qual = ctx.qualname(func) or ""
        if isinstance(func, cst.Attribute) and func.attr.value in _MATMUL_METHODS and not qual.startswith("torch."):
            return f"`.{func.attr.value}()`"  # x.matmul(<arg>)
        if qual not in _MATMUL_FUNCS:
            return None
        short = "F.linear" if qual.endswith("linear") else qual
        if qual == "torch.nn.functional.linear":
            position = next((i for i, a in enumerate(call.args) if a is arg), None)
            is_weight = (arg.keyword is not None and arg.keyword.value == "weight") or (
                arg.keyword is None and position == 1
            )
            is_input = (arg.keyword is not None and arg.keyword.value == "input") or (
                arg.keyword is None and position == 0
            )
            if is_weight:
                return "the weight of `F.linear`"
            # the input only when it is 2-D for sure (`.t()`): 3-D+ inputs are copied when flattened anyway
            if is_input and isinstance(value, cst.Call) and _layout_op(value.func.value) == ".t()":  # type: ignore[attr-defined]
                return "`F.linear`"
            return None
        if qual == "torch.einsum" and call.args and call.args[0] is arg:
            return None  # the equation string
        return f"`{short}`"

    def _consumer_through_name(self, node: cst.Call, parents: tuple, ctx) -> Optional[str]:
        """``kt = k.transpose(-1, -2).contiguous()`` assigned once, loaded once, in a matmul."""
        if len(parents) < 2 or not isinstance(parents[0], cst.Assign):
            return None
        assign = parents[0]
        if len(assign.targets) != 1 or not isinstance(assign.targets[0].target, cst.Name):
            return None
        name = assign.targets[0].target.value
        fn = ctx.function
        if fn is None:
            return None
        uses = self._uses.get(id(fn.node))
        if uses is None:
            uses = self._uses[id(fn.node)] = _Uses(fn.node)
        if len(uses.assigns.get(name, ())) != 1 or uses.loads.get(name, 0) != 1:
            return None
        # The one load of `name` (nested defs excluded) decides: is it a matmul operand?
        stack: list[tuple[cst.CSTNode, tuple]] = [(fn.node.body, ())]
        while stack:
            node, parents = stack.pop()
            if isinstance(node, cst.Name):
                if node.value == name and parents:
                    parent = parents[0]
                    if not isinstance(parent, (cst.AssignTarget, cst.Attribute)) or (
                        isinstance(parent, cst.Attribute) and parent.value is node
                    ):
                        found = self._direct_consumer(node, parents, ctx)
                        if found is not None:
                            return found
                continue
            if isinstance(node, cst.FunctionDef):
                continue
            inner = (node, *parents[:1])  # _direct_consumer looks at two parents
            kids = [(kid, inner) for kid in children(node)]
            kids.reverse()
            stack.extend(kids)
        return None
