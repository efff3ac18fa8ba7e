"""FL204 python-loop-over-batch: a Python loop whose trip count is the batch size, inside compiled code."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from fusionlint.semantic.bindings import target_names
from fusionlint.analysis.literals import int_literal
from fusionlint.analysis.render import expression_code
from fusionlint.analysis.walk import iter_nodes
from fusionlint.rule import Effect, Invalid, Rule


class _Loop:
    """Decides whether an iterable walks dimension 0 of an input-derived tensor."""

    def __init__(self, ctx) -> None:
        self.ctx = ctx
        fn = ctx.function
        self.assigns: dict[str, list[cst.Assign]] = {}
        if fn is not None:
            self.assigns = ctx.memo(("FL204-assigns", id(fn.node)), lambda: _assigns(fn.node))

    # -- provenance: built only from parameters/buffers (fixed sizes) ----------------------------
    def param_derived(self, expr: cst.BaseExpression, depth: int = 0) -> bool:
        cls = self.ctx.cls
        if depth > 6:
            return False
        if isinstance(expr, cst.Attribute):
            base = expr.value
            if isinstance(base, cst.Name) and base.value == "self":
                return cls is not None and (expr.attr.value in cls.params or expr.attr.value in cls.buffers or expr.attr.value in cls.tensor_attrs)
            if isinstance(base, cst.Attribute) and isinstance(base.value, cst.Name) and base.value.value == "self":
                return cls is not None and base.attr.value in cls.submodules and expr.attr.value in ("weight", "bias")
            return self.param_derived(base, depth + 1)
        if isinstance(expr, cst.Subscript):
            return self.param_derived(expr.value, depth + 1)
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
            return self.param_derived(expr.func.value, depth + 1) and not any(
                self.ctx.is_tensor(a.value) and not self.param_derived(a.value, depth + 1) for a in expr.args
            )
        if isinstance(expr, cst.Name):
            stmts = self.assigns.get(expr.value)
            if not stmts:
                return False
            return all(len(s.targets) == 1 and isinstance(s.targets[0].target, cst.Name) and self.param_derived(s.value, depth + 1) for s in stmts)
        return False

    def batch_tensor(self, expr: cst.BaseExpression) -> bool:
        return self.ctx.is_tensor(expr) and not self.param_derived(expr)

    def surely_batch_tensor(self, expr: cst.BaseExpression) -> bool:
        """A batch tensor that cannot be a list or tuple. ``len(features)`` / ``for f in features`` over a
        forward argument is as often a list of tensors (FPN levels, ``*inputs``), so a name counts only
        when it is annotated ``Tensor`` or every assignment binds it to a tensor expression. The output
        of a submodule that is not a known single-tensor torch.nn layer may be a list (a backbone's
        feature maps: transformers 5.24), and ``x[i]`` has lost dimension 0."""
        if not self.batch_tensor(expr):
            return False
        if isinstance(expr, cst.Subscript):
            return _is_slice(expr) and self.surely_batch_tensor(expr.value)  # x[1:] keeps the rows
        if isinstance(expr, cst.Call):
            return not self._module_output(expr)
        if not isinstance(expr, cst.Name):
            return True
        fn = self.ctx.function
        if fn is None:
            return False
        if expr.value in fn.tensor_params and expr.value not in self.assigns:
            return True  # the project model: passed a tensor, or used with tensor-only methods (`x.amax()`)
        stmts = self.assigns.get(expr.value)
        if stmts:
            return all(
                len(s.targets) == 1
                and isinstance(s.targets[0].target, cst.Name)
                and self.ctx.is_tensor(s.value)
                and not self._module_output(s.value)
                for s in stmts
            )
        p = fn.node.params
        for param in list(p.posonly_params) + list(p.params) + list(p.kwonly_params):
            if param.name.value == expr.value:
                annotation = param.annotation
                if annotation is None:
                    return False
                text = expression_code(annotation.annotation).replace(" ", "")
                return text in ("Tensor", "torch.Tensor")
        return False  # *args, globals, closure variables

    def _module_output(self, expr: cst.BaseExpression) -> bool:
        """``self.sub(...)`` where ``sub`` is not a torch.nn layer known to return one tensor."""
        if not (isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute)):
            return False
        recv = expr.func.value
        if not (isinstance(recv, cst.Name) and recv.value == "self"):
            return False
        cls = self.ctx.cls
        ctor = cls.submodules.get(expr.func.attr.value) if cls is not None else None
        if ctor is None:
            return False  # not a submodule (a method: the tensor inference has decided already)
        return not (ctor.startswith("torch.nn.") and ctor.rsplit(".", 1)[-1] not in _NOT_ONE_TENSOR)

    # -- sizes ------------------------------------------------------------------------------------
    def dim0_size(self, expr: cst.BaseExpression, depth: int = 0) -> bool:
        """``x.size(0)``, ``x.shape[0]``, ``x.size()[0]``, ``len(x)``, a local bound to one, or arithmetic on one."""
        if depth > 4:
            return False
        if isinstance(expr, cst.BinaryOperation):
            return self.dim0_size(expr.left, depth + 1) or self.dim0_size(expr.right, depth + 1)
        if isinstance(expr, cst.Call):
            func = expr.func
            if isinstance(func, cst.Attribute) and func.attr.value == "size" and len(expr.args) == 1:
                return int_literal(expr.args[0].value) == 0 and self.batch_tensor(func.value)
            if isinstance(func, cst.Name) and func.value == "len" and self.ctx.qualname(func) == "len" and len(expr.args) == 1:
                return self.surely_batch_tensor(expr.args[0].value)
            return False
        if isinstance(expr, cst.Subscript) and len(expr.slice) == 1:
            index = expr.slice[0].slice
            if not (isinstance(index, cst.Index) and int_literal(index.value) == 0):
                return False
            return self._shape_of_batch(expr.value)
        if isinstance(expr, cst.Name):
            stmts = self.assigns.get(expr.value, [])
            if len(stmts) != 1:
                return False  # reassigned: do not guess
            stmt = stmts[0]
            target = stmt.targets[0].target if len(stmt.targets) == 1 else None
            if isinstance(target, cst.Name):
                return self.dim0_size(stmt.value, depth + 1)
            if isinstance(target, (cst.Tuple, cst.List)) and target.elements:
                first = target.elements[0].value
                return isinstance(first, cst.Name) and first.value == expr.value and self._shape_of_batch(stmt.value)
        return False

    def _shape_of_batch(self, expr: cst.BaseExpression) -> bool:
        """``x.shape`` or ``x.size()`` of a batch tensor."""
        if isinstance(expr, cst.Attribute) and expr.attr.value == "shape":
            return self.batch_tensor(expr.value)
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "size" and not expr.args:
            return self.batch_tensor(expr.func.value)
        return False

    # -- the iterable ---------------------------------------------------------------------------------
    def describe(self, iterable: cst.BaseExpression, depth: int = 0) -> Optional[str]:
        if isinstance(iterable, cst.Call):
            func = iterable.func
            qual = self.ctx.qualname(func)
            args = [a for a in iterable.args if a.keyword is None and not a.star]
            if qual == "range" and args:
                stop = args[0].value if len(args) == 1 else args[1].value
                return "the size of dimension 0" if self.dim0_size(stop) else None
            if qual == "enumerate" and args:
                if self.surely_batch_tensor(args[0].value):
                    return "the rows (dimension 0) of a tensor"
                return self.describe(args[0].value, depth + 1) if depth < 3 else None
            if isinstance(func, cst.Attribute) and func.attr.value == "unbind" and qual != "torch.unbind":
                dim_ok = _dim_arg(iterable, 0) == 0
                return "the rows (dimension 0) of a tensor" if dim_ok and self.batch_tensor(func.value) else None
            if qual == "torch.unbind" and args:
                dim_ok = _dim_arg(iterable, 1) == 0
                return "the rows (dimension 0) of a tensor" if dim_ok and self.batch_tensor(args[0].value) else None
            return None
        if isinstance(iterable, cst.Name) and depth < 3:
            facts = self.ctx.facts()
            stmts = self.assigns.get(iterable.value, [])
            if facts is not None and iterable.value in facts.sequences and len(stmts) == 1:
                return self.describe(stmts[0].value, depth + 1)  # rows = x.unbind(0); for r in rows
        if self.surely_batch_tensor(iterable):
            return "the rows (dimension 0) of a tensor"
        return None


# torch.nn modules whose call does not return one tensor (or whose contents decide what it returns).
_NOT_ONE_TENSOR = frozenset(
    {"LSTM", "GRU", "RNN", "MultiheadAttention", "AdaptiveLogSoftmaxWithLoss", "Sequential", "ModuleList", "ModuleDict"}
)


def _is_slice(sub: cst.Subscript) -> bool:
    return len(sub.slice) == 1 and isinstance(sub.slice[0].slice, cst.Slice)


def _dim_arg(call: cst.Call, position: int) -> Optional[int]:
    """The ``dim`` of ``x.unbind(dim)`` (position 0) / ``torch.unbind(x, dim)`` (position 1); 0 when absent."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "dim":
            return int_literal(arg.value)
    positional = [a for a in call.args if a.keyword is None]
    if len(positional) > position:
        return int_literal(positional[position].value)
    return 0


def _assigns(fn: cst.FunctionDef) -> dict[str, list[cst.Assign]]:
    """name -> the ``=`` statements (unpacking included) that bind it in ``fn`` (nested defs excluded)."""
    assigns: dict[str, list[cst.Assign]] = {}
    for node in iter_nodes(fn.body, (cst.Assign,)):
        for t in node.targets:
            for name in target_names(t.target):
                assigns.setdefault(name, []).append(node)
    return assigns


_DOCS = """
## What it does
Flags a Python loop (or comprehension) in compiled code whose trip count is the size of
dimension 0 of a tensor that comes from the inputs: `for i in range(x.size(0))`,
`range(x.shape[0])`, `range(len(x))`, `range(b)` after `b, t, c = x.shape`, `for row in x`,
`enumerate(x)`, `x.unbind(0)`. Loops over parameters' sizes and over other dimensions (heads,
channels are usually fixed) are not flagged. Nor is a `for` loop that breaks the graph on every
iteration (a statement of its body before anything that can leave it, or a call there to a function
of the same file that always breaks): Dynamo then runs the whole frame eagerly instead of unrolling
the loop (measured with torch 2.13.0+cpu, batch sizes 2..5: no compiled entry for the frame), and the
breaking line has its own finding. The other graph-break rules decide that even when they are not
selected, so FL204's findings do not change with the selection.

## Why is this bad?
Dynamo unrolls Python loops. The unrolled graph has one copy of the body per row, so it is only
valid for that batch size: the size becomes a guard instead of a symbol, and every new batch
size recompiles. After `torch._dynamo.config.recompile_limit` (8) recompiles the frame runs
**eagerly** from then on. Large batches also make big graphs and slow compiles.

Measured with torch 2.13.0+cpu, batch sizes 2..11: `for i in range(h.size(0))` (the fixture),
`for row in x`, `range(len(x))`, `b, d = x.shape; range(b)` and
`torch.stack([r.sin() for r in x.unbind(0)])` each gave 8 recompiles and hit `recompile_limit`;
the vectorised version 1 recompile (the usual switch to a dynamic batch size), and a loop over a
fixed dimension (`range(x.size(1))`) also 1. The fixture on torch 2.11.0+cu130 (H200): 8
recompiles and the limit hit; vectorised 1. The ground-truth run `h12b` compiled the same loop
at batch 64 into 65 C++ kernels instead of 2, with a first call of 8.5 s instead of 4.1 s.

## Example
```python
def forward(self, x):
    h = self.proj(x)
    out = []
    for i in range(h.size(0)):
        out.append(h[i] * (i + 1))
    return torch.stack(out)
```

## Use instead
Express the per-row work with broadcasting (or `torch.vmap`):
```python
def forward(self, x):
    h = self.proj(x)
    scale = torch.arange(1, h.size(0) + 1, dtype=h.dtype, device=h.device)
    return h * scale.unsqueeze(1)
```

## Fix safety
No automatic fix: vectorising a loop body is a rewrite only a person can check.

## PyTorch reference
No graph-break id (this is a recompile):
https://docs.pytorch.org/docs/main/user_guide/torch_compiler/compile/programming_model.recompilation.html
"""


def _fwd(body: str, init: str = "") -> str:
    return "import torch\nfrom torch import nn\n\n\nclass Model(nn.Module):\n" + init + "    def forward(self, x):\n" + body


class PythonLoopOverBatch(Rule):
    code = "FL204"
    name = "python-loop-over-batch"
    message = "Python loop over the batch dimension in compiled code: recompiles for every new batch size"
    effects = (Effect.RECOMPILE,)
    triggers = ("for ",)
    void_in_breaking_loop = True
    measured_on = ("torch 2.13.0 CPU", "torch 2.11.0 H200")
    docs = _DOCS

    VALID = [
        # every iteration breaks (`.item()`): the frame runs eagerly, nothing is unrolled
        "import torch\nfrom torch import nn\n\n\nclass Model(nn.Module):\n    def forward(self, x: torch.Tensor):\n"
        "        out = []\n        for row in x:\n            out.append(row * row.sum().item())\n        return torch.stack(out)\n",
        # a fixed dimension (heads/channels), not the batch
        _fwd("        out = []\n        for j in range(x.size(1)):\n            out.append(x[:, j] * 2)\n        return torch.stack(out, 1)\n"),
        # a loop over submodules
        _fwd(
            "        for layer in self.layers:\n            x = layer(x)\n        return x\n",
            "    def __init__(self):\n        super().__init__()\n        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])\n\n",
        ),
        # rows of a parameter: its size is fixed
        _fwd(
            "        for i in range(self.weight.size(0)):\n            x = x + self.weight[i]\n        return x\n",
            "    def __init__(self):\n        super().__init__()\n        self.weight = nn.Parameter(torch.randn(3, 4))\n\n",
        ),
        # the batch loop outside compiled code (a data pipeline)
        "import torch\n\n\ndef collate(x):\n    return [row for row in x]\n\n\ndef split(x: torch.Tensor):\n"
        "    return [x[i] for i in range(x.size(0))]\n",
        # a forward argument that may be a list of tensors (feature-pyramid levels)
        _fwd("        outs = []\n        for i in range(len(x)):\n            outs.append(x[i].mean())\n        return outs\n"),
        # *inputs is a tuple of tensors, a list-annotated argument a list
        "import torch\n\n\nclass Gather(torch.autograd.Function):\n    @staticmethod\n"
        "    def forward(ctx, dim, *inputs):\n        return torch.cat([t.view(1, -1) for t in inputs], dim)\n",
        _fwd("        return [f.mean() for f in x]\n").replace("def forward(self, x)", "def forward(self, x: list[torch.Tensor])"),
        # a constant trip count
        _fwd("        for i in range(4):\n            x = x * 2\n        return x\n"),
        # found on transformers 5.24: parts of the last dimension (coordinates, rope sections), the
        # feature maps a backbone submodule returns, rows of an already indexed tensor
        _fwd("        coords = x.unbind(-1)\n        parts = [c[..., None] * 2 for c in coords]\n"
             "        secs = [m[i % 3] for i, m in enumerate(x.split([1, 3], dim=-1))]\n"
             "        return parts, secs, [t for t in torch.chunk(x, 2, dim=1)]\n"),
        _fwd(
            "        feats = self.backbone(x)\n        outs = [self.proj(f) for f in feats]\n"
            "        return [o.sum() for o in x[0]], outs\n",
            "    def __init__(self, backbone):\n        super().__init__()\n        self.backbone = Backbone()\n"
            "        self.proj = nn.Linear(4, 4)\n\n",
        ),
        # vectorised
        _fwd("        return x * torch.arange(1, x.size(0) + 1, dtype=x.dtype).unsqueeze(1)\n"),
    ]
    INVALID = [
        Invalid(
            _fwd("        out = []\n        for i in range(x.size(0)):\n            out.append(x[i] * (i + 1))\n        return torch.stack(out)\n"),
            line=8,
        ),
        Invalid(
            _fwd("        b, d = x.shape\n        out = []\n        for i in range(b):\n            out.append(x[i] * 2)\n        return torch.stack(out)\n"),
            line=9,
        ),
        Invalid(_fwd("        h = x.relu()\n        return torch.stack([row.sin() for row in h])\n"), line=8),
        Invalid(_fwd("        return torch.stack([r.cos() for r in x.unbind(0)])\n"), line=7),
        Invalid(_fwd("        rows = torch.unbind(x, dim=0)\n        return torch.stack([r.cos() for r in rows])\n"), line=8),
        Invalid(
            _fwd("        h = self.proj(x)\n        for i in range(len(h)):\n            h[i] = h[i] * i\n        return h\n",
                 "    def __init__(self):\n        super().__init__()\n        self.proj = nn.Linear(4, 4)\n\n"),
            line=12,
        ),
    ]

    def visit_For(self, node: cst.For, ctx) -> None:
        self._check(node.iter, ctx)

    def visit_CompFor(self, node: cst.CompFor, ctx) -> None:
        self._check(node.iter, ctx)

    def _check(self, iterable: cst.BaseExpression, ctx) -> None:
        what = _Loop(ctx).describe(iterable)
        if what is None:
            return
        ctx.report(
            iterable,
            f"Python loop over {what} (`{ctx.code(iterable).strip()}`): dynamo unrolls it, so the graph is "
            "specialised to that size (usually the batch size) and every new size recompiles; after 8 "
            "recompiles (recompile_limit) the forward runs eagerly. Vectorise the loop body (broadcasting, torch.vmap)",
            tensor=iterable,
        )
