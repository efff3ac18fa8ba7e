"""FL301 view-after-permute: `.view()` on the result of permute/transpose raises; use `.reshape()`."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from fusionlint.semantic.bindings import target_names
from fusionlint.analysis.literals import int_literal
from fusionlint.analysis.walk import iter_nodes
from fusionlint.rule import Applicability, Effect, Invalid, Rule, Severity

# Calls and attributes whose result usually has non-contiguous strides.
_PERMUTING_METHODS = frozenset({"permute", "transpose", "movedim", "moveaxis", "swapaxes", "swapdims", "t"})
_PERMUTING_ATTRS = frozenset({"T", "mT", "H", "mH"})
# Methods that keep the input's strides (preserve_format), so the result is still non-contiguous.
_STRIDE_PRESERVING = frozenset({"float", "half", "bfloat16", "double", "to", "type_as", "detach", "clone"})


def _permuting_node(expr: cst.BaseExpression) -> Optional[cst.BaseExpression]:
    """The permute/transpose call (or ``.T``-style attribute) that produced ``expr``, looking
    through stride-preserving calls (``.float()``, ``.to()``...), if any."""
    while True:
        if isinstance(expr, cst.Attribute) and expr.attr.value in _PERMUTING_ATTRS:
            return expr
        if not (isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute)):
            return None
        method = expr.func.attr.value
        if method in _PERMUTING_METHODS:
            return expr
        if method not in _STRIDE_PRESERVING or (method == "clone" and expr.args):
            return None
        expr = expr.func.value


def _op_name(node: cst.BaseExpression) -> str:
    if isinstance(node, cst.Attribute):
        return "." + node.attr.value
    return f".{node.func.attr.value}()"  # type: ignore[union-attr]


def _shape_args(call: cst.Call) -> Optional[list[cst.BaseExpression]]:
    """The dimensions passed to view/reshape/permute (``f(a, b)`` or ``f((a, b))``); None when starred."""
    args = list(call.args)
    if len(args) == 1 and isinstance(args[0].value, (cst.Tuple, cst.List)):
        elements = args[0].value.elements
        if any(isinstance(e, cst.StarredElement) for e in elements):
            return None
        return [e.value for e in elements]
    if any(a.star or a.keyword for a in args):
        return None
    return [a.value for a in args]


def _permutation(node: cst.BaseExpression, rank: Optional[int]) -> Optional[list[int]]:
    """Source dimension of each output dimension of the permuting op, when it can be known."""
    if isinstance(node, cst.Attribute):
        name = node.attr.value
        if rank is None:
            return None
        if name in ("T", "H"):
            return list(reversed(range(rank)))
        perm = list(range(rank))  # mT / mH: swap the last two
        if rank >= 2:
            perm[-2], perm[-1] = perm[-1], perm[-2]
        return perm
    method = node.func.attr.value  # type: ignore[union-attr]
    if method == "permute":
        dims = _shape_args(node)  # type: ignore[arg-type]
        if dims is None:
            return None
        ints = [int_literal(d) for d in dims]
        if any(i is None for i in ints):
            return None
        n = len(ints)
        return [i % n for i in ints]  # type: ignore[operator]
    if method == "t":
        return [1, 0]
    if rank is None or len(node.args) != 2:  # type: ignore[union-attr]
        return None
    a, b = (int_literal(arg.value) for arg in node.args)  # type: ignore[union-attr]
    if a is None or b is None or not (-rank <= a < rank and -rank <= b < rank):
        return None
    a, b = a % rank, b % rank
    perm = list(range(rank))
    if method in ("movedim", "moveaxis"):
        perm.remove(a)
        perm.insert(b, a)
    else:  # transpose / swapaxes / swapdims
        perm[a], perm[b] = perm[b], perm[a]
    return perm


class ViewAfterPermute(Rule):
    code = "FL301"
    name = "view-after-permute"
    message = "`.view()` merges dimensions a permute made non-adjacent: it raises at runtime; use `.reshape()`"
    effects = (Effect.RUNTIME_ERROR,)
    severity = Severity.ERROR
    fix_applicability = Applicability.SAFE
    triggers = (".view(",)
    measured_on = ("torch 2.13.0 CPU", "torch 2.11.0 H200")
    docs = """
## What it does
Flags `.view(...)` applied to the result of `permute`, `transpose`, `movedim`, `swapaxes`,
`.t()`, `.T` or `.mT` (directly, or through a local name assigned once from one), in code that
`torch.compile` traces, when the view must merge dimensions that the permutation made
non-adjacent in memory.

A view may split any dimension and may merge neighbours that are still neighbours in memory, so
`(B, HW, C).transpose(1, 2).view(B, C, H, W)` and `x.permute(0, 2, 3, 1).view(1, -1, C)` are
legal and not flagged. The rule works out the permutation and the ranks from the code (literal
dims, `b, n, c = x.shape`, earlier `view`/`reshape`/`permute`/`unbind`); when it cannot tell
the rank, it stays quiet rather than guess.

## Why is this bad?
Those ops return a tensor with permuted strides; `.view()` needs strides compatible with the new
shape, so it raises `RuntimeError: view size is not compatible with input tensor's size and
stride`. This is a correctness bug, not a speed problem: measured with torch 2.13.0 on CPU
and torch 2.11.0 on an H200, `x.permute(0, 2, 1).view(B, -1)` raises in eager mode, and under
`torch.compile` it fails while tracing (`TorchRuntimeError` from fake tensors). The common "fix"
of inserting `.contiguous()` works but always copies; `.reshape()` copies only when it must, and
under inductor the copy fuses with its neighbours (`permute().reshape()` compiled to 1 kernel).

## Example
```python
def forward(self, x):
    return x.permute(0, 2, 1).view(x.shape[0], -1)
```

## Use instead
```python
def forward(self, x):
    return x.permute(0, 2, 1).reshape(x.shape[0], -1)
```

## Fix safety
Safe: `.reshape()` returns a view whenever `.view()` could have and copies otherwise, and the
flagged `.view()` could not (it raised), so no working code changes behaviour. A `.view()` that
happens to be stride-compatible (e.g. only splitting an untouched dimension) would keep working
and keep aliasing its input under `.reshape()`.
"""
    VALID = [
        "import torch\nfrom torch import nn\nclass M(nn.Module):\n"
        "    def forward(self, x):\n        return x.permute(0, 2, 1).reshape(x.shape[0], -1)\n",
        # .contiguous() in between makes the view legal
        "import torch\nfrom torch import nn\nclass M(nn.Module):\n"
        "    def forward(self, x):\n        y = x.transpose(1, 2).contiguous()\n        return y.view(y.shape[0], -1)\n",
        # a view of a contiguous tensor
        "import torch\nfrom torch import nn\nclass M(nn.Module):\n"
        "    def forward(self, x):\n        return x.view(x.shape[0], -1).transpose(0, 1)\n",
        # a dtype view is not a shape view
        "import torch\nfrom torch import nn\nclass M(nn.Module):\n"
        "    def forward(self, x):\n        return x.t().view(torch.int32)\n",
        # outside compiled code
        "import torch\ndef prep(x):\n    return x.permute(0, 2, 1).view(-1)\n",
        # splitting a dim of a transposed tensor is stride-compatible: (B, HW, C) -> (B, C, H, W)
        "import torch\nfrom torch import nn\nclass M(nn.Module):\n"
        "    def forward(self, x, h: int, w: int):\n        b, hw, c = x.shape\n"
        "        return x.transpose(1, 2).view(b, c, h, w)\n",
        # merging H and W, which stay adjacent after permute(0, 2, 3, 1): legal
        "import torch\nfrom torch import nn\nclass M(nn.Module):\n"
        "    def forward(self, x):\n        return x.permute(0, 2, 3, 1).view(1, -1, x.shape[1])\n",
        # interpolate keeps the channels-last layout of its permuted input, so permuting back gives a
        # contiguous tensor (transformers 5.24, VideoLlama3 `pixel_unshuffle`; checked on torch 2.13)
        "import torch\nfrom torch import nn\nimport torch.nn.functional as F\nclass M(nn.Module):\n"
        "    def forward(self, x):\n        c = x.shape[-1]\n        h = x.permute(0, 3, 1, 2)\n"
        "        h = F.interpolate(h, size=(2, 2), mode='bilinear')\n        return h.permute(0, 2, 3, 1).view(-1, c)\n",
        # rank unknown: cannot tell whether the view merges the swapped dims, so no finding
        "import torch\nfrom torch import nn\nclass M(nn.Module):\n"
        "    def forward(self, x):\n        return x.transpose(1, 2).view(x.shape[0], -1)\n",
    ]
    INVALID = [
        Invalid(
            "import torch\nfrom torch import nn\nclass M(nn.Module):\n"
            "    def forward(self, x):\n        return x.permute(0, 2, 1).view(x.shape[0], -1)\n",
            expected_fix="import torch\nfrom torch import nn\nclass M(nn.Module):\n"
            "    def forward(self, x):\n        return x.permute(0, 2, 1).reshape(x.shape[0], -1)\n",
            line=5,
        ),
        Invalid(
            "import torch\nfrom torch import nn\nclass M(nn.Module):\n"
            "    def forward(self, q):\n        b, h, n, d = q.shape\n        out = q.transpose(1, 2)\n"
            "        return out.view(b, n, h * d)\n",
            expected_fix="import torch\nfrom torch import nn\nclass M(nn.Module):\n"
            "    def forward(self, q):\n        b, h, n, d = q.shape\n        out = q.transpose(1, 2)\n"
            "        return out.reshape(b, n, h * d)\n",
            line=7,
        ),
        Invalid(
            "import torch\n\n@torch.compile\ndef f(x):\n    y = x.view(4, 8, 16)\n    return y.mT.float().view(-1)\n",
            expected_fix="import torch\n\n@torch.compile\ndef f(x):\n    y = x.view(4, 8, 16)\n    return y.mT.float().reshape(-1)\n",
            line=6,
        ),
    ]

    def visit_Call(self, node: cst.Call, ctx) -> None:
        func = node.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "view" and node.args):
            return
        if len(node.args) == 1 and (ctx.qualname(node.args[0].value) or "").startswith("torch.") and not isinstance(
            node.args[0].value, (cst.Tuple, cst.List)
        ):
            return  # x.view(torch.int32): reinterpreting the dtype, not the shape
        if ctx.function is None:
            return
        ranks = _Ranks(ctx.function.node, stop=ctx.statement())
        source = func.value
        permuting = _permuting_node(source)
        via_name = False
        if permuting is None and isinstance(source, cst.Name):
            permuting = ranks.permuting_origin(source.value)
            via_name = True
        if permuting is None:
            return
        target = _shape_args(node)
        if target is None:
            return
        receiver = permuting.value if isinstance(permuting, cst.Attribute) else permuting.func.value  # type: ignore[union-attr]
        state = ranks.noncontig_before.get(source.value) if via_name and isinstance(source, cst.Name) else None
        if ranks.maybe_noncontig(receiver, state):
            return  # permuting a tensor that is itself not contiguous: its strides are not known here
        perm = _permutation(permuting, ranks.rank(receiver))
        if perm is None or not _view_must_fail(perm, len(target)):
            return  # unknown ranks, or a view that can be stride-compatible (splitting dims): stay quiet
        fix = ctx.fix(Applicability.SAFE, ctx.replace(func.attr, "reshape"), title="Use `.reshape()`")
        ctx.report(
            node,
            f"`.view()` merges dimensions that `{_op_name(permuting)}` made non-adjacent in memory: "
            "it raises at runtime; use `.reshape()`",
            fix=fix,
        )


def _view_must_fail(perm: list[int], target_rank: int) -> bool:
    """Whether viewing a permuted (otherwise contiguous) tensor as ``target_rank`` dims must merge
    two output dims whose memory is not adjacent.

    A view may split any dim and may merge output dims i, i+1 only when they come from adjacent
    source dims in order (perm[i+1] == perm[i] + 1). Fewer target dims than source dims force
    ``len(perm) - target_rank`` merges; when the mergeable pairs cannot absorb them, it fails.
    (Size-1 dims are always mergeable; they are unknowable here and rare in permuted views.)
    """
    merges = len(perm) - target_rank
    if merges <= 0:
        return False
    mergeable = sum(1 for i in range(len(perm) - 1) if perm[i + 1] == perm[i] + 1)
    return mergeable < merges


# Calls whose result has the rank of their first argument (elementwise and normalisations).
_RANK_PRESERVING_FUNCS = frozenset(
    {"softmax", "log_softmax", "relu", "gelu", "silu", "dropout", "sigmoid", "tanh", "layer_norm", "normalize",
     "exp", "abs", "clamp", "where", "masked_fill", "contiguous", "float", "half", "bfloat16", "to", "type_as",
     "detach", "clone", "sqrt", "rsqrt", "mul", "add", "div", "sub", "neg"}
)


class _Ranks:
    """Tiny rank inference inside one function: enough to know what a permute or transpose did."""

    def __init__(self, fn: cst.FunctionDef, stop: Optional[cst.CSTNode] = None) -> None:
        """Facts from the assignments of ``fn`` that come before ``stop`` (the statement being
        checked), so ``out = out.transpose(1, 2).view(...)`` sees the earlier ``out``."""
        self.assigned: dict[str, list[cst.BaseExpression]] = {}
        self.unpacked: dict[str, int] = {}  # x -> K from `a, b, c = x.shape` / `x.size()`
        self.elements: dict[str, tuple[cst.BaseExpression, int]] = {}  # q -> (qkv.unbind(0) source, drop)
        # names that may hold a non-contiguous tensor (permuted, or computed from one by an op that keeps
        # the input's strides), as of the statement being checked / as of each name's latest binding
        self.noncontig: set[str] = set()
        self.noncontig_before: dict[str, frozenset[str]] = {}
        for param in (*fn.params.params, *fn.params.posonly_params, *fn.params.kwonly_params):
            self.assigned.setdefault(param.name.value, []).append(cst.Name("__param__"))
        kinds: tuple[type, ...] = (cst.Assign, cst.AugAssign, cst.AnnAssign, cst.For)
        if stop is not None:
            kinds += (type(stop),)
        for stmt in iter_nodes(fn.body, kinds):
            if stmt is stop:
                break
            if not isinstance(stmt, (cst.Assign, cst.AugAssign, cst.AnnAssign, cst.For)):
                continue
            if isinstance(stmt, cst.Assign):
                before = frozenset(self.noncontig)
                strided = self.maybe_noncontig(stmt.value)
                for target in stmt.targets:
                    self._bind(target.target, stmt.value)
                    if isinstance(target.target, cst.Name):
                        self.noncontig_before[target.target.value] = before
                        (self.noncontig.add if strided else self.noncontig.discard)(target.target.value)
            else:
                for name in target_names(stmt.target):
                    self.assigned.setdefault(name, []).append(cst.Name("__unknown__"))

    def _bind(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        if isinstance(target, cst.Name):
            self.assigned[target.value] = [value]  # the latest binding before the checked statement
            self.unpacked.pop(target.value, None)
            self.elements.pop(target.value, None)
            return
        names = target_names(target)
        starred = isinstance(target, (cst.Tuple, cst.List)) and any(
            isinstance(e, cst.StarredElement) for e in target.elements
        )
        shape_of = _shape_source(value)
        if shape_of is not None and isinstance(shape_of, cst.Name) and not starred:
            self.unpacked.setdefault(shape_of.value, len(names))
        for name in names:
            if (
                not starred
                and isinstance(value, cst.Call)
                and isinstance(value.func, cst.Attribute)
                and value.func.attr.value in ("unbind", "chunk", "split")
            ):
                drop = 1 if value.func.attr.value == "unbind" else 0
                self.elements[name] = (value.func.value, drop)
            self.assigned.setdefault(name, []).append(cst.Name("__unknown__"))

    def maybe_noncontig(self, expr: cst.BaseExpression, names: Optional[frozenset[str]] = None, depth: int = 0) -> bool:
        """May ``expr`` have non-contiguous strides? True for a permute/transpose and for what an op that
        keeps its input's memory layout (elementwise ops, ``F.interpolate``, convolutions, pooling...)
        computes from one: ``F.interpolate(x.permute(0, 3, 1, 2))`` is channels-last, so permuting it
        back gives a contiguous tensor that ``.view()`` accepts (transformers 5.24, VideoLlama3)."""
        known = self.noncontig if names is None else names
        if depth > 8:
            return False
        if _permuting_node(expr) is not None:
            return True
        if isinstance(expr, cst.Name):
            return expr.value in known
        if isinstance(expr, cst.BinaryOperation):
            return self.maybe_noncontig(expr.left, names, depth + 1) or self.maybe_noncontig(expr.right, names, depth + 1)
        if isinstance(expr, cst.UnaryOperation):
            return self.maybe_noncontig(expr.expression, names, depth + 1)
        if not isinstance(expr, cst.Call):
            return False
        func = expr.func
        if isinstance(func, cst.Attribute):
            last = func.attr.value
            base = func.value
            if isinstance(base, cst.Name) and base.value == "self":
                return False  # a submodule: assumed to return a fresh (contiguous) tensor
            module_call = isinstance(base, (cst.Name, cst.Attribute)) and _dotted_root(base) in ("torch", "F", "nn", "functional")
            if last == "contiguous" and not module_call:
                return False
            if last not in _LAYOUT_KEEPING:
                return False
            if module_call:
                return bool(expr.args) and self.maybe_noncontig(expr.args[0].value, names, depth + 1)
            return self.maybe_noncontig(base, names, depth + 1)
        if isinstance(func, cst.Name) and func.value in _LAYOUT_KEEPING and expr.args:
            return self.maybe_noncontig(expr.args[0].value, names, depth + 1)  # `from torch.nn.functional import interpolate`
        return False

    def permuting_origin(self, name: str) -> Optional[cst.BaseExpression]:
        values = self.assigned.get(name, [])
        if len(values) != 1:
            return None
        return _permuting_node(values[0])

    def rank(self, expr: cst.BaseExpression, depth: int = 0) -> Optional[int]:
        if depth > 8:
            return None
        if isinstance(expr, cst.Name):
            name = expr.value
            if name in self.unpacked:
                return self.unpacked[name]
            if name in self.elements:
                source, drop = self.elements[name]
                inner = self.rank(source, depth + 1)
                return inner - drop if inner is not None else None
            values = self.assigned.get(name, [])
            if len(values) == 1:
                return self.rank(values[0], depth + 1)
            return None
        if isinstance(expr, cst.BinaryOperation):
            left, right = self.rank(expr.left, depth + 1), self.rank(expr.right, depth + 1)
            known = [r for r in (left, right) if r is not None]
            return max(known) if known else None
        if not isinstance(expr, cst.Call):
            return None
        func = expr.func
        if isinstance(func, cst.Attribute):
            method = func.attr.value
            if method in ("view", "reshape", "permute", "expand"):
                dims = _shape_args(expr)
                return len(dims) if dims is not None else None
            if method in _PERMUTING_METHODS or method in _STRIDE_PRESERVING or method in _RANK_PRESERVING_FUNCS:
                if isinstance(func.value, cst.Name) and func.value.value in ("F", "torch"):
                    return self.rank(expr.args[0].value, depth + 1) if expr.args else None
                return self.rank(func.value, depth + 1)
            if method == "unsqueeze":
                inner = self.rank(func.value, depth + 1)
                return inner + 1 if inner is not None else None
        return None


# Ops whose output keeps the memory layout (strides order) of their input tensor.
_LAYOUT_KEEPING = frozenset(
    "interpolate upsample upsample_bilinear upsample_nearest conv1d conv2d conv3d conv_transpose1d conv_transpose2d "
    "conv_transpose3d avg_pool1d avg_pool2d avg_pool3d max_pool1d max_pool2d max_pool3d adaptive_avg_pool1d "
    "adaptive_avg_pool2d adaptive_avg_pool3d adaptive_max_pool2d batch_norm instance_norm dropout dropout2d relu gelu "
    "silu sigmoid tanh leaky_relu hardswish hardsigmoid elu mish softplus abs exp neg sqrt rsqrt pow sin cos mul add "
    "sub div clamp masked_fill float half bfloat16 double to type_as clone detach".split()
)


def _dotted_root(expr: cst.BaseExpression) -> Optional[str]:
    while isinstance(expr, cst.Attribute):
        expr = expr.value
    return expr.value if isinstance(expr, cst.Name) else None


def _shape_source(value: cst.BaseExpression) -> Optional[cst.BaseExpression]:
    """``x`` for ``x.shape`` / ``x.size()``."""
    if isinstance(value, cst.Attribute) and value.attr.value == "shape":
        return value.value
    if isinstance(value, cst.Call) and not value.args and isinstance(value.func, cst.Attribute) and value.func.attr.value == "size":
        return value.func.value
    return None
