"""FL209 shared-decorator-wrapper: a decorator's wrapper that breaks the graph is compiled once per decorated function."""

from __future__ import annotations

import libcst as cst

from fusionlint.analysis.index import FunctionInfo
from fusionlint.analysis.walk import iter_nodes
from fusionlint.rule import Effect, Invalid, Rule
from fusionlint.semantic.frame_split import first_reads

_DOCS = """
## What it does
Flags, in the function a decorator returns in place of the one it takes (`def wrapped(*args,
**kwargs): ... return func(*args, **kwargs)`), the lines where it first reads what changes from one
decorated function to the next: the function it closes over (`func`), its `*args` (the `self` of a
decorated method is a different class each time), its `**kwargs`, and a `self` parameter of its own.
Reported when two or more of the functions it decorates break the graph when called (the project
model's break summary: a `print`, a logger, `.item()`, a call of a function that breaks, in any file)
and run under one compiled call: one calls the other, or both are reached from a common caller (a
model whose head, body and decoder `forward`s carry the decorator). The finding names them.

Off by default (`--extend-select FL209`): the fix is the graph break, which its own finding reports,
and on the recall bench a failed guard was recorded at only 10 of the 67 lines it reported that the
models ran (most decorated functions of transformers break on some path only: with labels, with a
config's layerdrop above 0, in train mode; where none breaks, the wrapper is inlined).

## Why is this bad?
A wrapper defined inside a decorator is one code object, shared by every function the decorator
wraps; only its closure differs. Called from compiled code it is inlined together with the function
it wraps, unless that function breaks the graph: then Dynamo stops the caller's graph at the call and
compiles the wrapper as a frame of its own. Dynamo caches compiled frames per code object, guarded on
the closure's function (`func.__code__`), on the type of `args[0]` and on the length and keys of
`args` and `kwargs`, so each decorated function that breaks compiles the same wrapper again; after
`recompile_limit` (8) compiles the wrapper, and the function it wraps with it, runs eagerly for
every function not compiled yet.

Measured with torch 2.13.0 CPU (backend eager; `fixtures/FL209_shared_decorator_wrapper`): three
modules whose `forward`s carry the same `@renamed_kwarg("scale", "alpha")` and each `print`, called
from one compiled model, compiled `wrapped` three times, each recompile failing the guard on
`args[0]`'s type at `return func(*args, **kwargs)`; with a different keyword per module the failed
guard was on the closure's `old` at `if old in kwargs:` (closure values other than the function
are not reported). With twelve such modules `wrapped` hit `recompile_limit` (8) and Dynamo stopped
compiling it. On the recall bench (`bench/recall.py`) transformers' `@deprecate_kwarg` wrapper
recompiled in m2m_100, nllb-moe and jetmoe, with failed guards on `func.__code__` (at `func_name =
func.__name__`), `len(args)` and `args[0]`'s type (at `args[0].__class__`), `len(kwargs)` (at
`old_name in kwargs`) and `not args` (at `return func(*args, **kwargs)`).

## Example
```python
def renamed_kwarg(old, new):
    def wrapper(func):
        @functools.wraps(func)
        def wrapped(*args, **kwargs):
            if old in kwargs:                     # guard on kwargs
                kwargs[new] = kwargs.pop(old)
            return func(*args, **kwargs)          # guards on func, args[0]'s type
        return wrapped
    return wrapper

class Mixer(nn.Module):
    @renamed_kwarg("scale", "alpha")
    def forward(self, x, alpha=1.0):
        print("mixing")                           # graph break: the wrapper is a frame of its own
        return x * alpha
```

## Use instead
Remove the graph break from the decorated functions (here the `print`): the wrapper is then inlined
into each caller's graph and compiled with it. Where a break must stay, apply what the decorator does
outside the compiled code (rename the keyword at the call site, not in a wrapper).

## Fix safety
No automatic fix: the graph break in the decorated function is what to change (see its own finding).

## PyTorch reference
No graph-break id (this is a recompile):
https://docs.pytorch.org/docs/main/user_guide/torch_compiler/compile/programming_model.recompilation.html
"""

_DECORATOR = """import functools

import torch
from torch import nn


def renamed_kwarg(old, new):
    def wrapper(func):
        @functools.wraps(func)
        def wrapped(*args, **kwargs):
            if old in kwargs:
                kwargs[new] = kwargs.pop(old)
            return func(*args, **kwargs)

        return wrapped

    return wrapper


"""


def _layers(first: str, second: str, together: bool = True) -> str:
    return _DECORATOR + (
        "class A(nn.Module):\n    @renamed_kwarg('scale', 'alpha')\n    def forward(self, x, alpha=1.0):\n"
        f"{first}        return x * alpha\n\n\n"
        "class B(nn.Module):\n    @renamed_kwarg('scale', 'alpha')\n    def forward(self, x, alpha=2.0):\n"
        f"{second}        return x + alpha\n"
    ) + (_BOTH if together else "")


_BOTH = (
    "\n\nclass Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
    "        self.a = A()\n        self.b = B()\n\n    def forward(self, x):\n        return self.b(self.a(x))\n"
)


_PRINTS = "        print('x')\n"


class SharedDecoratorWrapper(Rule):
    code = "FL209"
    name = "shared-decorator-wrapper"
    message = "a decorator's wrapper that breaks the graph is one code object for every function it decorates: compiled again for each"
    effects = (Effect.RECOMPILE,)
    # off by default: on the recall bench a failed guard was recorded at 10 of the 67 lines it reported that
    # the models ran (most decorated functions break only on some path: with labels, with a config's
    # layerdrop above 0, in train mode)
    default_enabled = False
    measured_on = ("torch 2.13.0 CPU",)
    docs = _DOCS

    VALID = [
        # no decorated function breaks: the wrapper is inlined into each caller's graph
        _layers("", ""),
        # one breaks: the wrapper is a frame of its own for that function only
        _layers(_PRINTS, ""),
        # both break, but no compiled code calls both: one model compiles the wrapper once
        _layers(_PRINTS, _PRINTS, together=False),
        # not compiled: no forward, no torch.compile
        _DECORATOR + "@renamed_kwarg('a', 'b')\ndef f(x, b=1):\n    print(x)\n    return x\n\n\n"
        "@renamed_kwarg('a', 'b')\ndef g(x, b=1):\n    print(x)\n    return x\n",
    ]
    INVALID = [
        # both break: `kwargs` (line 11), then `func` and `args` (line 13)
        Invalid(_layers(_PRINTS, _PRINTS), line=11, count=2),
        # a plain decorator whose wrapper takes `self`: guarded on `self` and `func` where it calls
        Invalid(
            "import torch\nfrom torch import nn\n\n\ndef checked(func):\n    def inner(self, x):\n"
            "        return func(self, x)\n\n    return inner\n\n\n"
            "class A(nn.Module):\n    @checked\n    def forward(self, x):\n        return x * x.sum().item()\n\n\n"
            "class B(nn.Module):\n    @checked\n    def forward(self, x):\n        return x + x.max().item()\n" + _BOTH,
            line=7,
            count=1,
        ),
        # the decorated functions break through a helper they call (here in the same file)
        Invalid(
            _DECORATOR + "def log_shape(x):\n    print(x.shape)\n\n\n"
            "class A(nn.Module):\n    @renamed_kwarg('scale', 'alpha')\n    def forward(self, x, alpha=1.0):\n"
            "        log_shape(x)\n        return x * alpha\n\n\n"
            "class B(nn.Module):\n    @renamed_kwarg('scale', 'alpha')\n    def forward(self, x):\n"
            "        log_shape(x)\n        return x + 1\n" + _BOTH,
            line=11,
            count=2,
        ),
    ]

    def visit_IndentedBlock(self, node: cst.IndentedBlock, ctx) -> None:
        fn = ctx.function
        if fn is None or fn.node.body is not node or not fn.shared_by:
            return
        varying = _varying_names(fn)
        if not varying:
            return
        shared = fn.shared_by
        named = ", ".join(f"`{qual}` ({path}: {why})" for qual, path, why in shared[:2])
        named += f" and {len(shared) - 2} more" if len(shared) > 2 else ""
        at_node: dict[int, tuple[cst.CSTNode, list[str]]] = {}
        for name, _read, at in first_reads(node.body, varying):
            at_node.setdefault(id(at), (at, []))[1].append(name)
        for at, names in at_node.values():
            what = " and ".join(f"`{n}` ({varying[n]})" for n in names)
            ctx.report(
                at,
                f"{what} {'differ' if len(names) > 1 else 'differs'} for each function this decorator wraps, and "
                f"{len(shared)} of them break the graph when called ({named}): Dynamo compiles `{fn.name}`, one "
                f"code object, as a frame of its own for each and guards on {_names(names)} here, so each compiles "
                "it again and after the recompile limit (8) the wrapper and what it wraps run eagerly; remove the "
                "graph break from the decorated functions",
                no_reason=True,
            )


def _names(names: list[str]) -> str:
    return " and ".join(f"`{n}`" for n in names)


def _varying_names(fn: FunctionInfo) -> dict[str, str]:
    """What differs between the decorated functions in a wrapper's frame: the enclosing function's
    parameter it calls (the decorated function), its ``*args`` and ``**kwargs``, its own ``self``."""
    params = fn.node.params
    own = {p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)}
    out: dict[str, str] = {}
    if params.params and params.params[0].name.value == "self":
        out["self"] = "the object of the decorated method"
    if isinstance(params.star_arg, cst.Param):
        out[params.star_arg.name.value] = "the positional arguments, `self` first for a method"
        own.add(params.star_arg.name.value)
    if isinstance(params.star_kwarg, cst.Param):
        out[params.star_kwarg.name.value] = "the keyword arguments"
        own.add(params.star_kwarg.name.value)
    # the decorated function is a parameter of the function that defines the wrapper (`wrapper(func)`);
    # a decorator factory's own parameters (`deprecate_kwarg(old_name, ...)`) are the same for each use
    enclosing: set[str] = set()
    if fn.parent is not None:
        p = fn.parent.node.params
        enclosing.update(q.name.value for q in (*p.posonly_params, *p.params, *p.kwonly_params))
    for call in iter_nodes(fn.node.body, (cst.Call,)):
        if isinstance(call.func, cst.Name) and call.func.value in enclosing - own:
            out[call.func.value] = "the decorated function"
    return out
