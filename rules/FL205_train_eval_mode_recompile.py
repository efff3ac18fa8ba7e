"""FL205 train-eval-mode-recompile (off by default): compiled code decides something on `self.training`."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from fusionlint.analysis.dominance import FirstPerBlock
from fusionlint.rule import Effect, Invalid, Rule, module_example

_DOCS = """
## What it does
Flags the lines where compiled code *uses* a module's mode flag: `self.training` (or
`block.training`) as a condition (`if`, `x if self.training else y`, `and`/`or`/`not`, a comparison)
or as an argument of a torch function (`F.dropout(x, p, training=self.training)`), and a function
parameter named `training` used the same way (`drop_path(x, p, self.training)` passes the flag on,
and the guard is installed where `drop_path` uses it). One guard serves every later use of the same
flag in the same block or below it, so only the first such use is reported; a use that may not run (the right
operand of `and`/`or`, an arm of `x if c else y`) stands for no later use (measured, torch 2.13 CPU: after
`if self.use_noise and self.training:` with `use_noise` False, the failed guard is on the next `if
self.training:`). A flag passed to a torch call is reported at the call, and one in the test of a
conditional expression at the expression, whose first lines are the ones Dynamo names (measured:
vector-quantize-pytorch's `self.commitment_loss(...)` on one line and `if self.training and ...` on the
next, the guard names the first). Off by default (`--select FL205`): one
recompile per mode is usually a price worth paying.

## Why is this bad?
Dynamo burns a Python bool into the graph and guards on it (`self.training == True`). The first
call after `model.eval()` (or `.train()`) fails that guard and compiles the frame again; both
graphs stay cached, so switching back and forth costs nothing more. Measured with torch 2.13.0 CPU
(backend eager): a forward with `F.dropout(x, p=0.0 if not self.training else self.p,
training=self.training)` called train, eval, train, eval: 2 graphs, 1 recompile, guard
`s.training == True` reported on that line; the same with the flag passed to a helper
(`if not training:` inside it): 1 recompile, reported on the helper's line; a forward that reads no
mode flag: 1 graph. On real models the recall bench (bench/recall.py) records 53 such guard
failures at 53 distinct lines of timm/transformers/MONAI (`dropout=0.0 if not self.training else
self.attention_dropout`, `if self.training and self.track_running_stats:`).

It costs more than one compile when the frame already has many cache entries (each mode doubles
them towards `recompile_limit`, 8), when a training loop evaluates with the same compiled object
(the first evaluation stalls on a compile), and under `mode="reduce-overhead"` (a second set of CUDA
graphs).

## Example
```python
class Attention(nn.Module):
    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v, dropout_p=self.p if self.training else 0.0)

compiled = torch.compile(model)
train(compiled)
model.eval(); evaluate(compiled)      # recompiles here
```

## Use instead
Nothing, if one compile per mode is acceptable. For inference, set the mode before the first
compiled call (`model.eval()` then `torch.compile(model)`) and do not switch it. To keep
evaluation from stalling training, compile the evaluation path once up front (one call in eval
mode right after compiling).

## Fix safety
No fix: the mode dependence is the model's behaviour.

## PyTorch reference
No graph-break id (this is a recompile). Recompilation and guards:
https://docs.pytorch.org/docs/main/user_guide/torch_compiler/compile/programming_model.recompilation.html
"""

_MESSAGE = (
    "is decided at trace time: the compiled graph is specialised on train/eval mode, and the first call "
    "after `.train()`/`.eval()` switches mode recompiles (once per mode; both graphs stay cached)"
)


def _cls_src(body: str) -> str:
    return "import torch\nimport torch.nn.functional as F\nfrom torch import nn\n\n\nclass Block(nn.Module):\n" + body


def _consumed(node: cst.BaseExpression, parents: tuple[cst.CSTNode, ...], qualname) -> Optional[tuple[str, cst.CSTNode]]:
    """How the flag is used where it is read, when that use makes Dynamo guard on it: "a condition" or
    "an argument of <torch function>", and the node to report (the call, for an argument: Dynamo names
    the call's first line, esm's `F.dropout(` three lines above `training=self.training`); None when the
    value only travels on (assigned, returned, passed to a function of the project, whose own use of it is
    where the guard is installed)."""
    cur: cst.CSTNode = node
    for i, parent in enumerate(parents):
        if (isinstance(parent, cst.UnaryOperation) and isinstance(parent.operator, cst.Not)) or isinstance(
                parent, (cst.BooleanOperation, cst.Comparison, cst.ComparisonTarget)):
            return "a condition", _condition_anchor(node, parents[i:])
        if isinstance(parent, (cst.If, cst.While, cst.IfExp, cst.Assert)):
            if parent.test is not cur:
                return None
            return "a condition", parent if isinstance(parent, cst.IfExp) else node
        if isinstance(parent, cst.Arg):
            cur = parent
            continue
        if isinstance(parent, cst.Call):
            if cur is parent.func:
                return None
            callee = qualname(parent.func) or ""
            return (f"an argument of `{callee}`", parent) if callee.startswith("torch.") else None
        return None
    return None


def _condition_anchor(node: cst.CSTNode, parents: tuple[cst.CSTNode, ...]) -> cst.CSTNode:
    """Where Dynamo names a guard on a flag read in a condition: the conditional expression whose test the
    condition is (measured, torch 2.13 CPU: `x * 2` on one line and `if self.training and ...` on the next,
    the guard names the first), else the read itself."""
    cur = node
    for parent in parents:
        if isinstance(parent, cst.IfExp):
            return parent if parent.test is cur else node
        if not ((isinstance(parent, cst.UnaryOperation) and isinstance(parent.operator, cst.Not)) or isinstance(
                parent, (cst.BooleanOperation, cst.Comparison, cst.ComparisonTarget))):
            return node
        cur = parent
    return node


def _surely_read(node: cst.CSTNode, parents: tuple[cst.CSTNode, ...]) -> bool:
    """Is ``node`` evaluated whenever its statement runs? Not as the right operand of ``and``/``or`` (vector-
    quantize-pytorch's `should_inplace_optimize and self.training and ...`, where the first operand is False
    and Dynamo never reads the flag) nor in an arm of a conditional expression."""
    cur = node
    for parent in parents:
        if isinstance(parent, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
            return True
        if isinstance(parent, cst.BooleanOperation) and parent.right is cur:
            return False
        if isinstance(parent, cst.IfExp) and parent.test is not cur:
            return False
        cur = parent
    return True


def _training_param(function) -> bool:
    if function is None:
        return False
    params = function.node.params
    every = [*params.posonly_params, *params.params, *params.kwonly_params]
    return any(p.name.value == "training" for p in every)


class TrainEvalModeRecompile(Rule):
    code = "FL205"
    name = "train-eval-mode-recompile"
    message = "`self.training` " + _MESSAGE
    effects = (Effect.RECOMPILE,)
    default_enabled = False
    triggers = ("training",)
    confirm_exercise = "mode-switch"  # the confirm pass calls the module in eval mode too
    measured_on = ("torch 2.13.0 CPU",)
    docs = _DOCS

    VALID = [
        # the flag outside compiled code (a plain method)
        _cls_src("    def describe(self):\n        return 'train' if self.training else 'eval'\n"),
        # passed on to a project function: the guard is where that function uses it
        _cls_src(
            "    def forward(self, x):\n        return helper(x, self.training)\n\n\n"
            "def helper(x, flag):\n    return x * 2\n"
        ),
        # assigned, not used
        _cls_src("    def forward(self, x):\n        self.was_training = self.training\n        return x\n"),
        # only in the branch Dynamo never traces
        _cls_src(
            "    def forward(self, x):\n        if not torch.compiler.is_compiling():\n"
            "            if self.training:\n                print('train')\n        return x\n"
        ),
        # a forward that does not depend on the mode
        _cls_src("    def forward(self, x):\n        return F.gelu(x)\n"),
    ]
    INVALID = [
        # measured (torch 2.13 CPU, train then eval): `self.use_noise` is False, so Dynamo never reads the flag on
        # line 11 (reported: it is read when `use_noise` is True); the guard that fails is on line 13, which also
        # stands for the dropout's flag below it
        Invalid(
            module_example(
                "    def __init__(self):\n        super().__init__()\n        self.use_noise = False\n\n"
                "    def forward(self, x):\n        if self.use_noise and self.training:\n            x = x + 1\n"
                "        if self.training:\n            x = x * 2\n        return torch.nn.functional.dropout(\n"
                "            x,\n            p=0.1,\n            training=self.training,\n        )\n"
            ),
            count=2,
        ),
        # a conditional expression over lines: named at its first line (measured: line 8, the `x * 2` line)
        Invalid(
            module_example(
                "    def forward(self, x):\n        y = (\n            x * 2\n            if self.training and x.dim() > 1\n"
                "            else x\n        )\n        return y\n"
            ),
            line=8,
            count=1,
        ),
        # a flag passed to a multi-line torch call: named at the call's first line (measured: line 7, not 9)
        Invalid(
            module_example(
                "    def forward(self, x):\n        return torch.nn.functional.dropout(\n            x,\n"
                "            training=self.training,\n        )\n"
            ),
            line=7,
            count=1,
        ),
        Invalid(
            _cls_src("    def forward(self, x):\n        if self.training:\n            x = x * 2\n        return x\n"),
            line=8,
        ),
        Invalid(
            _cls_src(
                "    def forward(self, q, k, v):\n        return F.scaled_dot_product_attention(\n"
                "            q, k, v,\n            dropout_p=0.0 if not self.training else 0.1,\n        )\n"
            ),
            line=10,
        ),
        Invalid(_cls_src("    def forward(self, x):\n        return F.dropout(x, 0.1, training=self.training)\n"), line=8),
        Invalid(
            _cls_src(
                "    def forward(self, x):\n        if self.training and x.requires_grad:\n            x = x + 1\n"
                "        return x\n"
            ),
            line=8,
        ),
        # the flag passed to a helper: the helper's use is the guard's line
        Invalid(
            _cls_src(
                "    def forward(self, x):\n        return dropout_add(x, 0.1, self.training)\n\n\n"
                "def dropout_add(x, prob, training):\n    return F.dropout(x, p=prob, training=training)\n"
            ),
            line=12,
            count=1,
        ),
        # read twice in one block: the first read installs the guard, the second reuses it (one recompile)
        Invalid(
            _cls_src(
                "    def forward(self, x):\n        if self.training:\n            x = x * 2\n"
                "        return F.dropout(x, 0.1, training=self.training)\n"
            ),
            line=8,
            count=1,
        ),
        # ... but a first read inside a branch does not cover the code after the branch
        Invalid(
            _cls_src(
                "    def forward(self, x, y=None):\n        if y is not None:\n"
                "            y = F.dropout(y, 0.1, training=self.training)\n"
                "        return F.dropout(x, 0.1, training=self.training)\n"
            ),
            count=2,
        ),
        # a submodule's flag
        Invalid(
            _cls_src(
                "    def __init__(self):\n        super().__init__()\n        self.bn = nn.BatchNorm1d(4)\n\n"
                "    def forward(self, x):\n        return x if self.bn.training else x * 2\n"
            ),
            line=12,
        ),
    ]

    def visit_Attribute(self, node: cst.Attribute, ctx) -> None:
        if node.attr.value == "training":
            self._check(node, f"`{ctx.code(node).strip()}`", ctx)

    def visit_Name(self, node: cst.Name, ctx) -> None:
        if node.value != "training" or not _training_param(ctx.function):
            return
        parent = ctx.parent
        if isinstance(parent, cst.Attribute) and parent.attr is node:
            return  # `x.training`: visit_Attribute's
        if isinstance(parent, cst.Arg) and parent.keyword is node:
            return  # the keyword of `training=...`
        if isinstance(parent, cst.Param):
            return
        self._check(node, "the `training` parameter (a mode flag passed in by the caller)", ctx)

    def __init__(self) -> None:
        super().__init__()
        # per (function, flag): the first use installs the guard, a later use in the same block or below
        # it reuses it (no second recompile)
        self._guarded = FirstPerBlock()

    def _check(self, node: cst.BaseExpression, what: str, ctx) -> None:
        parents = ctx.parents
        found = _consumed(node, parents, ctx.qualname)
        if found is None:
            return
        use, anchor = found
        # a read that may not happen reports, but does not stand for the reads after it
        if not self._guarded.first((id(ctx.function), what), ctx, record=_surely_read(node, parents)):
            return
        ctx.report(anchor, f"{what}, used as {use}, {_MESSAGE}")
