"""Is this a tensor *value*? The stricter tensor judgement the graph-break checks share.

``ctx.is_tensor`` answers "may this expression hold a tensor". The checks behind FL102, FL103 and
FL108 (a Python branch, a size argument, a conversion) need "surely a tensor here", and must not
take an un-annotated ``flag``/``n`` argument of ``forward`` for one: ``TensorJudge`` answers that.
Also the small text helpers their messages use (``source``, ``short``).
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from fusionlint.semantic.bindings import target_names
from fusionlint.semantic.is_compiling import false_while_compiling, true_while_compiling
from fusionlint.analysis.names import through_aliases
from fusionlint.analysis.render import expression_code
from fusionlint.analysis.scope import function_nodes
from fusionlint.semantic.tensors import NON_TENSOR_METHODS, TENSOR_ATTRS, torch_call_returns_tensor

# (report node, message, pending fix or None): what the shared checkers (control_flow, dynamic_shapes,
# side_effects) return; FL108 reports them inside autograd.Function bodies, the others elsewhere.
Found = tuple[cst.CSTNode, str, Optional[object]]

# The break that `.item()` / `.tolist()` of a tensor gives (FL101, FL108). Measured with torch 2.13.0 CPU:
# `.tolist()` of a float tensor breaks as GB0109 "Tensor.tolist() with non-integer tensor", of an int64 or
# bool tensor as GB0033 "Data dependent operator" (aten._local_scalar_dense); both read the value on the host.
TO_PYTHON_BREAKS = {"item": "GB0124", "tolist": "GB0109 for a float tensor, GB0033 for an integer or bool one"}

# Calls that turn tensor values into a Python bool by themselves (Dynamo: GB0033 "Data dependent operator").
BOOL_FROM_VALUES = frozenset({"torch.equal", "torch.allclose", "torch.is_nonzero"})
BOOL_FROM_VALUES_METHODS = frozenset({"equal", "allclose", "is_nonzero"})
# Calls whose result differs per evaluation: computing both branches would change the output.
RANDOM = frozenset(
    {
        "rand", "randn", "randint", "rand_like", "randn_like", "randint_like", "randperm", "normal", "bernoulli",
        "multinomial", "poisson", "dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout",
        "feature_alpha_dropout", "rrelu", "gumbel_softmax", "exponential", "geometric", "cauchy", "log_normal",
        "uniform", "random",
    }
)
# Methods of torch.Tensor (returning tensors or Python data) that other common objects rarely have:
# calling one on a name is evidence that the name holds a tensor.
TENSOR_METHODS = frozenset(
    """abs absolute acos acosh add addcdiv addcmul addmm all amax amin aminmax angle any argmax argmin argsort
    argwhere asin atan atan2 baddbmm bincount bitwise_and bitwise_not bitwise_or bitwise_xor bmm bool byte ceil
    chunk clamp clamp_max clamp_min clip clone contiguous cos cosh count_nonzero cummax cummin cumprod cumsum
    deg2rad detach diag diagonal diff digamma div divide dot double eq exp expand expand_as expm1 flatten flip
    float floor floor_divide fmod frac gather ge gt half index_add index_fill index_select isclose isfinite isinf
    isnan isneginf isposinf item kthvalue le lerp lgamma log log10 log1p log2 log_softmax logical_and logical_not
    logical_or logical_xor logit logsumexp long lt masked_fill masked_scatter masked_select matmul max maximum
    mean median min minimum mm mode mul multiply mv nan_to_num nanmean nanmedian nansum narrow ne neg negative
    new_empty new_full new_ones new_tensor new_zeros nonzero norm outer permute pow prod rad2deg reciprocal relu
    remainder renorm repeat repeat_interleave reshape reshape_as roll rot90 round rsqrt scatter scatter_add
    select sgn short sigmoid sign signbit sin sinh softmax sqrt square squeeze std sub subtract sum swapaxes t
    take tan tanh tile tolist topk trace transpose tril triu true_divide trunc type_as unbind unflatten unique
    unique_consecutive unsqueeze var view view_as where xlogy""".split()
)


def source(ctx, node: cst.CSTNode) -> str:
    """Source of an expression without its own redundant outer parentheses."""
    if getattr(node, "lpar", None) and getattr(node, "rpar", None):
        try:
            node = node.with_changes(lpar=[], rpar=[])  # type: ignore[attr-defined]
        except (TypeError, ValueError):
            pass
    return ctx.code(node).strip()


def short(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


class TensorJudge:
    """Stricter tensor tests than ``ctx.is_tensor`` for the questions these rules ask.

    ``ctx.is_tensor`` counts every forward parameter without a default as a tensor. That is right for
    a receiver (``x.sum()`` only makes sense on a tensor) but not for a bare name in a condition or a
    size (``if flag:``, ``torch.arange(n)`` with ``n`` an int argument). A *weak* name is such a
    parameter that is never reassigned in the function and not annotated as a Tensor: it counts as a
    tensor only as the receiver of a tensor method.
    """

    # -- tensors ------------------------------------------------------------------------------
    @staticmethod
    def weak_names(ctx) -> frozenset[str]:
        fn = ctx.function
        if fn is None:
            return frozenset()
        # a parameter the project model knows to be a tensor (passed one by a compiled caller, or
        # used as one: `lens.any()`) is not weak
        return ctx.memo(("weak-params", id(fn.node)), lambda: _weak_params(fn.node, ctx) - set(fn.tensor_params))

    def strong(self, expr: cst.BaseExpression, ctx) -> bool:
        """True when ``expr`` surely evaluates to a tensor."""
        if isinstance(expr, cst.Name):
            if _is_star_param(expr.value, ctx):
                return False  # `*args` is a tuple: `if args:` tests its length
            if ctx.is_tensor(expr):
                return expr.value not in self.weak_names(ctx)
            return expr.value in self.comprehension_tensors(ctx)
        if isinstance(expr, cst.Attribute):
            base = expr.value
            if isinstance(base, cst.Name) and base.value == "self":
                return ctx.is_tensor(expr) and self._self_attr_is_tensor(expr.attr.value, ctx)
            if expr.attr.value in TENSOR_ATTRS:
                return self.strong(base, ctx)
            return ctx.is_tensor(expr)
        if isinstance(expr, cst.Call):
            func = expr.func
            qual = ctx.qualname(func) or ""
            if qual in BOOL_FROM_VALUES:
                return False
            if not isinstance(func, cst.Attribute) or qual.startswith("torch."):
                return ctx.is_tensor(expr)
            recv = func.value
            if isinstance(recv, cst.Name) and recv.value == "self":
                return ctx.is_tensor(expr)  # self.lin(x): a submodule call
            method = func.attr.value
            if method in BOOL_FROM_VALUES_METHODS or method in NON_TENSOR_METHODS:
                return False
            return self.receiver(recv, method, ctx)
        if isinstance(expr, cst.BinaryOperation):
            return self.strong(expr.left, ctx) or self.strong(expr.right, ctx)
        if isinstance(expr, cst.UnaryOperation):
            return not isinstance(expr.operator, cst.Not) and self.strong(expr.expression, ctx)
        if isinstance(expr, cst.Subscript):
            return self.strong(expr.value, ctx) and ctx.is_tensor(expr)
        if isinstance(expr, cst.IfExp):
            return self.strong(expr.body, ctx) or self.strong(expr.orelse, ctx)
        if isinstance(expr, cst.Comparison):  # `(x > -100)` of a strong tensor: a bool tensor
            return ctx.is_tensor(expr) and (
                self.strong(expr.left, ctx) or any(self.strong(c.comparator, ctx) for c in expr.comparisons))
        return False

    def receiver(self, expr: cst.BaseExpression, method: str, ctx) -> bool:
        """Is ``expr.method(...)`` a tensor method call? A weak name counts only for well-known tensor
        methods (``x.sum()`` only makes sense on a tensor; ``group.get_backend()`` does not say so)."""
        if self.strong(expr, ctx):
            return True
        return method in TENSOR_METHODS and ctx.is_tensor(expr)

    @staticmethod
    def _self_attr_is_tensor(attr: str, ctx) -> bool:
        """``self.x`` set in ``__init__`` from a torch call that returns no tensor (``torch.device``)."""
        cls = ctx.cls or (ctx.function.cls if ctx.function is not None else None)
        if cls is None or attr in cls.params or attr in cls.buffers or attr in cls.submodules:
            return True
        for write in cls.init_writes.get(attr, ()):
            value = write.value
            if value.kind == "call" and value.name:
                qual = through_aliases(value.name, ctx.file.aliases)
                if qual.startswith("torch.") and not torch_call_returns_tensor(qual):
                    return False
        return True

    def comprehension_tensors(self, ctx) -> frozenset[str]:
        """Names bound by enclosing comprehensions that iterate over a tensor (or a split of one)."""
        names: set[str] = set()
        for parent in ctx.iter_parents():
            if isinstance(parent, (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)):
                comp: Optional[cst.CompFor] = parent.for_in
                while comp is not None:
                    if isinstance(comp.target, cst.Name) and _iterates_tensors(comp.iter, ctx):
                        names.add(comp.target.value)
                    comp = comp.inner_for_in
            elif isinstance(parent, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
                break
        return frozenset(names)

    # -- truth values ---------------------------------------------------------------------------
    def value_leaf(self, leaf: cst.BaseExpression, ctx) -> bool:
        """Is the truth of ``leaf`` (one operand whose bool() Python takes) a tensor's value?"""
        if isinstance(leaf, cst.Comparison):
            if any(isinstance(c.operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn)) for c in leaf.comparisons):
                return False
            operands = [leaf.left, *(c.comparator for c in leaf.comparisons)]
            if any(isinstance(o, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)) for o in operands):
                return False  # `device == "cpu"`: a tensor is never compared with a string
            return self.strong(leaf.left, ctx) or any(self.strong(c.comparator, ctx) for c in leaf.comparisons)
        return self.strong(leaf, ctx)

    def value_dependent(self, expr: cst.BaseExpression, ctx, tested: bool = True) -> bool:
        return any(self.value_leaf(leaf, ctx) for leaf in truth_leaves(_traced_part(expr, ctx), tested))

    # -- purity (both branches of a torch.where rewrite are evaluated) ------------------------------
    def pure(self, expr: cst.BaseExpression, ctx) -> bool:
        if isinstance(expr, (cst.Name, cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString)):
            return True
        if isinstance(expr, cst.Attribute):
            return self.pure(expr.value, ctx)
        if isinstance(expr, cst.BinaryOperation):
            return self.pure(expr.left, ctx) and self.pure(expr.right, ctx)
        if isinstance(expr, cst.Comparison):
            return self.pure(expr.left, ctx) and all(self.pure(c.comparator, ctx) for c in expr.comparisons)
        if isinstance(expr, cst.UnaryOperation):
            return not isinstance(expr.operator, cst.Not) and self.pure(expr.expression, ctx)
        if isinstance(expr, cst.Subscript):
            if not self.pure(expr.value, ctx):
                return False
            for element in expr.slice:
                inner = element.slice
                if isinstance(inner, cst.Index):
                    if not self.pure(inner.value, ctx):
                        return False
                elif isinstance(inner, cst.Slice):
                    for part in (inner.lower, inner.upper, inner.step):
                        if part is not None and not self.pure(part, ctx):
                            return False
            return True
        if isinstance(expr, (cst.Tuple, cst.List)):
            return all(self.pure(e.value, ctx) for e in expr.elements)
        if isinstance(expr, cst.Call):
            if not all(self.pure(arg.value, ctx) for arg in expr.args):
                return False
            func = expr.func
            if isinstance(func, cst.Attribute) and not (isinstance(func.value, cst.Name) and func.value.value == "self"):
                method = func.attr.value
                if self.receiver(func.value, method, ctx) and self.pure(func.value, ctx):
                    return not (method.endswith("_") or method in NON_TENSOR_METHODS or method in RANDOM)
            qual = ctx.qualname(func) or ""
            last = qual.rsplit(".", 1)[-1]
            return torch_call_returns_tensor(qual) and not (last.endswith("_") or last in RANDOM)
        return False


def _iterates_tensors(iterable: cst.BaseExpression, ctx) -> bool:
    """Rows of a tensor, or the parts of a split one (``x.unbind(0)``, ``x.chunk(2)``)."""
    if ctx.is_tensor(iterable):
        return True
    facts = ctx.facts()
    return facts is not None and facts.is_sequence(iterable)


def _is_star_param(name: str, ctx) -> bool:
    fn = ctx.function
    star = fn.node.params.star_arg if fn is not None else None
    return isinstance(star, cst.Param) and star.name.value == name


def _traced_part(expr: cst.BaseExpression, ctx) -> cst.BaseExpression:
    """What Dynamo evaluates of ``expr``: an ``and`` chain up to its first operand that is False while
    compiling (transformers' ``not is_torchdynamo_compiling() and t``, ``not is_tracing(m) and t``),
    an ``or`` chain up to its first operand that is True (``is_compiling() or t``). The operands
    after it are never evaluated under compile."""
    if not isinstance(expr, cst.BooleanOperation):
        return expr
    op = type(expr.operator)
    stops = false_while_compiling if op is cst.And else true_while_compiling
    chain = []  # `a and b and c` nests to the left: ((a and b) and c)
    node: cst.BaseExpression = expr
    while isinstance(node, cst.BooleanOperation) and type(node.operator) is op:
        chain.append(node)
        node = node.left
    # each operand with the chain up to and including it
    for operand, prefix in [(node, node)] + [(c.right, c) for c in reversed(chain)]:
        if stops(operand, ctx.qualname):
            return prefix
    return expr


def truth_leaves(expr: cst.BaseExpression, tested: bool) -> list[cst.BaseExpression]:
    """Operands whose truth value Python takes when ``expr`` is evaluated (``tested``: and then its own)."""
    if isinstance(expr, cst.BooleanOperation):
        return truth_leaves(expr.left, True) + truth_leaves(expr.right, tested)
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Not):
        return truth_leaves(expr.expression, True)
    return [expr] if tested else []


def _weak_params(fn: cst.FunctionDef, ctx) -> frozenset[str]:
    """Parameters not annotated as Tensor that no assignment in the body binds to a tensor expression."""
    params = [*fn.params.posonly_params, *fn.params.params, *fn.params.kwonly_params]
    names = {
        p.name.value
        for p in params
        if p.annotation is None or "Tensor" not in expression_code(p.annotation.annotation)
    }
    if not names:
        return frozenset()
    rebound: set[str] = set()

    def bind(target: cst.BaseExpression, value: Optional[cst.BaseExpression]) -> None:
        hit = [n for n in target_names(target) if n in names]
        if not hit:
            return
        if value is None or not isinstance(target, cst.Name) or _mentions_tensor(value, names, ctx):
            rebound.update(hit)

    nodes = function_nodes(fn, (cst.Assign, cst.AugAssign, cst.AnnAssign, cst.NamedExpr, cst.For))
    for node in nodes:
        if isinstance(node, cst.Assign):
            for t in node.targets:
                bind(t.target, node.value)
        elif isinstance(node, cst.For):
            bind(node.target, None)
        else:
            bind(node.target, node.value)
    weak = names - rebound
    return frozenset(weak | _weakly_derived(nodes, weak, set(names), ctx))


def _weakly_derived(nodes, weak: set[str], params: set[str], ctx) -> set[str]:
    """Locals every binding of which only copies, unpacks, indexes or does arithmetic with Python numbers
    or sizes (anything that is no tensor) on weak names (``height, width = input_dimensions``, ``n = num_queries // group_detr``, ``for h, w in
    sizes``): no surer tensors than those (found on transformers 5.24: focalnet, maskformer-swin and
    lw-detr's matcher, whose `input_dimensions` and `group_detr` hold Python ints). A method call
    (``lens.max()``) is not a copy: the receiver rule decides that one."""
    if not weak:
        return set()
    sources: dict[str, list] = {}
    for node in nodes:
        if isinstance(node, cst.Assign):
            pairs = [(t.target, node.value) for t in node.targets]
        elif isinstance(node, cst.For):
            pairs = [(node.target, node.iter)]
        elif isinstance(node, (cst.AnnAssign, cst.NamedExpr)) and node.value is not None:
            pairs = [(node.target, node.value)]
        else:
            pairs = [(node.target, None)]  # `n += ...`: any value
        for target, value in pairs:
            for name in target_names(target):
                sources.setdefault(name, []).append(value)
    derived: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, values in sources.items():
            if name not in derived and name not in params and all(v is not None and _copies(v, weak, derived, ctx) for v in values):
                derived.add(name)
                changed = True
    return derived


def _copies(value, weak: set[str], derived: set[str], ctx) -> bool:
    """Is ``value`` a copy of, index into, or number arithmetic on weak or derived names?
    (Module-level, not a closure: a nested function that calls itself is a reference cycle, which
    kept each file's context and libcst tree alive until the cyclic collector ran.)"""
    if isinstance(value, cst.Name):
        return value.value in weak or value.value in derived
    if isinstance(value, cst.Subscript):
        return _copies(value.value, weak, derived, ctx)
    if isinstance(value, cst.BinaryOperation):  # the other operand a number or a size, no tensor
        left, right = _copies(value.left, weak, derived, ctx), _copies(value.right, weak, derived, ctx)
        return (left or right) and (left or not ctx.is_tensor(value.left)) and (right or not ctx.is_tensor(value.right))
    if isinstance(value, cst.UnaryOperation):
        return _copies(value.expression, weak, derived, ctx)
    return False


def _mentions_tensor(value: cst.BaseExpression, weak: set[str], ctx) -> bool:
    """Does ``value`` compute a tensor without relying on a weak parameter being one?"""
    if isinstance(value, cst.Name):
        return value.value not in weak and ctx.is_tensor(value)
    if isinstance(value, cst.BinaryOperation):
        return _mentions_tensor(value.left, weak, ctx) or _mentions_tensor(value.right, weak, ctx)
    if isinstance(value, cst.Call):
        func = value.func
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value in weak:
            return func.attr.value in TENSOR_METHODS and func.attr.value not in NON_TENSOR_METHODS
    return ctx.is_tensor(value)


