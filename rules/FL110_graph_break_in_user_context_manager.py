"""FL110 graph-break-in-user-context-manager: a graph break inside (or in) a project's own context manager."""

from __future__ import annotations

from typing import Iterator, Optional

import libcst as cst

from fusionlint.analysis.index import ClassInfo, FunctionInfo
from fusionlint.analysis.side_effects import SideEffectChecker
from fusionlint.analysis.walk import children
from fusionlint.rule import Effect, Invalid, Rule

_CONTEXTMANAGER = ("contextlib.contextmanager", "contextmanager")
_EXPLICIT_BREAKS = frozenset({"torch._dynamo.graph_break", "torch._dynamo.skip_frame", "torch._dynamo.step_unsupported"})
_TO_PYTHON = frozenset({"item", "tolist"})


def _calls(root: cst.CSTNode) -> Iterator[cst.Call]:
    """Calls under ``root``, outside nested defs and outside ``if ... is_compiling() ...:`` blocks
    (code there does not run, or runs only eagerly, under compile)."""
    stack = list(children(root))
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        if isinstance(node, cst.If) and _mentions_is_compiling(node.test):
            continue
        if isinstance(node, cst.Call):
            yield node
        stack.extend(children(node))


def _mentions_is_compiling(test: cst.BaseExpression) -> bool:
    stack = [test]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Name) and node.value in ("is_compiling", "is_dynamo_compiling", "is_torchdynamo_compiling"):
            return True
        if isinstance(node, cst.Attribute) and node.attr.value in ("is_compiling", "is_dynamo_compiling"):
            return True
        stack.extend(children(node))
    return False


class GraphBreakInUserContextManager(Rule):
    code = "FL110"
    name = "graph-break-in-user-context-manager"
    message = "graph break inside a user-defined context manager: Dynamo skips the whole function"
    effects = (Effect.GRAPH_BREAK,)
    triggers = ("__enter__", "contextmanager")
    gb_ids = ("GB0066",)
    measured_on = ("torch 2.13.0 CPU",)
    docs = """
## What it does
Flags graph breaks in code that `torch.compile` traces while a context manager defined in the same
file is active: a `with` over a class with `__enter__`/`__exit__` or over a
`@contextlib.contextmanager` function, where the block, `__enter__`/`__exit__` or the generator
body calls `print`, a logging or timing function (the calls FL104 lists),
`torch._dynamo.graph_break()` (FL109), or `.item()`/`.tolist()` on a tensor.

## Why is this bad?
Dynamo can split a graph around a break under its own context managers (`torch.no_grad()`,
`autocast`), but not under a user-defined one: it reports GB0066 "Graph break under
GenericContextWrappingVariable" and, instead of one break, skips the whole function ("Failed to
handle graph break gracefully. Skipping the function and falling back to eager"). Measured with
torch 2.13.0 on CPU (backend "eager", `x.relu()`, a `print` and `+ 1` inside the block):
- `with Timer():` (a plain class with `__enter__`/`__exit__`) and `with gen_cm():` (a
  `@contextlib.contextmanager` generator): the function is skipped, nothing of it is compiled;
  the same block under `with torch.no_grad():` is split into two graphs; `.item()` on a tensor in
  the block (GB0124): the function is skipped too;
- `print` in `__enter__` or in the generator before `yield` (GB0059), `time.perf_counter()` in
  `__enter__` (GB0007): the function is skipped too;
- the same context managers with nothing that breaks: no break, one graph.

The fixture (`fixtures/FL110_graph_break_in_user_context_manager`, Linear → relu → `print` under
`with Scope():` → Linear → sigmoid) shows the break site at the `print` and 0 compiled regions per
forward; without the `print`, 1 region and no break.

## Example
```python
class Scope:
    def __enter__(self):
        return self
    def __exit__(self, *exc):
        return False

def forward(self, x):
    with Scope():
        h = self.a(x).relu()
        print("hidden", h.shape)
    return self.b(h)
```

## Use instead
Move the breaking call out of the `with` block (or out of `__enter__`/`__exit__`), remove it, or
run it only eagerly (`if not torch.compiler.is_compiling():`).

## Fix safety
No automatic fix.

## PyTorch reference
GB0066 https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0066.html
"""
    VALID = [
        # torch's own context managers can be split by a break (FL104 reports the print itself)
        "import torch\nfrom torch import nn\n\nclass M(nn.Module):\n    def forward(self, x):\n"
        "        with torch.no_grad():\n            h = x.relu()\n        return h\n",
        # a user context manager with nothing that breaks
        "import torch\nfrom torch import nn\n\nclass Scope:\n    def __enter__(self):\n        return self\n"
        "    def __exit__(self, *exc):\n        return False\n\nclass M(nn.Module):\n    def forward(self, x):\n"
        "        with Scope():\n            h = x.relu() * 2\n        return h\n",
        # the print runs only eagerly
        "import torch\nfrom torch import nn\n\nclass Scope:\n    def __enter__(self):\n        return self\n"
        "    def __exit__(self, *exc):\n        return False\n\nclass M(nn.Module):\n    def forward(self, x):\n"
        "        with Scope():\n            if not torch.compiler.is_compiling():\n                print(x.shape)\n"
        "            h = x.relu()\n        return h\n",
        # not compiled: a training loop
        "import torch\n\nclass Scope:\n    def __enter__(self):\n        print('in')\n        return self\n"
        "    def __exit__(self, *exc):\n        return False\n\ndef train(model, x):\n    with Scope():\n"
        "        return model(x)\n",
    ]
    INVALID = [
        Invalid(
            "import torch\nfrom torch import nn\n\nclass Scope:\n    def __enter__(self):\n        return self\n"
            "    def __exit__(self, *exc):\n        return False\n\nclass M(nn.Module):\n    def forward(self, x):\n"
            "        with Scope():\n            h = x.relu()\n            print(h.shape)\n        return h + 1\n",
            line=14,
        ),
        Invalid(
            "import contextlib\nimport torch\nfrom torch import nn\n\n@contextlib.contextmanager\ndef scope():\n"
            "    yield\n\nclass M(nn.Module):\n    def forward(self, x):\n        with scope():\n"
            "            s = x.sum().item()\n        return x * s\n",
            line=12,
        ),
        Invalid(
            "import time\nimport torch\nfrom torch import nn\n\nclass Timer:\n    def __enter__(self):\n"
            "        self.t0 = time.perf_counter()\n        return self\n    def __exit__(self, *exc):\n        return False\n\n"
            "class M(nn.Module):\n    def forward(self, x):\n        with Timer():\n            h = x.relu()\n        return h\n",
            line=14,
        ),
        Invalid(
            "import contextlib\nimport torch\nfrom torch import nn\n\n@contextlib.contextmanager\ndef scope(name):\n"
            "    print('enter', name)\n    yield\n\nclass M(nn.Module):\n    def forward(self, x):\n"
            "        with scope('block'):\n            h = x.relu()\n        return h\n",
            line=12,
        ),
    ]

    def visit_With(self, node: cst.With, ctx) -> None:
        for item in node.items:
            found = self._context_manager(item.item, ctx)
            if found is None:
                continue
            label, own_code = found
            for part in own_code:
                reason = self._breaking(part, ctx, in_function=False)
                if reason is not None:
                    ctx.report(
                        item.item,
                        f"`{label}` runs {reason} when it enters or exits: a graph break inside a user-defined context manager makes Dynamo skip "
                        "the whole function, it runs eagerly (GB0066)",
                    )
                    return
            for call in _calls(node.body):
                reason = self._breaking(call, ctx, in_function=True)
                if reason is not None:
                    ctx.report(
                        call,
                        f"{reason} inside `with {label}` (a user-defined context manager): Dynamo cannot split the "
                        "graph there and skips the whole function, it runs eagerly (GB0066)",
                    )
                    return

    # -- what is the context manager ---------------------------------------------------------------
    def _context_manager(self, expr: cst.BaseExpression, ctx) -> Optional[tuple[str, list[cst.Call]]]:
        """(label, calls in its own code) for ``Cls(...)`` / ``self.attr`` / ``gen_cm(...)`` of this file."""
        cls: Optional[ClassInfo] = None
        fn: Optional[FunctionInfo] = None
        label = ctx.code(expr).strip()
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name):
            name = expr.func.value
            cls = ctx.file.classes.get(name)
            fn = ctx.file.functions.get(name)
        elif (
            isinstance(expr, cst.Attribute)
            and isinstance(expr.value, cst.Name)
            and expr.value.value == "self"
            and ctx.cls is not None
        ):
            ctor = ctx.cls.submodules.get(expr.attr.value, "")
            cls = ctx.file.classes.get(ctor.rsplit(".", 1)[-1]) if ctor else None
        if cls is not None and "__enter__" in cls.methods and "__exit__" in cls.methods:
            calls = [c for m in ("__enter__", "__exit__") for c in _calls(cls.methods[m].node.body)]
            return label, calls
        if fn is not None and fn.parent is None and any(d in _CONTEXTMANAGER for d in fn.decorators):
            return label, list(_calls(fn.node.body))
        return None

    # -- what breaks ---------------------------------------------------------------------------------
    @staticmethod
    def _breaking(call: cst.Call, ctx, *, in_function: bool) -> Optional[str]:
        """The label ("`print()`", "`.item()` on a tensor") ... when ``call`` breaks the graph, else None.
        ``in_function``: the call is in the current function (so tensor facts apply)."""
        qual = ctx.qualname(call.func) or ""
        if qual in _EXPLICIT_BREAKS:
            return f"`{qual}()`"
        described = SideEffectChecker().describe(call, ctx)
        if described is not None:
            return f"`{described[0]}`"
        func = call.func
        if (
            in_function
            and isinstance(func, cst.Attribute)
            and func.attr.value in _TO_PYTHON
            and not call.args
            and ctx.is_tensor(func.value)
        ):
            return f"`.{func.attr.value}()` on a tensor"
        return None
