"""FL107 rnn-module-in-compiled-forward: an nn.LSTM/nn.GRU/nn.RNN submodule called from compiled code."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from fusionlint.analysis.context import LINE_REFS
from fusionlint.analysis.judge import short
from fusionlint.analysis.walk import iter_nodes
from fusionlint.rule import Effect, Invalid, Rule

_RNN_CLASSES = frozenset({"LSTM", "GRU", "RNN"})


def _rnn_kind(ctor: str) -> Optional[str]:
    """"LSTM"/"GRU"/"RNN" for ``torch.nn.LSTM``, ``torch.nn.modules.rnn.GRU`` ..., else None."""
    if not ctor.startswith("torch.nn."):
        return None
    last = ctor.rsplit(".", 1)[-1]
    return last if last in _RNN_CLASSES else None


class RnnModuleInCompiledForward(Rule):
    code = "FL107"
    name = "rnn-module-in-compiled-forward"
    message = "nn.LSTM/nn.GRU/nn.RNN called from compiled code: Dynamo does not trace it (graph break)"
    effects = (Effect.GRAPH_BREAK,)
    triggers = ("LSTM", "GRU", "RNN")
    gb_ids = ("GB0014",)
    measured_on = ("torch 2.13.0 CPU", "torch 2.11.0 H200")
    docs = """
## What it does
Flags calls of `nn.LSTM`, `nn.GRU` and `nn.RNN` submodules (`self.rnn(x)`, assigned in
`__init__`) from a compiled `forward` or from a helper that forward calls.

## Why is this bad?
Dynamo does not trace the cuDNN/MKLDNN RNN modules: it raises "Attempted to wrap RNN, GRU, or
LSTM", reported as GB0014 ("Failed to handle graph break gracefully. Skipping the function and
falling back to eager"). Measured with torch 2.13.0 on CPU:
- called directly in `forward` (`fixtures/FL107_rnn_module_in_compiled_forward`: Linear → relu →
  LSTM → Linear → sigmoid): 1 break site at the LSTM call; only the code before the call is
  compiled (1 region), the LSTM **and everything after it** in `forward` run eagerly (no resume
  function). When the RNN is the first op of `forward` the whole frame runs eagerly (truth table
  h4: 0 compiled regions, for LSTM and GRU alike).
- called from a helper method between two Linears: 1 break site in the helper, 2 compiled regions
  per forward (truth table h4b: 8 launches compiled vs 7 eager).
- two RNNs in one `forward`, each in its own `if` (timm's `Sequencer2d`: `self.rnn_v`, then
  `self.rnn_h`): with both branches on, 1 break site, at the first; Dynamo abandons the frame there
  and never traces the second. With the first branch configured off, the second is the break site.
  So a forward gets **one finding, at its first RNN call in source order**; the message names the
  later RNN calls and their lines ("they break when this one is skipped").
torch 2.11 on an H200 breaks the same way.

## Example
```python
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(32, 32, batch_first=True)

    def forward(self, x):
        h, _ = self.rnn(x)
        return h
```

## Use instead
There is no drop-in fix. Options, each with a measured cost:
- Accept the break but keep the rest compiled: put the RNN call in its own method so the code
  around it still compiles (2 regions instead of an eager tail).
- `nn.LSTMCell`/`nn.GRUCell` in a Python loop over time steps traces (0 breaks, 1 region, see
  `good.py`), but the loop is unrolled: 19 C++ kernels for 16 steps on CPU 2.13, and the graph
  specialises on the sequence length.
- `torch._dynamo.config.allow_rnn = True` compiles the modules (experimental). Measured: on CPU
  2.13 the LSTM compiled in 5.6 s cold, the GRU was unrolled per time step (19 kernels, 35 launches
  vs 3 eager) with a 42 s cold compile; on CUDA torch 2.11 the compiled LSTM/GRU outputs were
  **not** allclose to eager. Do not enable it without checking the outputs.

## Fix safety
No automatic fix: every alternative changes compile time, numerics or structure.

## PyTorch reference
GB0014 https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0014.html
"""
    VALID = [
        # LSTMCell is traced
        "import torch\nfrom torch import nn\nclass M(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.cell = nn.LSTMCell(8, 8)\n    def forward(self, x, hc):\n        return self.cell(x, hc)\n",
        # the LSTM is run outside compiled code (an encoder used from the training script)
        "import torch\nfrom torch import nn\nclass Enc:\n    def __init__(self):\n        self.rnn = nn.GRU(8, 8)\n"
        "    def run(self, x):\n        return self.rnn(x)[0]\n",
        # an LSTM submodule that forward never calls
        "import torch\nfrom torch import nn\nclass M(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.rnn = nn.LSTM(8, 8)\n        self.lin = nn.Linear(8, 8)\n    def forward(self, x):\n"
        "        return self.lin(x)\n",
        # reading the RNN's parameters is fine
        "import torch\nfrom torch import nn\nclass M(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.rnn = nn.LSTM(8, 8)\n    def forward(self, x):\n        return x @ self.rnn.weight_ih_l0.t()\n",
    ]
    INVALID = [
        # two LSTMs one after the other: Dynamo stops at the first (measured, torch 2.13: "cannot resume
        # from", the second is never traced), so one finding, at the first, naming the others' lines
        Invalid(
            "import torch\nfrom torch import nn\nclass M(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.rnn_v = nn.LSTM(8, 8)\n        self.rnn_h = nn.LSTM(8, 8)\n    def forward(self, x):\n"
            "        v, _ = self.rnn_v(x)\n        if x.dim() > 2:\n            v = self.rnn_h(v)[0]\n"
            "        h, _ = self.rnn_h(x)\n        return v + h\n",
            line=9,
            count=1,
        ),
        # timm's Sequencer2d: each LSTM in its own `if` (measured, torch 2.13 CPU: both on, 1 break at the
        # first; the first configured off, 1 break at the second): one finding, at the first
        Invalid(
            "import torch\nfrom torch import nn\nclass M(nn.Module):\n    def __init__(self, v=True, h=True):\n"
            "        super().__init__()\n        self.with_v, self.with_h = v, h\n"
            "        self.rnn_v = nn.LSTM(8, 8)\n        self.rnn_h = nn.LSTM(8, 8)\n    def forward(self, x):\n"
            "        v = h = x\n        if self.with_v:\n            v, _ = self.rnn_v(x)\n"
            "        if self.with_h:\n            h, _ = self.rnn_h(x)\n        return v + h\n",
            line=12,
            count=1,
        ),
        # the first in a branch: the one after the branch breaks when the branch is not taken; named in
        # the first one's message
        Invalid(
            "import torch\nfrom torch import nn\nclass M(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.rnn = nn.GRU(8, 8)\n    def forward(self, x, flag: bool = False):\n"
            "        if flag:\n            x = self.rnn(x)[0]\n        return self.rnn(x)[0]\n",
            line=9,
            count=1,
        ),
        Invalid(
            "import torch\nfrom torch import nn\nclass M(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.rnn = nn.LSTM(8, 8, batch_first=True)\n    def forward(self, x):\n        h, _ = self.rnn(x)\n"
            "        return h\n",
            line=8,
        ),
        Invalid(
            "import torch\nfrom torch import nn\nclass M(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.gru = torch.nn.GRU(8, 8)\n        self.lin = nn.Linear(8, 8)\n    def encode(self, h):\n"
            "        return self.gru(h)[0]\n    def forward(self, x):\n        return self.lin(self.encode(self.lin(x)))\n",
            line=9,
        ),
        Invalid(
            "import torch\nfrom torch.nn import RNN, Module\nclass M(Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.rnn = RNN(8, 8)\n    def forward(self, x, h0):\n        return self.rnn.forward(x, h0)[0]\n",
            line=8,
        ),
    ]

    def __init__(self) -> None:
        super().__init__()
        self._reported: set[int] = set()  # forwards (by node id) whose first RNN call is reported

    def visit_Call(self, node: cst.Call, ctx) -> None:
        found = _rnn_call(node, ctx)
        if found is None:
            return
        attr, kind, where_assigned = found
        fn = ctx.function
        in_forward = fn is not None and fn.kind == "forward"
        message = (
            f"`self.{attr}` is an nn.{kind}{where_assigned}: Dynamo does not trace it (\"Attempted to wrap RNN, GRU, "
            "or LSTM\", GB0014); "
        )
        if not in_forward:
            ctx.report(node, message + "the graph is split around it")
            return
        # Dynamo cannot resume after this break (measured, torch 2.13 CPU: "skipping the rest of the
        # function"): the rest of the forward runs eagerly, so a later RNN call is never traced while
        # this one runs. It breaks only when this one is skipped (a branch configured off): one finding
        # per forward, at the first call, naming the others (timm's Sequencer2d: rnn_v, then rnn_h)
        key = id(fn.node)
        if key in self._reported:
            return
        later = [n for n in ctx.memo(("FL107-rnn-calls", key), lambda: _rnn_calls(fn.node, ctx)) if n is not node]
        message += "the rest of this forward runs eagerly"
        if later:
            names = ", ".join(dict.fromkeys(f"`{short(ctx.code(n.func))}`" for n in later))
            many = len(later) > 1
            message += (
                f"; the later RNN call{'s' if many else ''} ({names}, line{'s' if many else ''} {LINE_REFS}) "
                f"{'are' if many else 'is'} then never traced: {'they break' if many else 'it breaks'} when this "
                "one is skipped (its branch configured off)"
            )
        before = len(ctx.reports)
        ctx.report(node, message, line_refs=tuple(later))
        if len(ctx.reports) > before:  # not in an eager-only branch (`if not is_compiling()`)
            self._reported.add(key)


def _rnn_call(node: cst.Call, ctx) -> Optional[tuple[str, str, str]]:
    """(attribute, "LSTM"/"GRU"/"RNN", where it was assigned) when ``node`` calls an RNN submodule of
    ``self`` (``self.rnn(x)``, ``self.rnn.forward(x)``), else None."""
    func = node.func
    if not isinstance(func, cst.Attribute):
        return None
    target = func
    if func.attr.value == "forward" and isinstance(func.value, cst.Attribute):
        target = func.value  # self.rnn.forward(x)
    if not (isinstance(target.value, cst.Name) and target.value.value == "self"):
        return None
    if target is func and func.attr.value == "forward":
        return None
    cls = ctx.cls
    if cls is None:
        return None
    attr = target.attr.value
    kind = _rnn_kind(cls.submodules.get(attr, ""))
    if kind is not None:
        return attr, kind, ""
    # a base's forward calling what a subclass's __init__ (maybe in another file) makes an RNN:
    # timm's Sequencer2d sets `self.rnn_v = RNNIdentity()` in RNN2dBase and nn.LSTM in LSTM2d
    for ctor in cls.submodule_ctors.get(attr, ()):
        kind = _rnn_kind(ctor)
        if kind is not None:
            at = cls.submodule_set_at(attr, ctor) if cls.submodule_set_at is not None else None
            return attr, kind, f" (assigned at {at})" if at else ""
    return None


def _rnn_calls(fn: cst.FunctionDef, ctx) -> list[cst.Call]:
    """The RNN submodule calls of ``fn``'s own body (not nested defs), in source order."""
    return [c for c in iter_nodes(fn, (cst.Call,)) if isinstance(c, cst.Call) and _rnn_call(c, ctx) is not None]
