"""FL206 guard-changed-by-compiled-code: compiled code reads Python state as a condition and changes it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import libcst as cst

from fusionlint.analysis.attributes import self_attr
from fusionlint.analysis.dominance import FirstPerBlock
from fusionlint.analysis.walk import iter_nodes
from fusionlint.rule import Effect, Invalid, Rule, module_example
from fusionlint.semantic.sizes import Sizes

_DOCS = """
## What it does
Flags a condition in compiled code that reads Python state which the compiled code itself changes:
- an attribute of the module (`if self.attention_type == "block_sparse":`) that a method the
  compiled code calls assigns (`self.set_attention_type("original_full")`, whose body does
  `self.attention_type = value`), in this class, a base or a subclass, in any file of the project;
- an attribute (or an item of one) of an argument object, read as a condition and written by the
  same compiled function: `is_updated = cache.is_updated.get(self.layer_idx)` ... `if is_updated:`
  ... `cache.is_updated[self.layer_idx] = True`.

The finding sits on the condition (the line Dynamo names when the guard fails) and says which
write changes the value. Off by default (`--extend-select FL206`): each change costs one compile,
and most findings on the zoo are transformers' cross-attention cache flag (`cache.is_updated`),
which flips once per generation. The attribute must be a Python value: a module attribute needs evidence of
being a number, bool or string (a literal somewhere in the class, or a comparison with one), and
tensors, submodules, parameters and buffers are left alone.

## Why is this bad?
Dynamo burns the value it read into the graph and guards on it (`self.attention_type ==
'block_sparse'`, `cache.is_updated[0] == False`). The compiled call then changes the value, so the
next call fails the guard and compiles the frame again, once for every new value (a value that
changes on every call recompiles on every call, until `recompile_limit`).

Measured with torch 2.13.0 CPU (backend eager, 5 calls with the same input shape): a forward doing
`if self.attention_type == "block_sparse" and x.shape[1] <= 64: self.set_attention_type("original_full")`
(the setter assigns the attribute, and also a submodule's): 2 compiles, 1 recompile, guard
`self.attention_type == 'block_sparse'` on the `if` line. An attention forward reading
`cache.is_updated.get(self.layer_idx)` into a local, testing it, then setting
`cache.is_updated[self.layer_idx] = True`, called 5 times with the same cache object: 1 recompile,
guard `cache.is_updated[0] == False` on the `if` line; with a new cache on every call: 0. A forward
doing `if not state.ready: state.ready = True`: 1 recompile, guard `state.ready == False`; one doing
`if prompt_id not in session.prompt_embeddings: session.prompt_embeddings[prompt_id] = ...`
(sam3_video's order): 1 recompile, guard `not session.prompt_embeddings` on the `if` line. The
same forwards deciding from the input alone (no stored state), or reading the flag without
writing it: 0. On real models the recall bench (bench/recall.py) records both: big_bird's
`set_attention_type` and m2m_100's `is_updated` cross-attention flag; and ESM-2's rotary cache (fair-esm 2.0,
first measured 2026-12-05), where `if seq_len != self._seq_len_cached:` guards on the length the compiled
code stored there (`self._seq_len_cached = seq_len`, `seq_len = x.shape[...]`): the guard
`..._seq_len_cached == 16` (then 24, 32) failed on that line once for each new length, in 3 models. A
comparison with a literal or with a size of a tensor is what shows that the attribute holds a Python value.

## Example
```python
class Model(nn.Module):
    def set_mode(self, value: str):
        self.mode = value

    def forward(self, x):
        if self.mode == "sparse" and x.shape[1] <= 8:
            self.set_mode("full")   # the next call fails the guard on self.mode
        return self.sparse(x) if self.mode == "sparse" else self.full(x)
```

## Use instead
Decide from the inputs on every call, without storing the decision:
```python
    def forward(self, x):
        mode = self.mode if x.shape[1] > 8 else "full"
        return self.sparse(x) if mode == "sparse" else self.full(x)
```
or change the state before compiling (a configuration step between runs costs one compile per
setting, not one per call). For a cache flag, one recompile when it flips is usually acceptable.

## Fix safety
No fix: where the decision should live is the model's design.

## PyTorch reference
No graph-break id (this is a recompile). Guards and recompiles:
https://docs.pytorch.org/docs/main/user_guide/torch_compiler/compile/programming_model.recompilation.html
"""

# kinds of summary attribute facts (fusionlint.project.summary.AttrFact) that are not Python values
_NOT_PYTHON_VALUE = frozenset({"param", "buffer", "tensor", "object", "modules", "container"})
_PYTHON_SCALAR = frozenset({"int", "float", "bool", "str"})


def _condition_of(node: cst.BaseExpression, parents: tuple[cst.CSTNode, ...]) -> Optional[cst.CSTNode]:
    """The comparison or test that uses ``node`` as a condition (Dynamo guards the value there), else None."""
    cur: cst.CSTNode = node
    found: Optional[cst.CSTNode] = None
    for parent in parents:
        if isinstance(parent, cst.UnaryOperation) and isinstance(parent.operator, cst.Not):
            found = found or parent
        elif isinstance(parent, (cst.Comparison, cst.ComparisonTarget, cst.BooleanOperation)):
            found = found or parent
        elif isinstance(parent, (cst.If, cst.While, cst.IfExp, cst.Assert)):
            return parent if parent.test is cur else found
        else:
            return found
        cur = parent
    return found


def _literal(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        expr = expr.expression
    if isinstance(expr, (cst.Integer, cst.Float, cst.SimpleString)):
        return True
    return isinstance(expr, cst.Name) and expr.value in ("True", "False")


def _compared_with_literal(node: cst.BaseExpression, parents: tuple[cst.CSTNode, ...]) -> bool:
    for parent in parents[:2]:
        if isinstance(parent, cst.Comparison):
            operands = [parent.left, *(c.comparator for c in parent.comparisons)]
            return any(o is not node and _literal(o) for o in operands)
    return False


@dataclass(frozen=True)
class _Write:
    where: str  # "modeling_big_bird.py:1527"
    method: str  # "BigBirdModel.set_attention_type"
    call: str  # the call that reaches it from compiled code: "self.set_attention_type"
    chain: str


def _compiled_writes(ctx, attr: str) -> Optional[list[_Write]]:
    """Assignments of ``self.<attr>`` outside ``__init__`` in compiled methods of the current class, its
    bases and its subclasses (project model); None when the attribute is not a Python value."""
    model = ctx.model
    summary = model.files.get(ctx.path) if model is not None else None
    cls = summary.classes.get(ctx.cls.name) if summary is not None else None
    if cls is None:
        return None
    facts = model.attributes(summary, cls).get(attr, ())
    if any(f.kind in _NOT_PYTHON_VALUE for _, f in facts):
        return None
    out = []
    for owner, owner_cls in [*model.mro(summary, cls), *model.subclasses(summary, cls)]:
        for fact in owner_cls.attrs.get(attr, ()):
            if fact.method == "__init__" or fact.kind == "none":
                continue
            function = model.function_facts(owner.path, f"{owner_cls.name}.{fact.method}")
            if function is None:
                continue
            out.append(_Write(f"{owner.path.rsplit('/', 1)[-1]}:{fact.line}", f"{owner_cls.name}.{fact.method}",
                              function.frames[-1], function.chain))
    return out


def _order(ctx, fn) -> dict[int, int]:
    """id(node) -> its place in ``fn`` in source order (pre-order walk; nested defs left out)."""
    return ctx.memo(("fl206-order", id(fn.node)), lambda: {id(n): i for i, n in enumerate(iter_nodes(fn.node, (cst.CSTNode,)))})


def _changed_after(ctx, fn, read: cst.CSTNode, attr: str, write: _Write) -> bool:
    """Does ``fn`` change ``self.<attr>`` after ``read`` runs: an assignment below it in ``fn`` itself, or a
    call of the writing method (``self.m(...)``, ``self.sub.m(...)``, ``super().m(...)``) below it? A
    change *before* the read is not guarded (measured: a setter called first, then `if self.shift_size >
    0:`, fails its own condition's guard instead, and an unconditional store before the read: 0 recompiles)."""
    order = _order(ctx, fn)
    at = order.get(id(read))
    if at is None:
        return False
    if write.method == fn.qualname:
        for stmt in iter_nodes(fn.node, (cst.Assign, cst.AugAssign)):
            targets = [t.target for t in stmt.targets] if isinstance(stmt, cst.Assign) else [stmt.target]
            if any(self_attr(t) == attr for t in targets) and order.get(id(stmt), -1) > at:
                return True
        return False
    name = write.method.rsplit(".", 1)[-1]
    for call in iter_nodes(fn.node, (cst.Call,)):
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value == name and order.get(id(call), -1) > at:
            receiver = func.value
            if (isinstance(receiver, cst.Name) and receiver.value == "self") or self_attr(receiver) is not None or (
                isinstance(receiver, cst.Call) and isinstance(receiver.func, cst.Name) and receiver.func.value == "super"
            ):
                return True
    return False


def _compared_with_size(node: cst.BaseExpression, parents: tuple[cst.CSTNode, ...], ctx) -> bool:
    """``seq_len != self._seq_len_cached`` with ``seq_len = x.shape[1]``: the attribute holds a Python int
    (ESM's rotary cache, fair-esm 2.0, on the recall bench: a recompile for each new length)."""
    for parent in parents[:2]:
        if isinstance(parent, cst.Comparison):
            sizes = Sizes(ctx)
            operands = [parent.left, *(c.comparator for c in parent.comparisons)]
            return any(o is not node and sizes.of(o) is not None for o in operands)
    return False


def _scalar_evidence(ctx, attr: str, node, parents) -> bool:
    if _compared_with_literal(node, parents) or _compared_with_size(node, parents, ctx):
        return True
    model = ctx.model
    summary = model.files.get(ctx.path)
    cls = summary.classes.get(ctx.cls.name)
    return any(f.kind in _PYTHON_SCALAR for _, f in model.attributes(summary, cls).get(attr, ()))


# -- argument objects -------------------------------------------------------------------------------


def _path(expr: cst.BaseExpression, roots: frozenset[str]) -> Optional[str]:
    """"cache.is_updated" for ``cache.is_updated`` (``cache`` in ``roots``), also through ``[...]`` and
    ``.get(...)`` (reads of an item); None for anything else."""
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "get":
        expr = expr.func.value
    while isinstance(expr, cst.Subscript):
        expr = expr.value
    parts = []
    while isinstance(expr, cst.Attribute):
        parts.append(expr.attr.value)
        expr = expr.value
    if not parts or not isinstance(expr, cst.Name) or expr.value not in roots:
        return None
    return ".".join([expr.value, *reversed(parts)])


@dataclass
class _ArgumentState:
    writes: dict[str, list[cst.CSTNode]]  # "cache.is_updated" -> the statements writing it
    locals: dict[str, tuple[str, cst.CSTNode]]  # local name -> (the path it was read from, the first read)
    targets: frozenset[int]  # ids of write targets (not reads)


def _argument_state(ctx, fn) -> _ArgumentState:
    params = fn.node.params
    names = [p.name.value for p in [*params.posonly_params, *params.params, *params.kwonly_params]]
    if fn.cls is not None and names and "staticmethod" not in " ".join(fn.decorators):
        names = names[1:]  # self / cls: module state is the other half of the rule
    roots = frozenset(names)
    writes: dict[str, list[cst.CSTNode]] = {}
    local: dict[str, tuple[str, cst.CSTNode]] = {}
    targets: set[int] = set()
    if not roots:
        return _ArgumentState(writes, local, frozenset())
    for stmt in iter_nodes(fn.node.body, (cst.Assign, cst.AugAssign)):
        written = [t.target for t in stmt.targets] if isinstance(stmt, cst.Assign) else [stmt.target]
        for target in written:
            if isinstance(target, (cst.Attribute, cst.Subscript)):
                path = _path(target, roots)
                if path is not None:
                    targets.add(id(target))
                    writes.setdefault(path, []).append(stmt)
    for stmt in iter_nodes(fn.node.body, (cst.Assign,)):
        if len(stmt.targets) == 1 and isinstance(stmt.targets[0].target, cst.Name):
            path = _path(stmt.value, roots)
            if path is not None and path in writes:
                local.setdefault(stmt.targets[0].target.value, (path, stmt.value))
    return _ArgumentState(writes, local, frozenset(targets))


class GuardChangedByCompiledCode(Rule):
    code = "FL206"
    name = "guard-changed-by-compiled-code"
    message = "compiled code reads Python state as a condition and changes it: the next call recompiles"
    effects = (Effect.RECOMPILE,)
    default_enabled = False
    triggers = ("if", "while", "assert")
    measured_on = ("torch 2.13.0 CPU",)
    docs = _DOCS

    VALID = [
        # decided from the input on every call, nothing stored (measured: 0 recompiles)
        module_example(
            "    def __init__(self):\n        super().__init__()\n        self.mode = 'sparse'\n\n"
            "    def forward(self, x):\n        mode = self.mode if x.shape[1] > 8 else 'full'\n"
            "        return x * 2 if mode == 'sparse' else x\n"
        ),
        # the setter is called between runs, not from compiled code (FL201's configuration case)
        module_example(
            "    def __init__(self):\n        super().__init__()\n        self.mode = 'sparse'\n\n"
            "    def set_mode(self, value: str):\n        self.mode = value\n\n"
            "    def forward(self, x):\n        return x * 2 if self.mode == 'sparse' else x\n"
        ),
        # a submodule replaced by compiled code is not a Python value
        module_example(
            "    def __init__(self):\n        super().__init__()\n        self.norm = nn.Identity()\n\n"
            "    def swap(self):\n        self.norm = nn.LayerNorm(4)\n\n"
            "    def forward(self, x):\n        if self.norm is not None:\n            self.swap()\n"
            "        return self.norm(x)\n"
        ),
        # an argument's flag that compiled code reads but never writes (measured: 0 recompiles)
        module_example(
            "    def forward(self, x, cache):\n        if cache.is_updated.get(0):\n            return x\n"
            "        return x * 2\n"
        ),
        # stored before it is read: the read sees the stored value, no guard on the old one (measured: 0 recompiles)
        module_example(
            "    def __init__(self):\n        super().__init__()\n        self.shift_size = 3\n\n"
            "    def forward(self, x):\n        self.shift_size = 0\n        if self.shift_size > 0:\n"
            "            x = torch.roll(x, self.shift_size, 1)\n        return x * 2\n"
        ),
        # an argument's state written but never read as a condition
        module_example(
            "    def forward(self, x, cache):\n        cache.last = x.shape[0]\n        return x * 2\n"
        ),
    ]
    INVALID = [
        # big_bird's pattern: a setter called from compiled code changes the attribute the guard reads
        Invalid(
            module_example(
                "    def __init__(self, mode: str = 'sparse'):\n        super().__init__()\n        self.mode = mode\n\n"
                "    def set_mode(self, value: str):\n        if value == self.mode:\n            return\n"
                "        self.mode = value\n\n"
                "    def forward(self, x):\n        if self.mode == 'sparse' and x.shape[1] <= 8:\n"
                "            self.set_mode('full')\n        return x * 2 if self.mode == 'sparse' else x\n"
            ),
            line=16,
            count=1,
        ),
        # the flag set in forward itself, read as a bare condition (a literal in __init__ says it is a bool)
        Invalid(
            module_example(
                "    def __init__(self):\n        super().__init__()\n        self.initialized = False\n\n"
                "    def forward(self, x):\n        if not self.initialized:\n"
                "            self.initialized = True\n        return x * 2\n"
            ),
            line=11,
        ),
        # ESM-2's rotary cache: a length stored on self by compiled code, compared with the next input's length
        Invalid(
            module_example(
                "    def __init__(self):\n        super().__init__()\n        self._len = None\n\n"
                "    def _tables(self, x):\n        n = x.shape[1]\n        if n != self._len:\n"
                "            self._len = n\n        return x\n\n"
                "    def forward(self, x):\n        return self._tables(x) * 2\n"
            ),
            line=12,
            count=1,
        ),
        # m2m_100's pattern: an argument's item read through a local, tested, then set by the same call
        Invalid(
            module_example(
                "    def __init__(self):\n        super().__init__()\n        self.layer_idx = 0\n\n"
                "    def forward(self, x, cache=None):\n        is_updated = False\n        if cache is not None:\n"
                "            is_updated = cache.is_updated.get(self.layer_idx)\n"
                "        if cache is not None and is_updated:\n            return x\n"
                "        if cache is not None:\n            cache.is_updated[self.layer_idx] = True\n"
                "        return x * 2\n"
            ),
            line=14,
            count=1,
        ),
        # whisper's order: read into a local, written, then the local tested (measured: 1 recompile on the `if`)
        Invalid(
            module_example(
                "    def forward(self, x, cache):\n        is_updated = cache.is_updated.get(0)\n"
                "        cache.is_updated[0] = True\n        if is_updated:\n            return x\n        return x * 2\n"
            ),
            line=9,
        ),
        # sam3_video's order: a membership test on an argument's dict, then the key stored (measured: 1 recompile)
        Invalid(
            module_example(
                "    def forward(self, x, session, prompt_id: int = 0):\n"
                "        if prompt_id not in session.prompt_embeddings:\n"
                "            session.prompt_embeddings[prompt_id] = x.sum(0)\n"
                "        return x + session.prompt_embeddings[prompt_id]\n"
            ),
            line=7,
            count=1,
        ),
        # an argument's attribute tested directly and set in the branch
        Invalid(
            module_example(
                "    def forward(self, x, state):\n        if not state.ready:\n            state.ready = True\n"
                "            return x * 2\n        return x\n"
            ),
            line=7,
        ),
    ]

    def __init__(self) -> None:
        super().__init__()
        # one guard per value and frame: a later read in the same block or below reuses it (one recompile)
        self._guarded = FirstPerBlock()
        self._locals_reported: set[tuple[int, int]] = set()

    # -- module attributes --------------------------------------------------------------------------
    def visit_Attribute(self, node: cst.Attribute, ctx) -> None:
        attr = self_attr(node)
        cls = ctx.cls
        if attr is None or cls is None or cls.kind != "module" or ctx.model is None:
            return
        if attr in cls.submodules or attr in cls.params or attr in cls.buffers or attr in cls.tensor_attrs:
            return
        parents = ctx.parents
        if _condition_of(node, parents) is None:
            return
        writes = _compiled_writes(ctx, attr)
        if not writes or not _scalar_evidence(ctx, attr, node, parents):
            return
        writes = [w for w in writes if _changed_after(ctx, ctx.function, node, attr, w)]
        if not writes:
            return
        if not self._guarded.first((id(ctx.function), "self", attr), ctx):
            return
        write = writes[0]
        if write.method == ctx.function.qualname:
            how = f"the compiled `{write.method}` itself assigns it ({write.where})"
        else:
            how = f"`{write.method}` assigns it ({write.where}), and compiled code calls it: {write.chain}"
        ctx.report(
            node,
            f"`self.{attr}` is read as a condition, so Dynamo guards on its value, and {how}: the next call "
            "fails the guard and recompiles (once per new value); decide from the inputs on every call "
            "instead of storing the decision",
        )

    # -- argument objects ---------------------------------------------------------------------------
    def visit_Name(self, node: cst.Name, ctx) -> None:
        fn = ctx.function
        if fn is None:
            return
        parent = ctx.parent
        if isinstance(parent, cst.Attribute) and parent.attr is node:
            return
        state = ctx.memo(("fl206-argument-state", id(fn.node)), lambda: _argument_state(ctx, fn))
        if not state.writes:
            return
        parents = ctx.parents
        source = None  # where the state itself is read (for a local: its assignment)
        if node.value in state.locals:
            (path, source), read = state.locals[node.value], node
        else:
            read, i = node, 0
            # climb to the whole read: `cache.is_updated`, `cache.is_updated[0]`, `cache.is_updated.get(0)`
            while i < len(parents) and isinstance(parents[i], (cst.Attribute, cst.Subscript, cst.SubscriptElement, cst.Index, cst.Call)):
                p = parents[i]
                if isinstance(p, (cst.SubscriptElement, cst.Index)):
                    return  # `node` is inside an index, not the receiver
                if isinstance(p, cst.Call) and p.func is not read:
                    return
                if isinstance(p, cst.Attribute) and p.value is not read:
                    return
                if isinstance(p, cst.Subscript) and p.value is not read:
                    return
                read = p
                i += 1
            if id(read) in state.targets or read is node:
                return
            path = _path(read, frozenset({node.value}))
            if path is None or path not in state.writes:
                return
            parents = parents[i:]
        if _condition_of(read, parents) is None:
            return
        order = _order(ctx, fn)
        # the guard is on the value read, even when a local carries it past the write to the condition
        at = order.get(id(source if source is not None else read), -1)
        later = [w for w in state.writes[path] if order.get(id(w), -1) > at]
        if not later:
            return  # changed before it is read: the read sees the new value, no guard on the old one
        if source is not None:
            # a local carries the value: the guard is on its assignment's read, one per function however
            # many conditions test the local (gpt2's `is_updated` tested in two blocks: one recompile)
            if (id(fn), id(source)) in self._locals_reported:
                return
            self._locals_reported.add((id(fn), id(source)))
        elif not self._guarded.first((id(fn), path), ctx):
            return
        code = ctx.code(later[0]).strip()
        ctx.report(
            read,
            f"`{path}` (state of an argument object) is read as a condition, so Dynamo guards on it, and the "
            f"same compiled code changes it (`{code}`): the next call with the same object "
            "fails the guard and recompiles (once per new value)",
        )
