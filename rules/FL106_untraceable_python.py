"""FL106 untraceable-python: Python constructs Dynamo cannot put in a graph (or traces differently from eager)."""

from __future__ import annotations

from typing import Optional, Sequence

import libcst as cst

from fusionlint.analysis.eager_only_default import filled_only_in_eager, first_failing_read, passed_as
from fusionlint.semantic.is_compiling import is_compiling_test
from fusionlint.analysis.walk import iter_nodes
from fusionlint.rule import Effect, Invalid, Rule

# numpy.random functions that torch._numpy implements (Dynamo traces them into torch's RNG) -> index of
# their `size` positional argument (None: every positional argument is a dimension, as in rand(d0, d1)).
# Without a size they return a Python scalar, which breaks the graph (GB0033).
_NP_TRACED: dict[str, Optional[int]] = {
    "rand": None, "randn": None, "random": 0, "random_sample": 0, "sample": 0,
    "uniform": 2, "normal": 2, "randint": 2,
}
# State handling and generator constructors: not draws (np.random.seed under compile simply has no effect on
# the traced draws, which the draws' own finding explains).
_NP_NOT_DRAWS = frozenset(
    {"seed", "get_state", "set_state", "default_rng", "RandomState", "Generator", "SeedSequence", "BitGenerator",
     "PCG64", "PCG64DXSM", "MT19937", "Philox", "SFC64", "shuffle"}
)
# Python's `random` module: every draw is a call Dynamo skips (measured: random.random, GB0007).
_PY_RANDOM = frozenset(
    {"random", "uniform", "randint", "randrange", "choice", "choices", "gauss", "normalvariate", "betavariate",
     "expovariate", "gammavariate", "lognormvariate", "triangular", "sample", "shuffle", "getrandbits"}
)
# Key functions of sorted() that read only shapes: harmless (measured: key=lambda t: t.shape[-1]).
_SHAPE_ONLY = frozenset({"shape", "size", "dim", "ndim", "numel", "ndimension", "dtype", "device"})


def _np_random_kind(call: cst.Call, fn: str) -> Optional[str]:
    """"scalar" / "array" for a draw Dynamo traces, "choice" / "unsupported" for draws that break, None: not a draw."""
    if fn in _NP_NOT_DRAWS or fn.startswith("_"):
        return None
    if fn == "choice":
        return "choice"
    if fn not in _NP_TRACED:
        return "unsupported"
    if any(a.keyword is not None and a.keyword.value == "size" and not _is_none(a.value) for a in call.args):
        return "array"
    if any(a.star for a in call.args):
        return None  # *args: cannot tell
    positional = [a for a in call.args if a.keyword is None]
    pos = _NP_TRACED[fn]
    if pos is None:
        return "array" if positional else "scalar"
    if len(positional) > pos and not _is_none(positional[pos].value):
        return "array"
    return "scalar"


class _SameFileCallees:
    """Where a module-level function of the file fails on a parameter given None: its first read of it
    (``x.shape``) before any test of it, following further calls of the same file's functions (a few
    levels). The innermost read of each call found is kept for the message."""

    _DEPTH = 3

    def __init__(self, module: cst.Module) -> None:
        self.defs = {s.name.value: s for s in module.body if isinstance(s, cst.FunctionDef)}
        self.innermost: dict[int, tuple[str, str, cst.CSTNode]] = {}  # call -> (function, parameter, read)

    def failing_read(self, call: cst.Call, name: str, depth: int = 0) -> Optional[cst.CSTNode]:
        fn = self.defs.get(call.func.value) if isinstance(call.func, cst.Name) else None
        where = passed_as(call, name) if fn is not None else None
        if where is None or depth >= self._DEPTH or not isinstance(fn.body, cst.IndentedBlock):
            return None
        position, keyword = where
        positional = [*fn.params.posonly_params, *fn.params.params]
        if keyword is None:
            param = positional[position] if position < len(positional) else None
        else:
            param = next((p for p in (*positional, *fn.params.kwonly_params) if p.name.value == keyword), None)
        if param is None:
            return None
        read = first_failing_read(fn.body.body, param.name.value, lambda c, n: self.failing_read(c, n, depth + 1))
        if read is not None:
            self.innermost[id(call)] = self.innermost.get(id(read), (fn.name.value, param.name.value, read))
        return read


def _eager_only_read(node: cst.If, block: Sequence[cst.CSTNode], ctx, callees: "_SameFileCallees"):
    """For ``if <name> is None and not <is_compiling>(): <name> = ...`` in ``block``: (name, the first read
    after it that fails on None, the (function, parameter, read) inside a same-file callee when that read is
    a call handing the name on), or None."""
    name = filled_only_in_eager(node, lambda expr: is_compiling_test(expr, ctx.qualname))
    if name is None:
        return None
    index = next((i for i, stmt in enumerate(block) if stmt is node), None)
    if index is None:
        return None
    read = first_failing_read(block[index + 1:], name, callees.failing_read)
    if read is None:
        return None
    return name, read, callees.innermost.get(id(read)) if isinstance(read, cst.Call) else None


def _reads_in_helpers(ctx, callees: "_SameFileCallees") -> dict[int, list[tuple[cst.CSTNode, str, int]]]:
    """helper's node -> [(its read that fails on None, the message, the caller's call)] for every compiled
    function of the file that fills a default only in eager mode and hands it to a compiled helper. Reads
    the engine's records of ``if`` statements (the ones visit_If is given), so the file is not walked again."""
    out: dict[int, list[tuple[cst.CSTNode, str, int]]] = {}
    for rec in ctx.file.records.get("If", ()):
        fn = rec.function
        block = getattr(rec.parents[0], "body", None) if rec.parents is not None else None
        if fn is None or not fn.compiled or not isinstance(block, (list, tuple)):
            continue
        found = _eager_only_read(rec.node, block, ctx, callees)
        if found is None or found[2] is None:
            continue
        name, call, (helper_name, param, read) = found
        helper = ctx.file.functions.get(helper_name)
        if helper is None or not helper.compiled:
            continue
        message = (
            f"`{param}` is None here under torch.compile: `{fn.qualname}` fills `{name}` only when not compiling "
            f"(`{ctx.code(rec.node.test).strip()}`) and hands it on through `{ctx.code(call.func).strip()}(...)`, so "
            f"`{ctx.code(read).strip()}` raises while tracing: graph break \"Observed exception\" (GB0088) and "
            f"the frame runs eagerly; fill the default in both modes in `{fn.qualname}`"
        )
        out.setdefault(id(helper.node), []).append((read, message, id(call)))
    return out


def _is_none(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "None"


class UntraceablePython(Rule):
    code = "FL106"
    name = "untraceable-python"
    message = "Python that torch.compile cannot trace (or traces differently from eager) in compiled code"
    effects = (Effect.GRAPH_BREAK, Effect.RECOMPILE, Effect.SILENT_DIVERGENCE)
    triggers = ("deepcopy", "random", "class ", "sorted(", "compiling", "__class__")
    gb_ids = ("GB4198", "GB0033", "GB0294", "GB0007", "GB8977", "GB0207", "GB0059", "GB0088", "GB4271", "GB0058", "GB0297")
    measured_on = ("torch 2.13.0 CPU", "torch 2.11.0 H200")
    docs = """
## What it does
Flags Python calls and statements that Dynamo cannot trace, in code that `torch.compile` traces:
- `copy.deepcopy(<tensor>)` (also of a list/tuple/dict display holding a tensor);
- a Python scalar drawn from `np.random` (`np.random.rand()`, `np.random.uniform(a, b)`, ... no `size`),
  `np.random.choice`, numpy.random functions torch cannot trace (`permutation`, `beta`, ...), and
  draws from Python's `random` module, and `random.Random(...)` built with keyword arguments;
- assigning `obj.__class__` (of a Python object, a module or a tensor);
- an array drawn from `np.random` (`np.random.rand(32)`, `np.random.normal(0, 1, size=n)`);
- a `class` statement;
- `sorted(...)` over tensor values (no `key`, or a `key` that computes on the tensors);
- a `None` default filled only in eager mode and then used as if filled:
  `if mask is None and not is_torchdynamo_compiling(): mask = ...` followed (in the same block, before
  any test or re-binding of `mask`) by `mask[...]`, `mask.attr`, `mask * x`, `len(mask)`, or by a
  call of a function of the same file that uses its parameter that way before testing it (followed
  through up to three such calls: LongT5's `_get_local_attention_mask(attention_mask, ...)` →
  `_split_into_blocks(x, ...)` → `x.shape`). Passing `mask` to any other call is not flagged (the
  callee may accept `None`).

## Why is this bad?
Measured with torch 2.13.0 on CPU, each form inside Linear → relu → <form> → Linear → sigmoid:
- `copy.deepcopy(h)`: graph break GB4198 "Attempted to copy.deepcopy a tensor", 2 compiled regions
  instead of 1 (also for `deepcopy([h, h])` and a parameter). `copy.deepcopy` of a dataclass
  config is harmless on 2.13 (0 breaks) but **breaks on torch 2.11 CUDA** (2 breaks, 3 recompiles in
  the truth table, h5); this rule does not flag it because the static pass cannot see the installed
  torch: do not deep-copy configs in forward if you support 2.11.
- `h * np.random.uniform(0.9, 1.1)`, `np.random.rand()`, `np.random.randint(1, 3)`,
  `if np.random.rand() < 0.5:`, and `np.random.choice(...)` with or without `size`: graph break GB0033
  "Data dependent operator", 2 regions, plus 1 recompile on the next call for the scalar forms (the
  drawn float is guarded, then made dynamic). `random.random()` (stdlib): graph break GB0007
  "Attempted to call function marked as skipped".
- numpy.random functions that torch's numpy layer does not implement (measured: `permutation`,
  `beta`, `binomial`, `exponential`, `gamma`, `geometric`, `laplace`, `lognormal`, `poisson`,
  `standard_normal`): graph break GB0294 "attempted to trace numpy function unsupported by PyTorch".
- Arrays from the functions it does implement (`rand(n)`, `randn(n)`, `random(n)`, `random_sample(n)`,
  `uniform(.., size=)`, `normal(.., size=)`, `randint(.., size=)`): **no break**, but the compiled graph
  draws the numbers from torch's generator (`aten::normal_functional` / `aten::uniform` inside the
  compiled region): `np.random.seed()` has no effect on it, numpy's state does not advance, and
  `torch.manual_seed` changes the result; eager is the exact opposite. Eager and compiled outputs
  differ even with both seeds fixed. torch 2.11 CUDA behaves the same (truth table h11).
- `random.Random(x=1)`: graph break GB0297 "random.Random() with improper arguments"
  (`random.Random()` and `random.Random(1)` trace).
- `self.helper.__class__ = Other` (a Python object), `self.sub.__class__ = Other` (an `nn.Linear`
  swapped for a subclass): graph break GB4271 "__class__ assignment on user-defined object";
  `y.__class__ = MyTensor` on a tensor: GB0058 "Failed to set tensor attribute".
- `class Gate: ...` inside forward: graph break GB8977 "Invalid call to `__build_class__`", and the
  resumed frame guards on the identity of the new class object, so **every call recompiles**:
  8 recompiles, then `recompile_limit` is hit and the rest of forward runs eagerly.
- `sorted([h[..., i].sum() for i in range(4)])`: graph break GB0207 "sort with non-constant keys";
  `sorted(tensor)` breaks with GB0059; `sorted(parts, key=lambda t: t.sum())` breaks too (GB0207, 6
  compiled regions). `sorted(chunks, key=lambda t: t.shape[-1])` is harmless (not flagged).
- `if mask is None and not torch.compiler.is_compiling(): mask = torch.ones(...)` then
  `h * mask[..., None]`: under compile the test is False, `mask` stays `None` and the subscript raises
  TypeError while tracing: graph break GB0088 "Observed exception" at the subscript, and Dynamo skips
  the whole frame ("Skipping the function and falling back to eager"): nothing of forward is
  compiled (measured with `fusionlint.confirm.measure`; filling the default unconditionally: 0
  breaks). Called as a plain `torch.compile(fn)` the TypeError can also reach the caller. Found on
  transformers 5.24 `SwitchTransformersStack.forward` (`causal_mask = attention_mask[:, None, None,
  :]`, the recall bench's break at that line, and the same exception re-reported at the
  `finally:` of `output_capturing`'s wrapper).
  Handed to a same-file helper that reads `x.shape` first (transformers 5.24 `LongT5Stack.forward`,
  a break the recall bench recorded): GB0088 at that read in the helper, where the finding is (its
  message names the caller and the fill to fix; a helper with no call of its own, which the rule's
  handlers do not visit, gets the finding on the call in forward instead). `tests/test_gb_forms.py`
  measures the form.
The fixture `fixtures/FL106_untraceable_python/bad.py` combines four forms: 3 break sites
(GB4198, GB0033, GB8977), 9 recompiles with the limit hit over 10 calls, eager != compiled.

## Example
```python
def forward(self, x):
    h = self.a(x)
    ref = copy.deepcopy(h)
    h = h * np.random.uniform(0.9, 1.1)
    return h + ref
```

## Use instead
```python
def forward(self, x, scale):      # draw random values outside, or with torch.rand under compile
    h = self.a(x)
    ref = h.detach().clone()
    return h * scale + ref
```
Define classes at module level; use `torch.sort`/`torch.topk` on a stacked tensor instead of `sorted`.

## Fix safety
No automatic fix: `deepcopy` → `.detach().clone()` differs in `requires_grad` for leaves, and
replacing numpy's generator by torch's changes the random stream.

## PyTorch reference
GB4198 https://meta-pytorch.github.io/compile-graph-break-site/gb/gb4198.html ·
GB0033 https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0033.html ·
GB0007 https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0007.html ·
GB8977 https://meta-pytorch.github.io/compile-graph-break-site/gb/gb8977.html ·
GB0207 https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0207.html ·
GB0059 https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0059.html
"""
    VALID = [
        # a seed given positionally; __class__ read, or assigned outside compiled code
        "import random\nimport torch\nfrom torch import nn\nclass M(nn.Module):\n    def swap(self, cls):\n"
        "        self.state.__class__ = cls\n    def forward(self, x):\n        r = random.Random(1)\n"
        "        return x * 2 if x.__class__ is torch.Tensor else x\n",
        # the eager-only default is passed on to a helper (which may accept None), or tested again first
        "import torch\nfrom torch import nn\nclass M(nn.Module):\n    def forward(self, x, mask=None):\n"
        "        if mask is None and not torch.compiler.is_compiling():\n            mask = torch.ones(x.shape[:-1])\n"
        "        bias = make_bias(mask)\n        if mask is not None:\n            x = x * mask[..., None]\n"
        "        return x + bias\n",
        # filled in both modes
        "import torch\nfrom torch import nn\nclass M(nn.Module):\n    def forward(self, x, mask=None):\n"
        "        if mask is None:\n            mask = torch.ones(x.shape[:-1])\n        return x * mask[..., None]\n",
        # deepcopy of a config object: harmless on torch 2.13
        "import copy\nimport torch\nfrom torch import nn\nclass M(nn.Module):\n    def __init__(self, cfg):\n"
        "        super().__init__()\n        self.cfg = cfg\n    def forward(self, x):\n        cfg = copy.deepcopy(self.cfg)\n"
        "        return x * cfg.scale\n",
        # clone instead of deepcopy
        "import torch\nfrom torch import nn\nclass M(nn.Module):\n    def forward(self, x):\n        return x.detach().clone() * 2\n",
        # sorting by shape
        "import torch\nfrom torch import nn\nclass M(nn.Module):\n    def forward(self, x):\n"
        "        chunks = sorted(x.split([8, 24], -1), key=lambda t: t.shape[-1])\n        return torch.cat(chunks, -1)\n",
        # sorting Python ints
        "import torch\nfrom torch import nn\nclass M(nn.Module):\n    def forward(self, x, dims: list):\n"
        "        return x.permute(*sorted(dims))\n",
        # numpy random in the data pipeline, outside compiled code
        "import numpy as np\nimport torch\ndef augment(x):\n    return x * np.random.uniform(0.9, 1.1)\n",
        # a module-level class; torch.rand under compile
        "import torch\nfrom torch import nn\nclass Gate:\n    k = 0.5\nclass M(nn.Module):\n    def forward(self, x):\n"
        "        return x * Gate.k + torch.rand(32) * 0.01\n",
    ]
    INVALID = [
        Invalid(
            "import random\nimport torch\nfrom torch import nn\nclass Plain:\n    pass\nclass M(nn.Module):\n"
            "    def forward(self, x):\n        self.state.__class__ = Plain\n        r = random.Random(x=1)\n"
            "        return x * 2\n",
            count=2,
        ),
        Invalid(
            "import torch\nfrom torch import nn\nclass M(nn.Module):\n    def forward(self, x, mask=None):\n"
            "        if mask is None and not torch.compiler.is_compiling():\n            mask = torch.ones(x.shape[:-1])\n"
            "        return x * mask[..., None]\n",
            line=7,
        ),
        Invalid(
            "import copy\nimport torch\nfrom torch import nn\nclass M(nn.Module):\n    def forward(self, x):\n"
            "        ref = copy.deepcopy(x)\n        return x + ref\n",
            line=6,
        ),
        Invalid(
            "import numpy as np\nimport torch\nfrom torch import nn\nclass M(nn.Module):\n    def forward(self, x):\n"
            "        if np.random.rand() < 0.5:\n            x = x.flip(1)\n        return x\n",
            line=6,
        ),
        Invalid(
            "import numpy as np\nimport torch\nfrom torch import nn\nclass M(nn.Module):\n    def forward(self, x):\n"
            "        noise = torch.from_numpy(np.random.normal(0.0, 0.01, size=32)).float()\n        return x + noise\n",
            line=6,
        ),
        Invalid(
            "import torch\nfrom torch import nn\nclass M(nn.Module):\n    def forward(self, x):\n"
            "        class Scale:\n            k = 2.0\n        return x * Scale.k\n",
            line=5,
        ),
        Invalid(
            "import torch\nfrom torch import nn\nclass M(nn.Module):\n    def forward(self, h):\n"
            "        parts = sorted([h[..., i].sum() for i in range(4)])\n        return h * parts[0]\n",
            line=5,
        ),
        Invalid(
            "import numpy as np\nimport torch\nfrom torch import nn\nclass M(nn.Module):\n    def forward(self, h):\n"
            "        idx = torch.from_numpy(np.random.permutation(32))\n        keep = np.random.choice(4)\n"
            "        return h[..., idx] * keep\n",
            count=2,
        ),
        Invalid(
            "import random\nfrom copy import deepcopy\nimport torch\nfrom torch import nn\nclass M(nn.Module):\n"
            "    def forward(self, h):\n        a = deepcopy([h, h])\n        return a[0] * random.random()\n",
            count=2,
        ),
    ]

    # -- calls -----------------------------------------------------------------------------------
    def __init__(self) -> None:
        super().__init__()
        self._helper_reads: Optional[dict[int, list[tuple[cst.CSTNode, str, int]]]] = None
        self._moved: set[int] = set()  # calls whose callee's failing read was reported there
        self._callees: Optional[_SameFileCallees] = None  # the file's module-level functions, built on first use

    def _same_file_callees(self, ctx) -> "_SameFileCallees":
        if self._callees is None:
            self._callees = _SameFileCallees(ctx.module)
        return self._callees

    def visit_Call(self, node: cst.Call, ctx) -> None:
        self._report_helper_reads(ctx)
        qual = ctx.qualname(node.func) or ""
        if qual == "copy.deepcopy":
            self._deepcopy(node, ctx)
        elif qual.startswith("numpy.random.") and qual.count(".") == 2:
            self._np_random(node, qual.rsplit(".", 1)[-1], ctx)
        elif qual == "random.Random" and any(a.keyword is not None or a.star == "**" for a in node.args):
            # measured, torch 2.13 CPU: random.Random(x=1) -> GB0297; random.Random() and random.Random(1) trace
            ctx.report(node, f"`{ctx.code(node.func)}(...)` with keyword arguments in compiled code: Dynamo only "
                             "models `random.Random()` with at most one positional seed: graph break (GB0297); "
                             "pass the seed positionally, or build the generator outside the compiled code")
        elif qual.startswith("random.") and qual.count(".") == 1 and (
            ctx.file.aliases.get("random") == "random"
            # `from random import random` (x-transformers' layer dropout: `random() < layer_dropout`)
            or (isinstance(node.func, cst.Name) and ctx.file.aliases.get(node.func.value) == qual)
        ):
            fn = qual.split(".", 1)[1]
            if fn in _PY_RANDOM:
                ctx.report(
                    node,
                    f"`{ctx.code(node.func)}()` calls Python's `random` module, which Dynamo skips: graph break "
                    "(GB0007); draw with torch (or pass the value in as a tensor)",
                )
        elif qual == "sorted" and isinstance(node.func, cst.Name):
            self._sorted(node, ctx)

    # -- __class__ assignment --------------------------------------------------------------------
    def visit_Assign(self, node: cst.Assign, ctx) -> None:
        if ctx.function is None:
            return
        for target in node.targets:
            t = target.target
            if not (isinstance(t, cst.Attribute) and t.attr.value == "__class__"):
                continue
            if ctx.is_tensor(t.value):
                why = "Dynamo cannot set a tensor's attribute with a C setter: graph break (GB0058)"
            else:
                why = "Dynamo does not support re-assigning `__class__`: graph break (GB4271)"
            ctx.report(t, f"assigning `{ctx.code(t)}` in compiled code: {why}; choose the class when the "
                          "object is built, outside the compiled region")

    def _deepcopy(self, node: cst.Call, ctx) -> None:
        if not node.args or node.args[0].keyword is not None:
            return
        value = node.args[0].value
        holds_tensor = ctx.is_tensor(value)
        if not holds_tensor and isinstance(value, (cst.List, cst.Tuple, cst.Set)):
            holds_tensor = any(not isinstance(e, cst.StarredElement) and ctx.is_tensor(e.value) for e in value.elements)
        if not holds_tensor and isinstance(value, cst.Dict):
            holds_tensor = any(isinstance(e, cst.DictElement) and ctx.is_tensor(e.value) for e in value.elements)
        if holds_tensor:
            ctx.report(
                node,
                "`copy.deepcopy` of a tensor cannot be traced: graph break (GB4198); use `.detach().clone()` "
                "(or `.clone()` to keep the autograd link)",
                tensor=value,
            )

    def _np_random(self, node: cst.Call, fn: str, ctx) -> None:
        kind = _np_random_kind(node, fn)
        name = ctx.code(node.func)
        if kind == "scalar":
            ctx.report(
                node,
                f"`{name}(...)` returns a Python scalar from numpy's generator: graph break (GB0033) and a "
                "recompile on the next call; pass the value in as a tensor or draw it with torch",
            )
        elif kind == "choice":
            ctx.report(node, f"`{name}(...)` cannot be traced: graph break (GB0033); draw with torch "
                       "(`torch.randint`, `torch.multinomial`) or pass the indices in")
        elif kind == "unsupported":
            ctx.report(node, f"`{name}(...)` is a numpy function torch.compile cannot trace: graph break (GB0294); "
                       "draw with torch or pass the values in")
        elif kind == "array":
            ctx.report(
                node,
                f"`{name}(...)` is traced into torch's RNG under compile: numpy's seed and state are ignored, so "
                "compiled results differ from eager; draw with torch or pass the array in",
            )

    def _sorted(self, node: cst.Call, ctx) -> None:
        if not node.args or node.args[0].keyword is not None:
            return
        seq = node.args[0].value
        key = next((a.value for a in node.args if a.keyword is not None and a.keyword.value == "key"), None)
        if not self._tensor_elements(seq, ctx):
            return
        if key is not None and not self._key_on_values(key):
            return
        ctx.report(
            node,
            "`sorted()` over tensor values compares them in Python: graph break (GB0207/GB0059) and a "
            "host read per comparison; use `torch.sort`/`torch.topk` on a stacked tensor",
            tensor=seq,
        )

    @staticmethod
    def _tensor_elements(seq: cst.BaseExpression, ctx) -> bool:
        if isinstance(seq, (cst.ListComp, cst.GeneratorExp, cst.SetComp)):
            return ctx.is_tensor(seq.elt)
        if isinstance(seq, (cst.List, cst.Tuple)):
            elements = [e for e in seq.elements if not isinstance(e, cst.StarredElement)]
            return bool(elements) and all(ctx.is_tensor(e.value) for e in elements)
        return ctx.is_tensor(seq)  # iterating a tensor, or a tensor's split()/chunk()/unbind()

    @staticmethod
    def _key_on_values(key: cst.BaseExpression) -> bool:
        """``key=lambda t: t.sum()``: the key computes on the tensor (not only on its shape)."""
        if not isinstance(key, cst.Lambda):
            return False  # a named key function: cannot tell
        params = key.params.params
        if len(params) != 1:
            return False
        name = params[0].name.value
        body = key.body
        found_shape = False
        uses_param = False
        for node in (body, *iter_nodes(body, (cst.Attribute, cst.Name), into_nested_defs=True)):
            if isinstance(node, cst.Attribute):
                if node.attr.value in _SHAPE_ONLY:
                    found_shape = True
            elif isinstance(node, cst.Name):
                if node.value == name:
                    uses_param = True
                if node.value == "len":
                    found_shape = True
        return uses_param and not found_shape and not isinstance(body, cst.Name)

    # -- a None default filled only in eager mode -------------------------------------------------
    def _report_helper_reads(self, ctx) -> None:
        """In a compiled same-file helper that a compiled caller hands a default filled only in eager mode
        (LongT5's `_split_into_blocks`, given `attention_mask` through `_get_local_attention_mask`): report
        the read that raises on None here, the line where Dynamo reports the break. Handlers run by node
        type (Call before If), so the callers' tests are read here first; a read not reported here (a helper
        without calls) stays a finding on the call in visit_If."""
        fn = ctx.function
        if fn is None:
            return
        if self._helper_reads is None:
            self._helper_reads = _reads_in_helpers(ctx, self._same_file_callees(ctx))
        for read, message, call in self._helper_reads.pop(id(fn.node), ()):
            ctx.report(read, message, no_reason=True)
            self._moved.add(call)

    def visit_If(self, node: cst.If, ctx) -> None:
        if ctx.function is None:
            return
        body = getattr(ctx.parent, "body", None)
        if not isinstance(body, (list, tuple)):
            return
        found = _eager_only_read(node, body, ctx, self._same_file_callees(ctx))
        if found is None:
            return
        name, read, inner = found
        if id(read) in self._moved:
            return  # reported at the callee's read (visit_Call), where Dynamo raises
        filled = f"`{name}` is still None here under torch.compile: its default is filled only when not compiling " \
                 f"(`{ctx.code(node.test).strip()}`)"
        if inner is not None:
            fn_name, _, inner_read = inner
            what = (f", and `{ctx.code(read.func).strip()}(...)` uses it without a None test (`{ctx.code(inner_read).strip()}` "
                    f"in `{fn_name}`), so it raises while tracing")
        else:
            what = f", so `{ctx.code(read).strip()}` raises TypeError while tracing"
        ctx.report(read, filled + what + ": graph break \"Observed exception\" (GB0088) and the frame runs eagerly; "
                   "fill the default in both modes")

    # -- class statements ------------------------------------------------------------------------
    def visit_ClassDef(self, node: cst.ClassDef, ctx) -> None:
        if ctx.function is None:
            return
        ctx.report(
            node.name,
            f"`class {node.name.value}` inside compiled code: graph break (GB8977), and each call creates a new "
            "class object that the resumed frame guards on, so every call recompiles until the recompile limit; "
            "define the class at module level",
        )
