"""FL111 checkpoint-body-side-effect: a function run under torch.utils.checkpoint mutates outside state or prints."""

from __future__ import annotations

from typing import Iterator, Optional

import libcst as cst

from fusionlint.analysis.index import ClassInfo, FunctionInfo
from fusionlint.analysis.side_effects import SideEffectChecker
from fusionlint.analysis.walk import children
from fusionlint.rule import Effect, Invalid, Rule

_CHECKPOINT = frozenset({"torch.utils.checkpoint.checkpoint"})
# Methods that mutate a list/dict/set in place.
_MUTATORS = frozenset({"append", "extend", "insert", "pop", "remove", "clear", "update", "setdefault", "add", "discard"})


def _statements(fn: cst.FunctionDef) -> Iterator[cst.CSTNode]:
    """Small statements and calls of ``fn``'s body, outside nested defs."""
    stack = list(children(fn.body))
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        if isinstance(node, (cst.Assign, cst.AugAssign, cst.AnnAssign, cst.Call)):
            yield node
        stack.extend(children(node))


def _self_attr(expr: cst.BaseExpression) -> Optional[str]:
    if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self":
        return expr.attr.value
    return None


def _method(cls: Optional[ClassInfo], name: str, ctx) -> Optional[FunctionInfo]:
    seen: set[str] = set()
    while cls is not None and cls.name not in seen:
        seen.add(cls.name)
        if name in cls.methods:
            return cls.methods[name]
        cls = next((ctx.file.classes[b.rsplit(".", 1)[-1]] for b in cls.bases if b.rsplit(".", 1)[-1] in ctx.file.classes), None)
    return None


class CheckpointBodySideEffect(Rule):
    code = "FL111"
    name = "checkpoint-body-side-effect"
    message = "the function run by torch.utils.checkpoint has a side effect: graph break"
    effects = (Effect.GRAPH_BREAK,)
    triggers = ("checkpoint",)
    gb_ids = ("GB4413", "GB0067")
    measured_on = ("torch 2.13.0 CPU",)
    docs = """
## What it does
Flags `torch.utils.checkpoint.checkpoint(...)` calls in compiled code whose function has a side effect
(a method passed as `self.method`, a submodule passed as `self.block`, or a function of the same
file, as the first argument): assigning an attribute of `self` (`self.calls = self.calls + 1`, `self.last = out`),
mutating a container attribute of `self` in place (`self.cache.append(...)`), and the calls FL104
lists (`print`, logging, timers).

## Why is this bad?
Under `torch.compile`, a checkpointed function is traced as a higher-order operator whose body
must be free of side effects on outside state. Measured with torch 2.13.0 on CPU (backend
"eager", `checkpoint(self._inner, x, use_reentrant=False)` with a Linear inside):
- `self.calls = self.calls + 1` in the body: GB4413 "HOP: Non-nullified side effect", reported at
  the `checkpoint(...)` call (where the finding is, naming the side effect);
- `self.cache.append(1)` and `self.last = out.detach()`: GB0067 "HOP: Unsafe side effect";
- `print(...)` in the body: GB0059 at the `print`;
- the same assignment directly in `forward` (no checkpoint): no graph break;
- a pure body (or a submodule without side effects): no break.

The fixture (`fixtures/FL111_checkpoint_body_side_effect`, a counter incremented inside the
checkpointed method, measured with autograd on) shows the break site at the `checkpoint` call and 2
compiled regions per forward; without the counter, no break and 1 region.

## Example
```python
def _inner(self, h):
    self.calls = self.calls + 1
    return self.lin(h).relu()

def forward(self, x):
    return checkpoint(self._inner, x, use_reentrant=False)
```

## Use instead
```python
def forward(self, x):
    self.calls = self.calls + 1   # outside the checkpointed function (FL203 may still apply)
    return checkpoint(self._inner, x, use_reentrant=False)
```
Or drop the side effect: record statistics from the training loop.

## Fix safety
No automatic fix: moving the side effect changes when and how often it happens (a checkpointed
body runs again during backward).

## PyTorch reference
GB4413 https://meta-pytorch.github.io/compile-graph-break-site/gb/gb4413.html ·
GB0067 https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0067.html
"""
    VALID = [
        # a pure checkpointed method
        "import torch\nfrom torch import nn\nfrom torch.utils.checkpoint import checkpoint\n\nclass M(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n        self.lin = nn.Linear(8, 8)\n\n"
        "    def _inner(self, h):\n        out = self.lin(h)\n        return out.relu()\n\n"
        "    def forward(self, x):\n        return checkpoint(self._inner, x, use_reentrant=False)\n",
        # the mutation is in forward, not in the checkpointed body
        "import torch\nfrom torch import nn\nfrom torch.utils.checkpoint import checkpoint\n\nclass M(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n        self.lin = nn.Linear(8, 8)\n        self.calls = 0\n\n"
        "    def _inner(self, h):\n        return self.lin(h).relu()\n\n"
        "    def forward(self, x):\n        self.calls = self.calls + 1\n        return checkpoint(self._inner, x, use_reentrant=False)\n",
        # local containers and locals of the body are not outside state
        "import torch\nimport torch.utils.checkpoint as cp\n\ndef body(h):\n    parts = []\n    parts.append(h.relu())\n"
        "    return torch.cat(parts)\n\n@torch.compile\ndef f(x):\n    return cp.checkpoint(body, x, use_reentrant=False)\n",
        # checkpoint from a training loop is not compiled code
        "import torch\nfrom torch.utils.checkpoint import checkpoint\n\nclass Counter:\n    def __init__(self):\n"
        "        self.n = 0\n    def step(self, h):\n        self.n += 1\n        return h\n\n"
        "def train(c, x):\n    return checkpoint(c.step, x, use_reentrant=False)\n",
    ]
    INVALID = [
        Invalid(
            "import torch\nfrom torch import nn\nfrom torch.utils.checkpoint import checkpoint\n\nclass M(nn.Module):\n"
            "    def __init__(self):\n        super().__init__()\n        self.lin = nn.Linear(8, 8)\n        self.calls = 0\n\n"
            "    def _inner(self, h):\n        self.calls = self.calls + 1\n        return self.lin(h).relu()\n\n"
            "    def forward(self, x):\n        return checkpoint(self._inner, x, use_reentrant=False)\n",
            line=16,
        ),
        Invalid(
            "import torch\nfrom torch import nn\nimport torch.utils.checkpoint as cp\n\nclass M(nn.Module):\n"
            "    def __init__(self):\n        super().__init__()\n        self.lin = nn.Linear(8, 8)\n        self.cache = []\n\n"
            "    def _inner(self, h):\n        out = self.lin(h)\n        self.cache.append(out.detach())\n        return out\n\n"
            "    def forward(self, x):\n        return cp.checkpoint(self._inner, x, use_reentrant=False)\n",
            line=17,
        ),
        Invalid(
            "import torch\nfrom torch import nn\nfrom torch.utils import checkpoint as ckpt\n\nclass Block(nn.Module):\n"
            "    def __init__(self):\n        super().__init__()\n        self.lin = nn.Linear(8, 8)\n        self.last = None\n\n"
            "    def forward(self, h):\n        out = self.lin(h)\n        self.last = out.detach()\n        return out\n\n"
            "class M(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.block = Block()\n\n"
            "    def forward(self, x):\n        return ckpt.checkpoint(self.block, x, use_reentrant=False)\n",
            line=22,
        ),
        Invalid(
            "import torch\nimport torch.utils.checkpoint as cp\n\ndef body(h):\n    print('in body')\n    return h.relu()\n\n"
            "@torch.compile\ndef f(x):\n    return cp.checkpoint(body, x, use_reentrant=False)\n",
            line=10,
        ),
    ]

    def visit_Call(self, node: cst.Call, ctx) -> None:
        if ctx.qualname(node.func) not in _CHECKPOINT or not node.args or node.args[0].keyword is not None:
            return
        body = self._body(node.args[0].value, ctx)
        if body is None:
            return
        label, fn = body
        for stmt in _statements(fn.node):
            what = self._side_effect(stmt, ctx)
            if what is not None:
                # torch reports the break at the checkpoint call, so the finding goes there too
                line = ctx.module.code_for_node(stmt).strip().splitlines()[0]
                ctx.report(
                    node,
                    f"`{label}` has a side effect ({what}: `{line}`), and `checkpoint` runs it as a higher-order op "
                    "under torch.compile, where side effects on outside state are not allowed: graph break "
                    "(GB4413/GB0067)",
                )
                return

    @staticmethod
    def _body(expr: cst.BaseExpression, ctx) -> Optional[tuple[str, FunctionInfo]]:
        """The function checkpoint will run: ``self.method``, ``self.submodule`` (its forward), ``fn``."""
        attr = _self_attr(expr)
        if attr is not None and ctx.cls is not None:
            method = _method(ctx.cls, attr, ctx)
            if method is not None:
                return f"self.{attr}", method
            ctor = ctx.cls.submodules.get(attr, "")
            sub = ctx.file.classes.get(ctor.rsplit(".", 1)[-1]) if ctor else None
            forward = _method(sub, "forward", ctx) if sub is not None else None
            if forward is not None:
                return f"{sub.name}.forward", forward
            return None
        if isinstance(expr, cst.Name):
            fn = ctx.file.functions.get(expr.value)
            if fn is not None and fn.parent is None and fn.cls is None:
                return expr.value, fn
        return None

    @staticmethod
    def _side_effect(stmt: cst.CSTNode, ctx) -> Optional[str]:
        if isinstance(stmt, cst.Assign):
            for target in stmt.targets:
                attr = _self_attr(target.target)
                if attr is not None:
                    return f"assigns `self.{attr}`"
            return None
        if isinstance(stmt, (cst.AugAssign, cst.AnnAssign)):
            attr = _self_attr(stmt.target)
            if attr is not None and (isinstance(stmt, cst.AugAssign) or stmt.value is not None):
                return f"assigns `self.{attr}`"
            return None
        assert isinstance(stmt, cst.Call)
        func = stmt.func
        if isinstance(func, cst.Attribute) and func.attr.value in _MUTATORS and _self_attr(func.value) is not None:
            return f"mutates `self.{_self_attr(func.value)}`"
        described = SideEffectChecker().describe(stmt, ctx)
        if described is not None:
            return f"calls `{described[0]}`"
        return None
