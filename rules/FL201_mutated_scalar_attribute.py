"""FL201 mutated-scalar-attribute: a Python number attribute that torch.compile guards on, changed between calls.

The attribute facts it shares with FL203 and FL901 are ``fusionlint.analysis.attributes``; the buffer
fix it shares with FL203 is ``fusionlint.analysis.buffer_fix``.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from fusionlint.analysis.attributes import (
    classify_use,
    collect_writes,
    function_of,
    recompiles_every_value,
    scalar_kind,
    self_attr,
)
from fusionlint.analysis.buffer_fix import buffer_fix
from fusionlint.rule import Applicability, Effect, Invalid, Rule, module_example

_DOCS = """
## What it does
Flags a Python-number attribute of an `nn.Module` (`self.threshold = 5.0` in `__init__`) that
compiled code feeds to a tensor op, when the program also changes it after construction: in
another method of the class (`def anneal(self): self.threshold *= 0.99`) or from outside
(`model.threshold = ...` / `model.threshold *= ...` in the same file; writes through
`args.`/`cfg.`/`config.`-style objects are ignored). It reports the op that reads it.

A setting chosen between runs is not a schedule and is not flagged: when every change is a method
of the class assigning a literal or a parameter with a default (`def enable_tiling(self,
tile_size=2.0): self.tile_size = tile_size`, or one keeping the current value when none is given:
`self.tile_size = tile_size or self.tile_size`, `... if tile_size is not None else self.tile_size`,
diffusers 0.36's `enable_tiling` setters), each call costs one compile for the new setting
(measured, torch 2.13 CPU: one `enable_tiling()` call between two runs of 5 forwards: 1 recompile, 2 graphs), not
one per forward. `self.t *= 0.99`, `self.t = max(1.0, self.t * 0.99)` and `def set_cap(self,
value): self.cap = value` (a value the caller computes, maybe every step) still count.

Writes in *other* files are not counted: the project index knows only where `obj.threshold = ...`
occurs, not what `obj` is, and attribute names collide: counting them gave 10 findings on torch
2.13's own sources, and every one came from a write to some other object in another file
(`ctx.groups = ...` in an autograd Function, `new.dim = ...`, an observer's `min_val`).

It flags only the uses measured to recompile on **every** new value:
- any use of an `int` attribute (dynamo treats `int` attributes of an `nn.Module` as static);
- a `float` passed where the op takes a Python scalar: `clamp`/`clip` bounds, `pow`/`**`
  exponent, `masked_fill` value, `lerp` weight, `alpha=`, `F.hardtanh` bounds,
  `F.dropout` `p`, `torch.full_like` fill value;
- with a `target-torch` below 2.13 only (see README, Configuration): a float that goes through Python
  arithmetic first, e.g. `x * (1.0 / self.temperature)`.

## Why is this bad?
Dynamo compiles a Python number into the graph as a constant and guards on its value
(`self.threshold == 5.0`). Each new value fails the guard, so the next call recompiles. After
`torch._dynamo.config.recompile_limit` (8) recompiles dynamo stops compiling that frame: it runs
**eagerly** from then on, without any error.

Measured with torch 2.13.0+cpu (the fixture: `scores.clamp(-self.threshold, self.threshold)`
with `self.threshold *= 0.9` between 10 calls): 1 compile and 8 recompiles, the `recompile_limit`
warning, then 0 compiled regions per forward (eager). The buffer version: 1 compile, 0 recompiles.
The same fixture on torch 2.11.0+cu130 (H200): 8 recompiles, limit hit, 0 compiled regions; buffer 0.
The same happened with `pow`, `**`, `masked_fill`, `lerp`, `add(alpha=)`, `F.hardtanh`,
`F.dropout(p=)`, `full_like`, and with an `int` attribute in `x * self.k`, `x + self.k` or
`x[:, :self.k]`. torch 2.11.0 (CPU and H200) gave the same for `clamp` and `pow`.

Not flagged, because it is cheap: a `float` used directly as an operand of `*`, `+`, `-`, `/`,
a comparison, `x.mul(t)`, `F.leaky_relu`, `F.elu`, `F.softplus` or `F.threshold` recompiled
**once** on torch 2.13.0 CPU (the float then becomes a dynamic graph input). `x * (1.0 / t)`
also recompiled once on 2.13, but on torch 2.11 (CPU and H200) it recompiled on every call up
to the limit, hence the version gate above.

## Example
```python
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.threshold = 5.0

    def anneal(self):
        self.threshold *= 0.99

    def forward(self, x):
        return x.clamp(-self.threshold, self.threshold)
```

## Use instead
Keep the value in a (non-persistent) buffer and update it in place; the buffer is a graph
input, so new values need no recompile:
```python
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("threshold", torch.tensor(5.0), persistent=False)

    def anneal(self):
        self.threshold.mul_(0.99)

    def forward(self, x):
        return x.clamp(-self.threshold, self.threshold)
```
If the value never changes, a Python number is fine (see FL901).

## Fix safety
Unsafe. The fix replaces the `__init__` assignment with
`self.register_buffer(name, torch.tensor(value), persistent=False)` and rewrites every mutation
in place: `*=`→`.mul_()`, `+=`→`.add_()`, `-=`→`.sub_()`, `/=`→`.div_()`, `=`→`.fill_()`
(also `model.threshold = v` when it is in the same file). `persistent=False` keeps the
`state_dict` unchanged. It is offered only when every read of the attribute still means the same
with a 0-d tensor: tensor operands, comparisons with tensors, `clamp` bounds that are all this
attribute (a tensor bound next to a Python-number bound breaks the graph, measured GB0033),
`pow` exponents, `masked_fill` values and `lerp` weights in compiled code. Any other read (an
`if self.threshold > 1:`, an f-string, `math.*`, a shape argument, `alpha=`) means no fix.

What the buffer changes, measured with torch 2.13 CPU, and what is checked before the fix is offered
(in every file of the run; the finding then ends with "no automatic fix: ..." and says where):
- **Assigning a number raises.** A buffer accepts only tensors: `model.threshold = 3.0` (or
  `self.threshold = 3.0` in a subclass) raises `TypeError: cannot assign 'float' as buffer
  'threshold'`. Checked: any `x.threshold = ...` / `x.threshold op= ...` outside the class in
  another file, and `self.threshold = ...` in another class. Same-file `model.threshold = v` writes
  are rewritten to `.fill_(v)` instead.
- **It is no longer a Python number.** `round(model.threshold, 2)` raises (`Tensor doesn't define
  __round__`), `json.dumps(model.threshold)` raises (not JSON serializable), `str()`/`f"{...}"`
  print `tensor(4.5000)`, `float()` gives the float32 value (3.6449997 instead of 3.645). Checked:
  `round(`, `float(`, `int(`, `str(`, `repr(`, `math.*(` of `x.threshold`, and `x.threshold` in the
  arguments of `json.dump(s)(` or `.format(` or in an f-string field, in any file of the run
  (one line at a time: a call spread over lines is not seen). Attribute names collide, so a use of some other object's `threshold` also withholds the fix (the
  finding stays). Files outside the run are not seen.
- **Precision.** The buffer is float32 where the attribute was a Python float (float64): on the
  fixture (10 anneals by `*= 0.9`) the outputs differ by up to 3.6e-7.
- **Dtype casts.** `model.to(torch.bfloat16)` / `.half()` cast floating-point buffers too, so the
  value is then stored and updated in bfloat16: on the fixture the threshold after 10 anneals was
  1.7578 instead of 1.7434, and the outputs differed by up to 2.9e-3. Not checked: if you cast the
  model, keep the attribute a Python number (and accept the recompiles) or re-create the buffer in
  float32 after the cast. `.to(device)` moves it, which the Python number never needed.

## PyTorch reference
No graph-break id (this is a recompile, not a break). Guards and recompiles:
https://docs.pytorch.org/docs/main/user_guide/torch_compiler/compile/programming_model.recompilation.html
"""


def _configured_value(value: cst.BaseExpression, fn, kept: Optional[str] = None) -> bool:
    """A literal (`True`, `512`, `"full"`, `None`) or a parameter of the setter that has a default
    (`def enable_tiling(self, tile_size=512)`): a choice made once, not a value computed every step.
    ``kept``: the attribute being assigned, whose current value may be what the setter falls back to
    (diffusers' `self.tile_sample_min_height = tile_sample_min_height or self.tile_sample_min_height`,
    `size if size is not None else self.size`)."""
    if isinstance(value, (cst.Integer, cst.Float, cst.SimpleString)):
        return True
    if isinstance(value, cst.UnaryOperation) and isinstance(value.operator, cst.Minus):
        return _configured_value(value.expression, fn)
    if kept is not None and _self_attr(value) == kept:
        return True
    if isinstance(value, cst.BooleanOperation):
        return _configured_value(value.left, fn, kept) and _configured_value(value.right, fn, kept)
    if isinstance(value, cst.IfExp):
        return _configured_value(value.body, fn, kept) and _configured_value(value.orelse, fn, kept)
    if isinstance(value, cst.Name):
        if value.value in ("True", "False", "None"):
            return True
        params = fn.node.params if fn is not None else None
        if params is not None:
            for p in [*params.params, *params.kwonly_params]:
                if p.name.value == value.value:
                    return p.default is not None
    return False


def _only_configured(ctx, cls, writes) -> bool:
    """Every change of the attribute is a plain assignment, in a method of the class, of a configured
    value (issue 9's `enable_tiling()` false positive): each such call costs one compile for the new
    setting, not one per forward. Writes from other code, augmented assignments (`self.t *= 0.9`)
    and computed values (`self.t = max(1.0, self.t * 0.99)`) are schedules."""
    if writes.same_file or writes.other_files or not writes.in_class:
        return False
    for method, stmt, _ in writes.in_class:
        if not isinstance(stmt, cst.Assign) or len(stmt.targets) != 1:
            return False
        kept = _self_attr(stmt.targets[0].target)
        if not _configured_value(stmt.value, function_of(ctx, cls, method, stmt), kept):
            return False
    return True


def _self_attr(node: cst.BaseExpression) -> Optional[str]:
    """``x`` of ``self.x``, else None."""
    if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == "self":
        return node.attr.value
    return None


class MutatedScalarAttribute(Rule):
    code = "FL201"
    name = "mutated-scalar-attribute"
    message = "a Python-number attribute used in compiled tensor code is changed between calls: recompiles on every new value"
    effects = (Effect.RECOMPILE,)
    fix_applicability = Applicability.UNSAFE
    triggers = ("self.",)
    measured_on = ("torch 2.13.0 CPU", "torch 2.11.0 CPU", "torch 2.11.0 H200")
    docs = _DOCS

    VALID = [
        # a configuration setter (issue 9's `enable_tiling()` false positive): one compile per setting
        module_example(
            "    def __init__(self):\n        super().__init__()\n        self.use_tiling = False\n"
            "        self.tile_size = 4.0\n\n"
            "    def enable_tiling(self, tile_size: float = 2.0):\n        self.use_tiling = True\n"
            "        self.tile_size = tile_size\n\n"
            "    def forward(self, x):\n        return x.clamp(-self.tile_size, self.tile_size)\n"
        ),
        # the setter keeps the current value unless given one (diffusers 0.36's 23 `enable_tiling`s)
        module_example(
            "    def __init__(self):\n        super().__init__()\n        self.tile_size = 4\n        self.stride = 2\n\n"
            "    def enable_tiling(self, tile_size=None, stride=None):\n"
            "        self.tile_size = tile_size or self.tile_size\n"
            "        self.stride = stride if stride is not None else self.stride\n\n"
            "    def forward(self, x):\n        return x[:, : self.tile_size : self.stride]\n"
        ),
        # constant threshold, never changed: harmless (FL901's business, off by default)
        module_example(
            "    def __init__(self):\n        super().__init__()\n        self.threshold = 5.0\n\n"
            "    def forward(self, x):\n        return x.clamp(-self.threshold, self.threshold)\n"
        ),
        # mutated float used only as a multiplication operand: one recompile on 2.13, then dynamic
        module_example(
            "    def __init__(self):\n        super().__init__()\n        self.scale = 1.0\n\n"
            "    def decay(self):\n        self.scale *= 0.5\n\n"
            "    def forward(self, x):\n        return x * self.scale\n"
        ),
        # already a buffer updated in place
        module_example(
            "    def __init__(self):\n        super().__init__()\n"
            '        self.register_buffer("threshold", torch.tensor(5.0), persistent=False)\n\n'
            "    def anneal(self):\n        self.threshold.mul_(0.9)\n\n"
            "    def forward(self, x):\n        return x.clamp(-self.threshold, self.threshold)\n"
        ),
        # mutated, but only read in Python code outside the compiled forward
        module_example(
            "    def __init__(self):\n        super().__init__()\n        self.threshold = 5.0\n\n"
            "    def anneal(self):\n        self.threshold *= 0.9\n\n"
            "    def extra_repr(self):\n        return f'threshold={self.threshold}'\n\n"
            "    def forward(self, x):\n        return x.relu()\n"
        ),
        # `self.sub.threshold = ...` in another class sets some other object's attribute
        module_example(
            "    def __init__(self):\n        super().__init__()\n        self.threshold = 5.0\n\n"
            "    def forward(self, x):\n        return x.clamp(max=self.threshold)\n\n\n"
            "class Trainer:\n    def __init__(self, gate):\n        self.gate = gate\n\n"
            "    def relax(self):\n        self.gate.threshold = 9.0\n"
        ),
        # set by a method that rebuilds the model (here: prunes blocks and the head), as timm 1.0.31's
        # `prune_intermediate_layers` sets `num_prefix_tokens`: configuration, not a per-call change
        module_example(
            "    def __init__(self):\n        super().__init__()\n        self.num_prefix_tokens = 1\n"
            "        self.blocks = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 4))\n        self.head = nn.Linear(4, 2)\n\n"
            "    def prune(self, n):\n        self.blocks = self.blocks[:n]\n        self.head = nn.Identity()\n"
            "        self.num_prefix_tokens = 0\n\n"
            "    def forward(self, x):\n        return self.head(self.blocks(x[:, self.num_prefix_tokens:]).mean(1))\n"
        ),
        # `args.threshold = ...` is a config object, not the module
        module_example(
            "    def __init__(self):\n        super().__init__()\n        self.threshold = 5.0\n\n"
            "    def forward(self, x):\n        return x.clamp(max=self.threshold)\n\n\n"
            "def main(args):\n    args.threshold = 3.0\n"
        ),
    ]
    INVALID = [
        # a fallback computed from the attribute itself is a schedule, not a setting
        Invalid(
            module_example(
                "    def __init__(self):\n        super().__init__()\n        self.threshold = 5.0\n\n"
                "    def anneal(self, floor=None):\n        self.threshold = floor or self.threshold * 0.9\n\n"
                "    def forward(self, x):\n        return x.clamp(-self.threshold, self.threshold)\n"
            ),
        ),
        # the seed story: schedule method annealing a clamp threshold -> buffer fix
        Invalid(
            module_example(
                "    def __init__(self):\n        super().__init__()\n        self.threshold = 5.0\n\n"
                "    def anneal(self):\n        self.threshold *= 0.99\n\n"
                "    def forward(self, x):\n        return x.clamp(-self.threshold, self.threshold)\n"
            ),
            expected_fix=module_example(
                "    def __init__(self):\n        super().__init__()\n"
                '        self.register_buffer("threshold", torch.tensor(5.0), persistent=False)\n\n'
                "    def anneal(self):\n        self.threshold.mul_(0.99)\n\n"
                "    def forward(self, x):\n        return x.clamp(-self.threshold, self.threshold)\n"
            ),
            line=14,
            count=1,
        ),
        # written from a training loop in the same file (`=` and `*=`) -> fill_/mul_
        Invalid(
            module_example(
                "    def __init__(self):\n        super().__init__()\n        self.p = 2.0\n\n"
                "    def forward(self, x):\n        return x.abs().pow(self.p)\n\n\n"
                "def train(model, batches):\n    for step, x in enumerate(batches):\n        model(x)\n"
                "        model.p *= 0.99\n        if step == 100:\n            model.p = 2.0\n"
            ),
            expected_fix=module_example(
                "    def __init__(self):\n        super().__init__()\n"
                '        self.register_buffer("p", torch.tensor(2.0), persistent=False)\n\n'
                "    def forward(self, x):\n        return x.abs().pow(self.p)\n\n\n"
                "def train(model, batches):\n    for step, x in enumerate(batches):\n        model(x)\n"
                "        model.p.mul_(0.99)\n        if step == 100:\n            model.p.fill_(2.0)\n"
            ),
            line=11,
        ),
        # int attribute in plain arithmetic: ints are static, every value recompiles
        Invalid(
            module_example(
                "    def __init__(self):\n        super().__init__()\n        self.k = 3\n\n"
                "    def grow(self):\n        self.k += 1\n\n"
                "    def forward(self, x):\n        return x * self.k\n"
            ),
            expected_fix=module_example(
                "    def __init__(self):\n        super().__init__()\n"
                '        self.register_buffer("k", torch.tensor(3), persistent=False)\n\n'
                "    def grow(self):\n        self.k.add_(1)\n\n"
                "    def forward(self, x):\n        return x * self.k\n"
            ),
            line=14,
        ),
        # read as a Python number elsewhere (`if`, f-string): reported, but no fix
        Invalid(
            module_example(
                "    def __init__(self):\n        super().__init__()\n        self.threshold = 5.0\n\n"
                "    def anneal(self):\n        if self.threshold > 1.0:\n            self.threshold *= 0.9\n\n"
                "    def forward(self, x):\n        return torch.clamp(x, min=-self.threshold, max=self.threshold)\n"
            ),
            line=15,
        ),
        # int attribute as a slice bound (curriculum length), changed from outside the class
        Invalid(
            module_example(
                "    def __init__(self, max_len: int = 4):\n        super().__init__()\n        self.max_len = max_len\n\n"
                "    def forward(self, x):\n        return x[:, : self.max_len].sum(1)\n\n\n"
                "def curriculum(model):\n    model.max_len += 1\n"
            ),
            line=11,
        ),
        # clamp bound mixed with a Python number: reported, but the buffer fix would break the graph
        Invalid(
            module_example(
                "    def __init__(self):\n        super().__init__()\n        self.cap = 6.0\n\n"
                "    def set_cap(self, value):\n        self.cap = value\n\n"
                "    def forward(self, x):\n        return x.clamp(0.0, self.cap)\n"
            ),
            line=14,
        ),
    ]

    def visit_Attribute(self, node: cst.Attribute, ctx) -> None:
        attr = self_attr(node)
        cls = ctx.cls
        if attr is None or cls is None or cls.kind != "module":
            return
        kind = scalar_kind(cls, attr)
        if kind is None:
            return
        use = classify_use(node, ctx.parents, ctx.is_tensor, ctx.qualname)
        if use is None or not recompiles_every_value(use, kind, ctx):
            return
        writes = collect_writes(ctx, cls, attr)
        if not writes.outside_compiled or any(compiled for _, _, compiled in writes.in_class):
            return  # never changed (FL901), or changed inside compiled code (FL203's finding)
        if _only_configured(ctx, cls, writes):
            return  # `enable_tiling(tile_size=512)`: a setting chosen between runs, one compile per choice
        where = writes.where(cls.name)
        if kind == "int":
            why = f"`self.{attr}` is a Python int (an int attribute of an nn.Module is guarded by value)"
        elif use.kind == "scalar-arg":
            why = f"`self.{attr}` is a Python float passed as a scalar argument of `{use.op}` (burned in as a guarded constant)"
        else:
            why = f"`self.{attr}` is a Python float turned into a constant by Python arithmetic before `{use.op}`"
        message = (
            f"{why} and is changed {where}: every new value recompiles, and after 8 recompiles "
            "(recompile_limit) the forward runs eagerly; keep it in a buffer updated in place"
        )
        fix, why_not = buffer_fix(
            ctx, cls, attr, writes, allow_compiled_writes=False,
            title=f"store `{attr}` in a non-persistent buffer and update it in place",
        )
        if why_not:
            message += f"; no automatic fix: {why_not}"
        ctx.report(use.site, message, fix=fix)
