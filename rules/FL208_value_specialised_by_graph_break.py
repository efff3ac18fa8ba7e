"""FL208 value-specialised-by-graph-break: a Python value enters a frame that a graph break starts."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from fusionlint.analysis.context import LINE_REFS
from fusionlint.analysis.index import FunctionInfo
from fusionlint.rule import Effect, Invalid, Rule, module_example
from fusionlint.analysis.every_iteration import BreakFacts
from fusionlint.analysis.names import dotted
from fusionlint.analysis.walk import children, iter_nodes
from fusionlint.project.summary import SIZES_PASSED
from fusionlint.semantic.frame_split import after_break, element_read, first_reads, host_uses, name_events, split_points
from fusionlint.semantic.sizes import Sizes

_DOCS = """
## What it does
Flags the line where a frame that a graph break starts first reads a Python value that changes from
call to call:
- a parameter of a function that breaks the graph, when its compiled callers pass it different
  constants (`scatter(x, i, reduce="sum")` here, `reduce="max"` there; two callers that run under one
  compiled call: the same function, one reaching the other, or a common caller reaching both, since
  a helper called with `"sum"` in one model and `"max"` in another is compiled once in each), the
  default at one call and a value at another, a tensor size (`n=x.size(0)`, `size=(N, N)` with `N = x.size(0)`, `x.shape`), a
  value read from a tensor (`int(x.max())`), or the index of a loop (`for i in range(n): build(x, i)`);
  for a tuple of sizes, the first read of an element (`a, b = size` then `a`), not `size is None`;
- a local variable holding a size of a dimension (`b = x.size(0)`, `B, C, H, W = x.shape`) that is
  bound before a graph break in the same function and read after it;
- a value a graph break reads from a tensor (`int(index.max())`, `.item()`, `.tolist()`, or what a
  function returns that does so, like PyG's `maybe_num_nodes`), where the frame resumed after the
  break first consumes it: in the same expression (`int(index.max()) + 1`) or where the name it is
  bound to is first read (not when that frame has no tensor work: Dynamo does not compile it);
- a size in the tuple a function returns when that function breaks the graph on some path
  (`padding_len, input_ids = self._pad_to_window_size(...)`, Longformer and LED: the padding warning
  breaks), where the caller's resumed frame first uses it (measured: `___stack0[0] == 6` on that line,
  `tests/test_returned_sizes.py`; on the recall bench `padding_len == 504` and `___stack0[0] == 504`).
A first read is looked for on each path: when the two arms of an `if` both read the value first, both
are reported (the guard is on the arm a call takes).
The function breaks when a rule reports a break in it, or when it calls, in any file, a function
that surely breaks (the project model's break summary: `print`, a logger, `.item()`,
`int(x.max())`, ...). The finding sits on the expression that uses the value: the line Dynamo names.

Off by default (`--extend-select FL208`): the fix is the graph break, which its own finding reports,
and on the recall bench a failed guard was recorded at only 17 of the 69 lines it reported that the
models ran (a lower bound: an input's size guard that fails first hides the value guard behind it;
a value read from a tensor that stays the same on the bench's inputs, like a mask's `.any().item()`,
never fails its guard; a helper that breaks on some calls only is inlined on the others).

## Why is this bad?
Dynamo cannot trace through a graph break. It compiles the code before it, runs the breaking code
eagerly and resumes in a new frame whose inputs are the live locals; a function called from
compiled code that breaks runs as a frame of its own, whose inputs are its arguments. Python ints,
strings and `None` among those inputs are constants of the frame: Dynamo guards on their values
where the frame first reads them, and a call with another value compiles the frame again. A string
or `None`-ness that differs between callers costs one compile per distinct value, and after
`recompile_limit` (8) the frame runs eagerly; an int compiles once more and then becomes dynamic.

Measured with torch 2.13.0 CPU (backend eager; `tests/test_frame_split.py`): a helper that calls
`int(x.max())`, called from one forward with `mode="a"` and `mode="b"`, recompiled with the guard
`mode == 'a'` on its first line that reads `mode`, and with `n == 3` on the first line after the
break that reads `n` (3 and 4 passed); a helper that `print`s, called with `n=x.size(0)`,
recompiled for a new batch size with `n == 2` where it first reads `n`; a forward doing
`b = x.size(0)`, `print(...)`, `return x.view(b, -1)` recompiled its resumed frame with `b == 2` on
the `return` line; with inputs of one shape and new values, `n = int(index.max()) + 1` recompiled with
`___stack0 == 2` on that line, `s = x.max().item()` with `___stack0 == 2.0` where `s` is next read, and
a helper passed `size=(n, n)` with `size[0] == 2` on its `if a is None:` after `a, b = size`. On real models the recall bench (`bench/recall.py`) records these guards in
PyTorch Geometric's `maybe_num_nodes` (`num_nodes == 16`) and `scatter` (`dim == 0`,
`dim_size is None`, `reduce == 'max'`), and in transformers' XLM (`slen == 8` after an `.item()`).

## Example
```python
def pool(x, reduce):
    if reduce == "max":                  # guard: reduce == 'max'
        out = x.amax(0)
    else:
        out = x.sum(0)
    print("pooled", out.shape)          # graph break: pool is a frame of its own
    return out

class Model(nn.Module):
    def forward(self, x):
        return pool(x, "max") + pool(x, "sum")
```

## Use instead
Remove the graph break (here the `print`); the function is then inlined into its callers, where
each call's constant is simply part of the graph. Where the break has to stay, read sizes again
after it (`x.size(0)` on the tensor, which Dynamo tracks symbolically) instead of carrying a Python
int across it, and pass a constant that selects code as a separate function per value.

## Fix safety
No automatic fix: the graph break is what to change, and each break has its own fix (see the
finding on the breaking line).

## PyTorch reference
No graph-break id (this is a recompile):
https://docs.pytorch.org/docs/main/user_guide/torch_compiler/compile/programming_model.recompilation.html
"""


def _helper(body: str) -> str:
    return "import torch\nfrom torch import nn\n\n\n" + body


class ValueSpecialisedByGraphBreak(Rule):
    code = "FL208"
    name = "value-specialised-by-graph-break"
    message = "a Python value that changes between calls enters a frame that a graph break starts: each new value recompiles it"
    effects = (Effect.RECOMPILE,)
    # off by default: the recall bench records a failed guard at 17 of the 69 lines it reports that the
    # models ran (a lower bound: an input's size guard that fails first hides a value guard; a value
    # read from a tensor may not change on the bench's inputs; a helper that breaks on some calls only is
    # inlined on the others)
    default_enabled = False
    after_breaks = True
    measured_on = ("torch 2.13.0 CPU",)
    docs = _DOCS

    VALID = [
        # every call passes the same constant: one frame
        _helper(
            "def pool(x, reduce):\n    out = x.amax(0) if reduce == 'max' else x.sum(0)\n    print(out.shape)\n    return out\n\n\n"
            "class Model(nn.Module):\n    def forward(self, x):\n        return pool(x, 'max') + pool(x * 2, 'max')\n"
        ),
        # no graph break: the helper is inlined, its constants are part of the caller's graph
        _helper(
            "def pool(x, reduce):\n    return x.amax(0) if reduce == 'max' else x.sum(0)\n\n\n"
            "class Model(nn.Module):\n    def forward(self, x):\n        return pool(x, 'max') + pool(x, 'sum')\n"
        ),
        # the size is read again after the break, from the tensor
        module_example(
            "    def forward(self, x):\n        b = x.size(0)\n        y = x.reshape(b, -1)\n        print('x')\n"
            "        return y.view(x.size(0), -1)\n"
        ),
        # re-bound after the break before any read: nothing crosses it
        module_example(
            "    def forward(self, x):\n        b = x.size(0)\n        print(b)\n        b = 4\n        return x.view(b, -1)\n"
        ),
        # a break only some calls reach: the frame after it resumes only on those (transformers' warnings)
        module_example(
            "    def forward(self, x, warn: bool = False):\n        b = x.size(0)\n        if warn:\n            print('x')\n"
            "        return x.view(b, -1)\n"
        ),
        # not compiled
        _helper("def pool(x, reduce):\n    print(reduce)\n    return x\n\n\ndef run(x):\n    return pool(x, 'a') + pool(x, 'b')\n"),
        # one constant per model: two models no compiled call runs together each compile `pool` once
        _helper(
            "def pool(x, reduce):\n    out = x.amax(0) if reduce == 'max' else x.sum(0)\n    print(out.shape)\n    return out\n\n\n"
            "class MaxModel(nn.Module):\n    def forward(self, x):\n        return pool(x, 'max')\n\n\n"
            "class SumModel(nn.Module):\n    def forward(self, x):\n        return pool(x, 'sum')\n"
        ),
    ]
    INVALID = [
        Invalid(
            _helper(
                "def pool(x, reduce):\n    if reduce == 'max':\n        out = x.amax(0)\n    else:\n        out = x.sum(0)\n"
                "    print(out.shape)\n    return out\n\n\n"
                "class Model(nn.Module):\n    def forward(self, x):\n        return pool(x, 'max') + pool(x, 'sum')\n"
            ),
            line=6,
            count=1,
        ),
        # a size passed into a breaking helper, read first after the break (the resumed frame), next to
        # the value the break read from the tensor
        Invalid(
            _helper(
                "def scale(x, n):\n    k = int(x.max())\n    return x * n + k\n\n\n"
                "class Model(nn.Module):\n    def forward(self, x):\n        return scale(x, x.size(0))\n"
            ),
            line=7,
            count=2,
        ),
        # a value read from a tensor, used after the break by the frame resumed there (PyG's
        # `dim_size = int(index.max()) + 1`)
        Invalid(
            _helper(
                "class Model(nn.Module):\n    def forward(self, x, index):\n        n = int(index.max()) + 1\n"
                "        return x.new_zeros(n)\n"
            ),
            line=7,
            count=1,
        ),
        # the default at one call, a value at another (PyG's `maybe_num_nodes(edge_index, num_nodes)`)
        Invalid(
            _helper(
                "def count(ids, num_nodes=None):\n    if num_nodes is not None:\n        return num_nodes\n"
                "    return int(ids.max()) + 1\n\n\n"
                "class Model(nn.Module):\n    def forward(self, x, ids):\n"
                "        return x * count(ids) + count(ids, 16)\n"
            ),
            line=6,
        ),
        # first read in an `elif` test: reported on that line (PyG's `add_remaining_self_loops`)
        Invalid(
            _helper(
                "def pick(x, n=None):\n    if x.dim() == 1:\n        out = x\n    elif n is None:\n        out = x * 2\n"
                "    else:\n        out = x * n\n    print('p')\n    return out\n\n\n"
                "class Model(nn.Module):\n    def forward(self, x):\n        return pick(x) + pick(x, 3)\n"
            ),
            line=8,
            count=1,
        ),
        # a loop's index passed to a helper that breaks: a frame per index (big_bird's `set_attention_type`)
        Invalid(
            _helper(
                "def build(x, idx):\n    y = x * idx\n    print('built')\n    return y\n\n\n"
                "class Model(nn.Module):\n    def forward(self, x):\n        for i in range(3):\n            x = build(x, i)\n"
                "        return x\n"
            ),
            line=6,
            count=1,
        ),
        # a tuple holding sizes (PyG's `to_torch_csr_tensor(edge_index, size=(N, N))`)
        Invalid(
            _helper(
                "def densify(x, size):\n    out = x.new_zeros(size)\n    print('dense')\n    return out\n\n\n"
                "class Model(nn.Module):\n    def forward(self, x):\n        n = x.size(0)\n        return densify(x, (n, n))\n"
            ),
            line=6,
            count=1,
        ),
        # a size crossing a call of a function of this file that breaks on every call (XLM's `get_masks`)
        Invalid(
            _helper(
                "def check(x):\n    assert x.max().item() < 10\n\n\n"
                "class Model(nn.Module):\n    def forward(self, x):\n        n = x.shape[1]\n        check(x)\n"
                "        return x[:, :n] * 2\n"
            ),
            line=13,
            count=1,
        ),
        # a size taken before a break in the same function and read after it
        Invalid(
            module_example(
                "    def forward(self, x):\n        b, n = x.shape[:2]\n        print('x')\n        return x.view(b, -1)\n"
            ),
            line=9,
            count=1,
        ),
    ]

    def visit_IndentedBlock(self, node: cst.IndentedBlock, ctx) -> None:
        # a compiled function's body: its block is the one node whose parent is the definition
        fn = ctx.function
        if fn is None or fn.node.body is not node:
            return
        if not ctx.breaks and not fn.breaking_calls and fn.splits is None and not fn.host_calls and not fn.size_calls:
            return  # nothing splits this function (the common case: no walk)
        breaking_nodes = _breaking_nodes(fn, ctx)
        points = split_points(fn.node, breaking_nodes)
        if not points and fn.splits is None:
            return
        done: set[int] = set()
        self._host_values(fn, ctx, done)
        self._returned_sizes(fn, ctx, done)
        sizes = Sizes(ctx)
        varying = {n: how for n, how in fn.varying.items() if n not in fn.tensor_params}
        if varying:  # the function's own frame reads its arguments
            if points:  # where it breaks, as a line of this file
                where, refs = f"line {LINE_REFS}", (points[0][0],)
            else:  # a call into another file breaks (the project model)
                where, refs = fn.splits, ()
            sequences = {n for n, how in varying.items() if how.startswith(SIZES_PASSED)}
            reads = first_reads(node.body, {n: how for n, how in varying.items() if n not in sequences})
            for name in sorted(sequences):
                found = element_read(node.body, name)
                if found is not None:
                    reads.append((name, *found))
            for name, read, at in reads:
                done.add(id(read))
                ctx.report(
                    at,
                    f"`{name}` changes from one compiled call to the next ({varying[name]}), and `{fn.name}` "
                    f"breaks the graph ({where}), so Dynamo compiles it as a frame of its own and guards "
                    f"on `{name}`'s value here: {_AGAIN}",
                    line_refs=refs,
                    no_reason=True,
                )
        # each frame resumed after a break that every call reaches reads what crosses it (a break in a
        # branch resumes only on the calls that take it)
        for breaking, after in split_points(fn.node, breaking_nodes, every_call=True):
            for name, read, at in first_reads(after, None):
                if id(read) in done:
                    continue
                if name in varying:
                    what, again = f"it changes from one compiled call to the next: {varying[name]}", _AGAIN
                else:
                    tensor = sizes.of(cst.Name(name))
                    if tensor is None:
                        continue
                    what, again = f"a size of `{tensor}` taken before it", _SIZE_AGAIN
                done.add(id(read))
                ctx.report(
                    at,
                    f"`{name}` ({what}) crosses the graph break at line {LINE_REFS}: the frame Dynamo resumes in "
                    f"after the break gets it as a Python value and guards on it here: {again}",
                    line_refs=(breaking,),
                    no_reason=True,
                )

    def _returned_sizes(self, fn: FunctionInfo, ctx, done: set[int]) -> None:
        """``padding_len, input_ids, ... = self._pad_to_window_size(...)``: a callee that breaks the graph
        returns a size in a tuple (``FunctionInfo.size_calls``); when it breaks, the caller resumes in a new
        frame that gets the size as a Python int and guards on it where it is first used (recall bench:
        Longformer's `___stack0[0] == 504` at the next call that passes `padding_len`, LED's `if padding_len > 0:`)."""
        if not fn.size_calls:
            return
        for stmt in iter_nodes(fn.node.body, (cst.Assign,)):
            call = stmt.value
            if not (isinstance(call, cst.Call) and len(stmt.targets) == 1):
                continue
            positions = fn.size_calls.get(dotted(call.func) or "")
            target = stmt.targets[0].target
            if positions is None or not isinstance(target, (cst.Tuple, cst.List)):
                continue
            names = {
                e.value.value: True for i, e in enumerate(target.elements)
                if i in positions and isinstance(e, cst.Element) and isinstance(e.value, cst.Name)
            }
            found = after_break(fn.node, frozenset({id(call)})) if names else None
            if found is None:
                continue
            for name, read, at in first_reads(found[1], names):
                if id(read) in done:
                    continue
                done.add(id(read))
                ctx.report(
                    at,
                    f"`{name}` is a size that `{dotted(call.func)}` returns at line {LINE_REFS}; that call breaks the "
                    "graph (on some path), and the frame Dynamo resumes in after it gets the size as a Python int "
                    f"and guards on it here: {_SIZE_AGAIN}",
                    line_refs=(call,),
                    no_reason=True,
                )

    def _host_values(self, fn: FunctionInfo, ctx, done: set[int]) -> None:
        """A value read from a tensor by a graph break (``int(x.max())``, ``.item()``, ``.tolist()``) is a
        Python constant of the frame resumed after it: guarded where an operation first consumes it,
        in the breaking statement (``int(i.max()) + 1``) or at the first read of the name it is bound to."""
        hosts = frozenset(
            id(c) for c in iter_nodes(fn.node.body, (cst.Call,))
            if (id(c) in ctx.breaks and _reads_value(c)) or (fn.host_calls and (dotted(c.func) or "") in fn.host_calls)
        )
        if not hosts:
            return
        for host, consumer, names in host_uses(fn.node.body.body, hosts):
            if _reads_value(host) and id(host) in ctx.breaks:
                source = f"read from a tensor at line {LINE_REFS} (a graph break)"
            else:
                source = f"that `{dotted(host.func)}` returns at line {LINE_REFS}, read from a tensor (it breaks the graph)"
            found = after_break(fn.node, frozenset({id(host)}))  # what runs after this break
            if found is None or not (_consumer_works(consumer, host) or _traces_work(found[1])):
                continue  # `return int(x.max()) + 1`: the resumed frame has no tensor work, Dynamo skips it
            if consumer is not None:
                if id(consumer) in ctx.breaks:
                    continue  # `print(x.item())`: the consumer breaks too, nothing is traced with the value
                if isinstance(consumer, cst.BinaryOperation) and _lists(host):
                    continue  # `[1] * 3 + x.tolist()`: joining lists does not read the items
                ctx.report(
                    consumer,
                    f"the value {source} is consumed here by the frame Dynamo resumes in after the break, as a "
                    f"Python constant it guards on: {_HOST_AGAIN}",
                    line_refs=(host,),
                    no_reason=True,
                )
                continue
            if not names:
                continue
            # passed to a project function that Dynamo inlines (`self.experts(x, sizes)`): guarded in it
            inlined = (lambda call: (dotted(call.func) or "") in fn.tensor_calls) if fn.tensor_calls else None
            for name, read, at in first_reads(found[1], dict.fromkeys(names), inlined):
                if id(read) in done:
                    continue
                done.add(id(read))
                ctx.report(
                    at,
                    f"`{name}` holds the value {source}: the frame Dynamo resumes in after the break gets it as a "
                    f"Python constant and guards on it here: {_HOST_AGAIN}",
                    line_refs=(host,),
                    no_reason=True,
                )


def _reads_value(call: cst.Call) -> bool:
    """``int(...)``/``float(...)``/``bool(...)`` of a tensor, ``.item()``, ``.tolist()``: a break whose result is
    a Python value read from the tensor's data."""
    func = call.func
    if isinstance(func, cst.Name):
        return func.value in ("int", "float", "bool")
    return isinstance(func, cst.Attribute) and func.attr.value in ("item", "tolist") and not call.args


def _lists(call: cst.Call) -> bool:
    return isinstance(call.func, cst.Attribute) and call.func.attr.value == "tolist"


def _traces_work(after) -> bool:
    """Whether the code after a break calls something or reads a name: Dynamo compiles a resumed frame
    only when it has work to trace (``return ___stack0 + 1`` runs as it is, with no guard)."""
    for name, _, read, _ in name_events(after):
        if read and name not in ("True", "False", "None"):
            return True
    return any(isinstance(n, cst.Call) for item in after for n in _nodes(item[0] if isinstance(item, tuple) else item))


def _consumer_works(consumer: Optional[cst.CSTNode], host: cst.CSTNode) -> bool:
    """Whether the operation consuming a value read from a tensor does work beyond it: a call, or an
    operand other than a constant (``x * 2 + count(x)``, not ``int(i.max()) + 1``)."""
    if consumer is None:
        return False
    if isinstance(consumer, cst.Call):
        return True
    stack = [k for k in children(consumer) if k is not host]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Call) or (isinstance(node, cst.Name) and node.value not in ("True", "False", "None")):
            return True
        stack.extend(k for k in children(node) if k is not host)
    return False


def _nodes(root: cst.CSTNode):
    yield root
    yield from iter_nodes(root, (cst.Call,))


_HOST_AGAIN = (
    "each new value compiles that frame again (an int or float becomes dynamic after its first change, a bool "
    "costs one compile per value); remove the graph break, or keep the value a tensor"
)

_AGAIN = (
    "each new value compiles it again (an int becomes dynamic after its first change; other values count "
    "toward the recompile limit of 8, after which the frame runs eagerly); remove the graph break"
)
_SIZE_AGAIN = (
    "a new size compiles that frame again before automatic dynamic shapes make it symbolic; read the size from "
    "the tensor after the break, or remove the break"
)


def _breaking_nodes(fn: FunctionInfo, ctx) -> frozenset[int]:
    """The nodes of ``fn`` where its frame ends: a break with no stated condition, or a call of a
    function that breaks on every call (Dynamo cannot inline it): of this file, judged by the rules'
    findings, or of any file, judged by the project model (``FunctionFacts.breaking_calls``)."""
    if not ctx.breaks and not fn.breaking_calls:
        return ctx.breaks
    facts = ctx.memo("FL208-break-facts", lambda: BreakFacts(ctx.file, ctx.breaks))
    calls = frozenset(
        id(c) for c in iter_nodes(fn.node.body, (cst.Call,))
        if facts.call_breaks(c, fn) or (fn.breaking_calls and (dotted(c.func) or "") in fn.breaking_calls)
    )
    return ctx.breaks | calls

