"""FL203 python-state-mutation-in-forward: a Python int/float/list attribute changed by compiled code on every call."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from fusionlint.analysis.attributes import (
    class_reads,
    classify_use,
    collect_writes,
    recompiles_every_value,
    scalar_kind,
    self_attr,
)
from fusionlint.analysis.buffer_fix import buffer_fix
from fusionlint.rule import Applicability, Effect, Invalid, Rule, module_example

_LIST_GROWERS = ("append", "extend")


def _number(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, (cst.Minus, cst.Plus)):
        expr = expr.expression
    return isinstance(expr, (cst.Integer, cst.Float))


def _counter_update(stmt: cst.CSTNode) -> Optional[str]:
    """``attr`` for ``self.attr op= <number>`` or ``self.attr = self.attr op <number>``."""
    if isinstance(stmt, cst.AugAssign):
        attr = self_attr(stmt.target)
        if attr is not None and _number(stmt.value):
            return attr
        return None
    if isinstance(stmt, cst.Assign) and len(stmt.targets) == 1:
        attr = self_attr(stmt.targets[0].target)
        value = stmt.value
        if attr is None or not isinstance(value, cst.BinaryOperation):
            return None
        if not isinstance(value.operator, (cst.Add, cst.Subtract, cst.Multiply, cst.Divide)):
            return None
        sides = (value.left, value.right)
        if any(self_attr(s) == attr for s in sides) and any(_number(s) for s in sides):
            return attr
    return None


_NUMBER_BUILTINS = frozenset({"max", "min", "abs", "round", "float", "int"})


def _clamped_update(stmt: cst.CSTNode) -> Optional[str]:
    """``attr`` for ``self.attr = max(1.0, self.attr * 0.99)``: a new Python number computed from the old
    one with numbers and number builtins (issue 9, pattern 3)."""
    if not (isinstance(stmt, cst.Assign) and len(stmt.targets) == 1):
        return None
    attr = self_attr(stmt.targets[0].target)
    if attr is None or not isinstance(stmt.value, cst.Call):
        return None

    def numeric(expr: cst.BaseExpression) -> Optional[bool]:  # None: not a number expression; True: reads attr
        if _number(expr):
            return False
        if self_attr(expr) == attr:
            return True
        if isinstance(expr, cst.BinaryOperation):
            left, right = numeric(expr.left), numeric(expr.right)
            return None if left is None or right is None else left or right
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value in _NUMBER_BUILTINS:
            parts = [numeric(a.value) for a in expr.args if a.keyword is None and not a.star]
            if not parts or None in parts or len(parts) != len(expr.args):
                return None
            return any(parts)
        return None

    found = attr if numeric(stmt.value) else None
    del numeric  # a nested function that calls itself is a reference cycle: gone now, not at the next collection
    return found


_DOCS = """
## What it does
Flags code traced by `torch.compile` that changes Python state of the module on every call:
- `self.count += 1` / `self.count = self.count + 1` on an `int` attribute;
- `self.total += 0.5` on a `float` attribute that compiled code does not otherwise feed to a
  tensor operator (see below);
- `self.cache.append(...)` / `.extend(...)` on a list attribute created in `__init__`.

## Why is this bad?
Dynamo guards the Python state the frame reads: an `int` attribute of an `nn.Module` by value
(`self.count == 3`), a list by length (`len(self.cache) == 3`). The forward changes that state,
so the next call fails the guard and recompiles, every call. After
`torch._dynamo.config.recompile_limit` (8) recompiles the frame runs **eagerly** from then on.
This happens even when the counter never touches a tensor.

Measured with torch 2.13.0+cpu, 10 calls each: `self.num_calls += 1` (the fixture; the counter is
not used in tensor math), `self.n = self.n + 1`, the same under `if self.training:`,
`self.cache.append(x.detach())`, `self.cache.extend([...])` and `self.f += 0.5` on an unused float:
1 compile + 8 recompiles, the `recompile_limit` warning, then 0 compiled regions (eager).
With a long buffer updated by `self.num_calls.add_(1)`: 1 compile, 0 recompiles. The fixture on
torch 2.11.0+cu130 (H200): 8 recompiles, limit hit, 0 compiled regions; the buffer version 0.
The truth table (`g9c`) also measured `torch._dynamo.config.allow_unspec_int_on_nn_module = True`:
0 recompiles for the int counter.

Not flagged, because the cost is bounded: a dict item store (`self.stats["mean"] = x.mean()`,
1 extra recompile then stable), a plain store without a read (`self.seen = True`, 0 recompiles),
a float updated in place and then used as a tensor operand
(`self.f *= 0.9; return x * self.f`: 2 recompiles, then the float is a dynamic input), and
updates under `if not torch.compiler.is_compiling():` (not traced: 0 recompiles, measured; the
counter then does not count compiled calls).

## Example
```python
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.num_calls = 0

    def forward(self, x):
        self.num_calls += 1
        return x.relu()
```

## Use instead
```python
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("num_calls", torch.tensor(0), persistent=False)

    def forward(self, x):
        self.num_calls.add_(1)
        return x.relu()
```
or, for int attributes, `torch._dynamo.config.allow_unspec_int_on_nn_module = True`.
For a list that collects tensors, return them from `forward` instead (the list also grows
without bound).

## Fix safety
Unsafe, and offered for `int`/`float` counters only. The fix turns the attribute into
`self.register_buffer(name, torch.tensor(value), persistent=False)` and every update into an
in-place op (`+=`→`.add_()`, `-=`→`.sub_()`, `*=`→`.mul_()`, `=`→`.fill_()`), inside and outside
the compiled code. It is offered only when every other read of the attribute in the class is a
tensor operand in compiled code and no other code in the file reads it: an
`if self.count % 100 == 0:` would become a data-dependent branch. No fix for lists.

What the buffer changes, measured with torch 2.13 CPU, and what is checked before the fix is offered
(in every file of the run; the finding then ends with "no automatic fix: ..." and says where):
- **Assigning a number raises**: `model.num_calls = 0` elsewhere (or `self.num_calls = 0` in a
  subclass) raises `TypeError: cannot assign 'int' as buffer 'num_calls'`. Checked: such writes in
  another file or another class.
- **It is no longer a Python number**: `json.dumps({"calls": model.num_calls})` raises (not JSON
  serializable), `round()` raises, `str()`/f-strings print `tensor(10)`. Checked: `round(`, `float(`,
  `int(`, `str(`, `repr(`, `math.*(` of `x.num_calls`, and `x.num_calls` inside `json.dump(s)(`,
  `.format(` or an f-string field, in any file of the run, one line at a time (a same-named attribute of another object
  also withholds the fix). Files outside the run are not seen.
- **Dtype casts**: an `int` counter becomes a long buffer, which `.to(torch.bfloat16)` leaves alone
  (measured: 300 calls counted 300). A `float` counter becomes a float32 buffer, which
  `.to(torch.bfloat16)`/`.half()` cast: a `+= 0.5` counter in bfloat16 stops at 128. Not checked.

## PyTorch reference
No graph-break id (this is a recompile). Int attributes are specialised:
https://docs.pytorch.org/docs/main/user_guide/torch_compiler/compile/programming_model.recompilation.html
"""


class PythonStateMutationInForward(Rule):
    code = "FL203"
    name = "python-state-mutation-in-forward"
    message = "compiled code changes a Python attribute of the module on every call: recompiles on every call"
    effects = (Effect.RECOMPILE,)
    fix_applicability = Applicability.UNSAFE
    triggers = ("self.",)
    measured_on = ("torch 2.13.0 CPU", "torch 2.11.0 H200")
    docs = _DOCS

    VALID = [
        # dict item store: one extra recompile, then stable
        module_example(
            "    def __init__(self):\n        super().__init__()\n        self.stats = {}\n\n"
            "    def forward(self, x):\n        self.stats['mean'] = x.mean()\n        return x * 2\n"
        ),
        # the fixed form: a long buffer updated in place
        module_example(
            "    def __init__(self):\n        super().__init__()\n"
            '        self.register_buffer("steps", torch.tensor(0), persistent=False)\n\n'
            "    def forward(self, x):\n        self.steps.add_(1)\n        return x * 2\n"
        ),
        # the counter changes outside compiled code (a training-loop helper)
        module_example(
            "    def __init__(self):\n        super().__init__()\n        self.epoch = 0\n\n"
            "    def next_epoch(self):\n        self.epoch += 1\n\n"
            "    def forward(self, x):\n        return x.relu()\n"
        ),
        # a local list, not module state
        module_example(
            "    def forward(self, x):\n        out = []\n        for i in range(3):\n"
            "            out.append(x * i)\n        return torch.stack(out)\n"
        ),
        # float updated and used as a tensor operand: becomes dynamic after 2 recompiles
        module_example(
            "    def __init__(self):\n        super().__init__()\n        self.decay = 1.0\n\n"
            "    def forward(self, x):\n        self.decay *= 0.9\n        return x * self.decay\n"
        ),
        # guarded out of the traced code: dynamo takes the other branch
        module_example(
            "    def __init__(self):\n        super().__init__()\n        self.calls = 0\n        self.seen = []\n\n"
            "    def forward(self, x):\n        if not torch.compiler.is_compiling():\n            self.calls += 1\n"
            "            self.seen.append(x.shape)\n        return x * 2\n"
        ),
        # a tensor accumulated into an attribute: the attribute becomes a tensor, not a Python number
        module_example(
            "    def __init__(self):\n        super().__init__()\n        self.total = 0.0\n\n"
            "    def forward(self, x):\n        self.total += x.sum()\n        return x * 2\n"
        ),
    ]
    INVALID = [
        Invalid(
            module_example(
                "    def __init__(self):\n        super().__init__()\n        self.num_calls = 0\n\n"
                "    def forward(self, x):\n        self.num_calls += 1\n        return x.relu()\n"
            ),
            expected_fix=module_example(
                "    def __init__(self):\n        super().__init__()\n"
                '        self.register_buffer("num_calls", torch.tensor(0), persistent=False)\n\n'
                "    def forward(self, x):\n        self.num_calls.add_(1)\n        return x.relu()\n"
            ),
            line=11,
            count=1,
        ),
        # `self.step = self.step + 1` in a helper the forward calls, used as a tensor operand
        Invalid(
            module_example(
                "    def __init__(self):\n        super().__init__()\n        self.step = 0\n\n"
                "    def reset(self):\n        self.step = 0\n\n"
                "    def _tick(self):\n        if self.training:\n            self.step = self.step + 1\n\n"
                "    def forward(self, x):\n        self._tick()\n        return x * self.step\n"
            ),
            expected_fix=module_example(
                "    def __init__(self):\n        super().__init__()\n"
                '        self.register_buffer("step", torch.tensor(0), persistent=False)\n\n'
                "    def reset(self):\n        self.step.fill_(0)\n\n"
                "    def _tick(self):\n        if self.training:\n            self.step.fill_(self.step + 1)\n\n"
                "    def forward(self, x):\n        self._tick()\n        return x * self.step\n"
            ),
            line=15,
        ),
        # a list attribute that collects activations: no fix
        Invalid(
            module_example(
                "    def __init__(self):\n        super().__init__()\n        self.cache = []\n\n"
                "    def forward(self, x):\n        self.cache.append(x.detach())\n        return x.sin()\n"
            ),
            line=11,
        ),
        # the counter is read as a Python int in a branch: reported, no fix
        Invalid(
            module_example(
                "    def __init__(self, every: int = 100):\n        super().__init__()\n"
                "        self.every = every\n        self.calls = 0\n\n"
                "    def forward(self, x):\n        self.calls += 1\n"
                "        if self.calls % self.every == 0:\n            x = x * 0.5\n        return x\n"
            ),
            line=12,
        ),
        # a float accumulator that is never a tensor operand
        Invalid(
            module_example(
                "    def __init__(self):\n        super().__init__()\n        self.clock = 0.0\n\n"
                "    def forward(self, x):\n        self.clock += 0.5\n        return x.cos()\n"
            ),
            line=11,
        ),
    ]

    # -- handlers ---------------------------------------------------------------------------------
    def visit_AugAssign(self, node: cst.AugAssign, ctx) -> None:
        self._counter(node, ctx)

    def visit_Assign(self, node: cst.Assign, ctx) -> None:
        self._counter(node, ctx)

    def visit_Call(self, node: cst.Call, ctx) -> None:
        func = node.func
        if not (isinstance(func, cst.Attribute) and func.attr.value in _LIST_GROWERS) or ctx.builds_self:
            return
        attr = self_attr(func.value)
        cls = ctx.cls
        if attr is None or cls is None or cls.kind != "module":
            return
        value = cls.container_attrs.get(attr)
        if value != "list" or attr in cls.buffers or attr in cls.submodules:
            return
        ctx.report(
            node,
            f"`self.{attr}.{func.attr.value}(...)` grows a Python list attribute inside compiled code: dynamo guards "
            "its length, so every call recompiles, and after 8 recompiles (recompile_limit) the forward runs "
            "eagerly; return the values to the caller instead",
        )

    def _counter(self, stmt: cst.CSTNode, ctx) -> None:
        attr = _counter_update(stmt)
        clamped = attr is None and _clamped_update(stmt) is not None
        if clamped:
            attr = _clamped_update(stmt)
        cls = ctx.cls
        if attr is None or cls is None or cls.kind != "module" or ctx.builds_self:
            return  # in __init__ (a module built in compiled code) `self` is new: nothing guards it
        kind = scalar_kind(cls, attr)
        if kind is None:
            return
        if kind == "float" and not self._float_recompiles(ctx, cls, attr):
            return
        writes = collect_writes(ctx, cls, attr)
        text = ctx.code(stmt).strip()
        what = "a Python int attribute (guarded by value)" if kind == "int" else "a Python float attribute that no tensor op reads as an operand (guarded by value)"
        message = (
            f"`{text}` changes {what} inside compiled code: every call recompiles, and after 8 recompiles "
            "(recompile_limit) the forward runs eagerly; use a buffer updated in place"
            + (" or `torch._dynamo.config.allow_unspec_int_on_nn_module = True`" if kind == "int" else "")
        )
        # `buffer.fill_(max(1.0, buffer * 0.99))` would break the graph: no fix for a clamped re-assignment
        fix, why_not = (None, None) if clamped else buffer_fix(
            ctx, cls, attr, writes, allow_compiled_writes=True,
            title=f"store `{attr}` in a non-persistent buffer and update it in place",
        )
        if why_not:
            message += f"; no automatic fix: {why_not}"
        ctx.report(stmt, message, fix=fix)

    @staticmethod
    def _float_recompiles(ctx, cls, attr: str) -> bool:
        """A float changed in forward recompiles every call unless compiled code uses it as a tensor operand.

        Measured on torch 2.13 CPU: unused -> every call; `x * self.f` -> 2 recompiles, then dynamic;
        `x.clamp(max=self.f)` -> every call. Other reads (Python branches) were not measured: not flagged.
        """
        uses = []
        for node, parents, fn in class_reads(ctx, cls, attr):
            if fn is None or not fn.compiled:
                continue
            if any(isinstance(p, (cst.AugAssign, cst.Assign)) and attr in (_counter_update(p), _clamped_update(p)) for p in parents):
                continue  # the update's own read
            use = classify_use(node, parents, ctx.facts(fn).is_tensor, ctx.qualname)
            if use is None:
                return False
            uses.append(use)
        if not uses:
            return True
        return any(recompiles_every_value(u, "float", ctx) for u in uses)
