"""FL105 call-to-compiler-disabled: compiled code calls a function wrapped in `torch.compiler.disable`."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from fusionlint.analysis.init_facts import InitValue
from fusionlint.analysis.names import through_aliases
from fusionlint.analysis.scope import function_nodes
from fusionlint.rule import Effect, Invalid, Rule

# Decorators / wrappers that make Dynamo skip a function (resolved through the file's imports).
_DISABLE = frozenset({"torch.compiler.disable", "torch._dynamo.disable", "torch._disable_dynamo"})


def _disable_wrapped(value: cst.BaseExpression, aliases_qualname) -> Optional[str]:
    """``torch.compiler.disable(fn)`` / ``torch._dynamo.disable(fn, recursive=False)``: the wrapper's name."""
    if isinstance(value, cst.Call) and value.args:
        qual = aliases_qualname(value.func)
        if qual in _DISABLE and value.args[0].keyword is None:
            return qual
    return None


class CallToCompilerDisabled(Rule):
    code = "FL105"
    name = "call-to-compiler-disabled"
    message = "call to a `torch.compiler.disable`d function from compiled code: graph break"
    effects = (Effect.GRAPH_BREAK,)
    # No text trigger: the call site of a function disabled in another file need not mention "disable".
    gb_ids = ("GB0098", "GB0099", "GB0007", "GB0148")
    measured_on = ("torch 2.13.0 CPU", "torch 2.11.0 H200")
    docs = """
## What it does
Flags calls, in code that `torch.compile` traces, to functions decorated with (or wrapped in)
`@torch.compiler.disable`, `@torch._dynamo.disable` or `@torch._disable_dynamo`: functions of the
same file, methods called as `self.method(...)`, and functions imported from other files of the
same run. Also calls through an attribute set in `__init__` of the same file: a submodule
(`self.sub(x)`) whose class's `forward` is disabled, `self.sub = torch.compiler.disable(Block())`,
and `self.fn = disabled_function`.

## Why is this bad?
This is how the decorator is meant to work, but the cost is easy to miss at the call site: Dynamo
ends the graph at the call, runs the function eagerly and resumes tracing in a new graph. Measured
with torch 2.13.0 on CPU (`fixtures/FL105_call_to_compiler_disabled`, Linear → relu → disabled
helper → Linear → sigmoid): 1 graph-break site (GB0098 "Skip calling `torch.compiler.disable()`d
function"), 2 compiled regions per forward instead of 1; without the decorator: 0 breaks, 1 region.
Every form tried breaks: `@torch._dynamo.disable` (GB0098), `torch.compiler.disable(fn)` assigned to
a name (GB0098), `disable(recursive=False)` and a disabled method called as `self.m(...)` (GB0099
"Skip inlining `torch.compiler.disable()`d function"), `@torch._disable_dynamo` (GB0007). Reached
through attributes (backend "eager", torch 2.13.0 CPU): a submodule whose `forward` is decorated,
called as `self.sub(x)` (GB0099); `self.sub = torch.compiler.disable(Block())` (GB0148 "Unsupported
function call (delayed)"); `self.fn = disabled_fn` (GB0098); `functools.partial(disabled_fn)`
(GB0098, not flagged yet). The truth
table (case f14, torch 2.13 CPU) also shows 4 recompiles instead of 1 on a second input shape: each
fragment is its own frame with its own guards.

## Example
```python
@torch.compiler.disable
def debug_stats(h):
    ...

class Model(nn.Module):
    def forward(self, x):
        h = self.a(x)
        debug_stats(h)
        return self.b(h)
```

## Use instead
If the function really cannot be traced, keep the call and silence the finding where it is
intended (`# noqa: FL105`). Otherwise remove the decorator so the function is traced, or move the
call out of the compiled forward (for example into the training loop).

## Fix safety
No automatic fix: the decorator is usually there on purpose (a function Dynamo cannot trace).

## PyTorch reference
GB0098 https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0098.html ·
GB0099 https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0099.html ·
GB0007 https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0007.html ·
GB0148 https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0148.html
"""
    VALID = [
        # the disabled function is only called from the training loop, not from compiled code
        "import torch\nfrom torch import nn\n\n@torch.compiler.disable\ndef log_stats(h):\n    print(h.mean())\n\n"
        "class M(nn.Module):\n    def forward(self, x):\n        return x * 2\n\n"
        "def train(model, x):\n    out = model(x)\n    log_stats(out)\n",
        # other decorators are not `disable`
        "import torch\nfrom torch import nn\n\n@torch.no_grad()\ndef helper(h):\n    return h * 2\n\n"
        "class M(nn.Module):\n    def forward(self, x):\n        return helper(x)\n",
        # a local function that merely shares a name with nothing disabled; and torch.compiler API calls
        "import torch\nfrom torch import nn\n\ndef helper(h):\n    return h * 2\n\n"
        "class M(nn.Module):\n    def forward(self, x):\n        if torch.compiler.is_compiling():\n"
        "            return helper(x)\n        return x\n",
        # a disabled method that forward never calls
        "import torch\nfrom torch import nn\n\nclass M(nn.Module):\n    @torch.compiler.disable\n"
        "    def debug(self, h):\n        print(h)\n\n    def forward(self, x):\n        return x.relu()\n",
        # a local, undecorated function with the same name as a disabled method of another class
        "import torch\nfrom torch import nn\n\nclass A:\n    @torch.compiler.disable\n    def scale(self, h):\n"
        "        return h\n\ndef scale(h):\n    return h * 2\n\nclass M(nn.Module):\n    def forward(self, x):\n"
        "        return scale(x)\n",
        # a submodule whose forward is not disabled (only another method is)
        "import torch\nfrom torch import nn\n\nclass Sub(nn.Module):\n    @torch.compiler.disable\n    def debug(self, h):\n"
        "        print(h)\n\n    def forward(self, h):\n        return h * 2\n\nclass M(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n        self.sub = Sub()\n\n"
        "    def forward(self, x):\n        return self.sub(x)\n",
    ]
    INVALID = [
        # a submodule whose forward is disabled
        Invalid(
            "import torch\nfrom torch import nn\n\nclass Sub(nn.Module):\n    @torch.compiler.disable\n"
            "    def forward(self, h):\n        return h * 2\n\nclass M(nn.Module):\n    def __init__(self):\n"
            "        super().__init__()\n        self.sub = Sub()\n\n    def forward(self, x):\n"
            "        return self.sub(x.relu()) + 1\n",
            line=15,
        ),
        # a module instance wrapped in torch.compiler.disable in __init__
        Invalid(
            "import torch\nfrom torch import nn\n\nclass M(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.sub = torch.compiler.disable(nn.Linear(8, 8))\n\n    def forward(self, x):\n"
            "        return self.sub(x) + 1\n",
            line=10,
        ),
        # a disabled function stored on self
        Invalid(
            "import torch\nfrom torch import nn\n\n@torch.compiler.disable\ndef dis(h):\n    return h * 2\n\n"
            "class M(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.fn = dis\n\n"
            "    def forward(self, x):\n        return self.fn(x) + 1\n",
            line=14,
        ),
        Invalid(
            "import torch\nfrom torch import nn\n\n@torch.compiler.disable\ndef scale_rows(h):\n    return h * 2\n\n"
            "class M(nn.Module):\n    def forward(self, x):\n        h = scale_rows(x)\n        return h + 1\n",
            line=10,
        ),
        Invalid(
            "import torch\nfrom torch import nn\n\nclass M(nn.Module):\n    @torch._dynamo.disable(recursive=False)\n"
            "    def stats(self, h):\n        return h.mean()\n\n    def forward(self, x):\n"
            "        return x - self.stats(x)\n",
            line=10,
        ),
        Invalid(
            "import torch\nfrom torch import nn\n\ndef _scale(h):\n    return h * 2\n\n"
            "scale = torch.compiler.disable(_scale)\n\nclass M(nn.Module):\n    def forward(self, x):\n"
            "        return scale(x)\n",
            line=11,
        ),
        Invalid(
            "import torch\nfrom torch import _dynamo\n\n@_dynamo.disable\ndef helper(h):\n    return h.sin()\n\n"
            "@torch.compile\ndef f(x):\n    return g(x)\n\ndef g(x):\n    return helper(x) * 2\n",
            line=13,
        ),
    ]

    def __init__(self) -> None:
        super().__init__()
        self._wrapped: Optional[set[str]] = None

    def visit_Call(self, node: cst.Call, ctx) -> None:
        func = node.func
        if isinstance(func, cst.Name):
            name = func.value
            if self._name_disabled(name, ctx):
                ctx.report(node, self._msg(name))
            return
        if not isinstance(func, cst.Attribute):
            return
        if isinstance(func.value, cst.Name) and func.value.value == "self":
            method = func.attr.value
            if self._method_disabled(method, ctx):
                ctx.report(node, self._msg(f"self.{method}", "GB0099"))
                return
            gb = self._attribute_disabled(method, ctx)
            if gb is not None:
                ctx.report(node, self._msg(f"self.{method}", gb))
            return
        # module.function(...) through an import alias (``utils.scale_rows(h)``)
        qual = ctx.qualname(func)
        head = func
        while isinstance(head, cst.Attribute):
            head = head.value
        if (
            qual
            and isinstance(head, cst.Name)
            and head.value in ctx.file.aliases
            and not qual.startswith("torch.")
            # the run knows disabled functions by bare name only: a dunder (`Base.__init__(self)`)
            # would match any class's disabled `__init__` anywhere in the run (MONAI's croppad
            # matched transformers' WrappedFlexAttention.__init__, docs/zoo-audit.md round 4)
            and not (func.attr.value.startswith("__") and func.attr.value.endswith("__"))
            and func.attr.value in ctx.project.disabled_functions
        ):
            ctx.report(node, self._msg(ctx.code(func)))

    # -- lookups ---------------------------------------------------------------------------------
    @staticmethod
    def _msg(callee: str, gb: str = "GB0098") -> str:
        return (
            f"`{callee}` is wrapped in `torch.compiler.disable`: the graph breaks at this call, it runs "
            f"eagerly and tracing resumes in a new graph ({gb})"
        )

    def _same_file_wrapped(self, ctx) -> set[str]:
        """Module-level names bound to ``torch.compiler.disable(fn)`` in this file."""
        if self._wrapped is None:
            found: set[str] = set()
            for stmt in ctx.module.body:
                if not isinstance(stmt, cst.SimpleStatementLine):
                    continue
                for small in stmt.body:
                    if isinstance(small, cst.Assign) and _disable_wrapped(small.value, ctx.qualname):
                        for target in small.targets:
                            if isinstance(target.target, cst.Name):
                                found.add(target.target.value)
            self._wrapped = found
        return self._wrapped

    @staticmethod
    def _decorated(fn) -> bool:
        return any(d in _DISABLE for d in fn.decorators)

    def _name_disabled(self, name: str, ctx) -> bool:
        target = ctx.file.aliases.get(name)
        candidate = (
            name in ctx.project.disabled_functions
            or name in self._same_file_wrapped(ctx)
            or (target is not None and target.rsplit(".", 1)[-1] in ctx.project.disabled_functions)
        )
        if not candidate:  # the cheap test first: most calls are not to anything disabled
            return False
        if ctx.function is not None and _locally_bound(ctx.function.node, name):
            return False  # a parameter or local variable shadows any module-level function
        local = ctx.file.functions.get(name)
        if local is not None:  # a module-level function of this file decides by its own decorators
            return self._decorated(local)
        if name in self._same_file_wrapped(ctx):
            return True
        if target is not None:  # imported: `from utils import scale_rows [as sr]`
            return target.rsplit(".", 1)[-1] in ctx.project.disabled_functions and not target.startswith("torch.")
        return False

    def _attribute_disabled(self, attr: str, ctx) -> Optional[str]:
        """The graph-break id when ``self.<attr>`` holds something disabled: a submodule whose class's
        ``forward`` is decorated, or what ``__init__`` assigned: ``torch.compiler.disable(...)`` or a
        disabled function."""
        cls = ctx.cls
        if cls is None:
            return None
        ctor = cls.submodules.get(attr)
        if ctor is not None:
            sub = ctx.file.classes.get(ctor.rsplit(".", 1)[-1])
            if sub is not None and self._class_method_disabled(sub, "forward", ctx):
                return "GB0099"
            return None
        value = _init_value(cls, attr)
        if value is None:
            return None
        if value.kind == "call" and value.first_arg.startswith("positional") and value.name:
            if through_aliases(value.name, ctx.file.aliases) in _DISABLE:
                # a wrapped module instance is called through its __call__: reported as GB0148
                return "GB0148" if value.first_arg == "positional-call" else "GB0098"
        if value.kind == "name" and self._name_disabled(value.name, ctx):
            return "GB0098"
        return None

    def _class_method_disabled(self, cls, method: str, ctx) -> bool:
        seen = set()
        while cls is not None and cls.name not in seen:
            seen.add(cls.name)
            fn = cls.methods.get(method)
            if fn is not None:
                return self._decorated(fn)
            cls = next((ctx.file.classes[b] for b in cls.bases if b in ctx.file.classes), None)
        return False

    def _method_disabled(self, method: str, ctx) -> bool:
        return self._class_method_disabled(ctx.cls, method, ctx)


def _init_value(cls, attr: str) -> Optional[InitValue]:
    """What the first ``self.<attr> = value`` in the class's own ``__init__`` assigns (described)."""
    return next((w.value for w in cls.init_writes.get(attr, ()) if w.own and w.stmt == "assign"), None)


def _locally_bound(fn: cst.FunctionDef, name: str) -> bool:
    params = fn.params
    for p in (*params.posonly_params, *params.params, *params.kwonly_params):
        if p.name.value == name:
            return True
    for star in (params.star_arg, params.star_kwarg):
        if isinstance(star, cst.Param) and star.name.value == name:
            return True
    return any(
        isinstance(node.target, cst.Name) and node.target.value == name
        for node in function_nodes(fn, (cst.AssignTarget,))
    )
