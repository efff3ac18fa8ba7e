"""FL102 data-dependent-control-flow: `if`/`while`/ternary/`and`/`or`/`not` on tensor values in compiled code.

This module also holds the small tensor-judging helpers that FL103, FL104 and FL108 share
(``TensorJudge``, ``autograd_owner``): FL108 reports every breaking construct inside a custom
``torch.autograd.Function`` and the other rules skip those bodies, so one construct gives one finding.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from fusionlint.analysis.tensors import NON_TENSOR_METHODS, TENSOR_ATTRS, torch_call_returns_tensor
from fusionlint.rule import Applicability, Effect, Invalid, Rule

# (report node, message, pending fix or None): what every checker of this family returns.
Found = tuple[cst.CSTNode, str, Optional[object]]

# Calls that turn tensor values into a Python bool by themselves (Dynamo: GB0033 "Data dependent operator").
_BOOL_FROM_VALUES = frozenset({"torch.equal", "torch.allclose", "torch.is_nonzero"})
_BOOL_FROM_VALUES_METHODS = frozenset({"equal", "allclose", "is_nonzero"})
# Calls whose result differs per evaluation: computing both branches would change the output.
_RANDOM = frozenset(
    {
        "rand", "randn", "randint", "rand_like", "randn_like", "randint_like", "randperm", "normal", "bernoulli",
        "multinomial", "poisson", "dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout",
        "feature_alpha_dropout", "rrelu", "gumbel_softmax", "exponential", "geometric", "cauchy", "log_normal",
        "uniform", "random",
    }
)
_TEST_HOLDERS = (cst.If, cst.While, cst.IfExp, cst.CompIf, cst.Assert)
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


def autograd_owner(ctx) -> Optional[str]:
    """``"MyFn.forward"`` inside a custom autograd.Function body (see RuleContext.autograd_function)."""
    return ctx.autograd_function


def torch_alias(ctx) -> Optional[str]:
    return ctx.alias_for("torch")


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

    def __init__(self) -> None:
        self._weak: dict[int, frozenset[str]] = {}

    # -- tensors ------------------------------------------------------------------------------
    def weak_names(self, ctx) -> frozenset[str]:
        fn = ctx.function
        if fn is None:
            return frozenset()
        key = id(fn.node)
        found = self._weak.get(key)
        if found is None:
            found = self._weak[key] = _weak_params(fn.node, ctx)
        return found

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
            if qual in _BOOL_FROM_VALUES:
                return False
            if not isinstance(func, cst.Attribute) or qual.startswith("torch."):
                return ctx.is_tensor(expr)
            recv = func.value
            if isinstance(recv, cst.Name) and recv.value == "self":
                return ctx.is_tensor(expr)  # self.lin(x): a submodule call
            method = func.attr.value
            if method in _BOOL_FROM_VALUES_METHODS or method in NON_TENSOR_METHODS:
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
        for method, stmt in cls.self_attr_writes.get(attr, ()):
            value = getattr(stmt, "value", None)
            if method == "__init__" and isinstance(value, cst.Call):
                qual = ctx.qualname(value.func) or ""
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
                    return not (method.endswith("_") or method in NON_TENSOR_METHODS or method in _RANDOM)
            qual = ctx.qualname(func) or ""
            last = qual.rsplit(".", 1)[-1]
            return torch_call_returns_tensor(qual) and not (last.endswith("_") or last in _RANDOM)
        return False


_BOOL_RESULT = frozenset(
    "any all isnan isinf isfinite isneginf isposinf isreal signbit isclose isin logical_and logical_or logical_not "
    "logical_xor eq ne gt lt ge le greater less greater_equal less_equal not_equal bool".split()
)


def _bool_valued(expr: cst.BaseExpression, ctx) -> bool:
    """Surely a bool tensor: torch.where needs a bool condition where `if` takes any tensor's truth."""
    if isinstance(expr, cst.Comparison):
        return True
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.BitInvert):
        return _bool_valued(expr.expression, ctx)
    if isinstance(expr, cst.Call):
        func = expr.func
        if isinstance(func, cst.Attribute):
            return func.attr.value in _BOOL_RESULT
    return False


def _iterates_tensors(iterable: cst.BaseExpression, ctx) -> bool:
    """Rows of a tensor, or the parts of a split one (``x.unbind(0)``, ``x.chunk(2)``)."""
    if ctx.is_tensor(iterable):
        return True
    facts = ctx.facts()
    return facts is not None and facts.is_sequence(iterable)


_IS_COMPILING = ("is_compiling", "is_dynamo_compiling", "is_torchdynamo_compiling")


def _is_star_param(name: str, ctx) -> bool:
    fn = ctx.function
    star = fn.node.params.star_arg if fn is not None else None
    return isinstance(star, cst.Param) and star.name.value == name


def _traced_part(expr: cst.BaseExpression, ctx) -> cst.BaseExpression:
    """What Dynamo evaluates of ``expr``: in ``not is_compiling() and rest`` nothing after the first
    operand (it is False while compiling), e.g. transformers' ``not is_torchdynamo_compiling() and t``."""
    first = expr
    while isinstance(first, cst.BooleanOperation) and isinstance(first.operator, cst.And):
        first = first.left  # `a and b and c` nests to the left
    if first is not expr and isinstance(first, cst.UnaryOperation) and isinstance(first.operator, cst.Not):
        if _is_compiling_call(first.expression, ctx):
            return first
    return expr


def _is_compiling_call(expr: cst.BaseExpression, ctx) -> bool:
    if not (isinstance(expr, cst.Call) and not expr.args):
        return False
    qual = ctx.qualname(expr.func) or ""
    return qual.rsplit(".", 1)[-1] in _IS_COMPILING


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
        if p.annotation is None or "Tensor" not in cst.Module([]).code_for_node(p.annotation.annotation)
    }
    if not names:
        return frozenset()
    rebound: set[str] = set()

    def bind(target: cst.BaseExpression, value: Optional[cst.BaseExpression]) -> None:
        hit = [n for n in _target_names(target) if n in names]
        if not hit:
            return
        if value is None or not isinstance(target, cst.Name) or _mentions_tensor(value, names, ctx):
            rebound.update(hit)

    class Walker(cst.CSTVisitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return node is fn

        def visit_Assign(self, node: cst.Assign) -> None:
            for t in node.targets:
                bind(t.target, node.value)

        def visit_AugAssign(self, node: cst.AugAssign) -> None:
            bind(node.target, node.value)

        def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
            bind(node.target, node.value)

        def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
            bind(node.target, node.value)

        def visit_For(self, node: cst.For) -> None:
            bind(node.target, None)

    fn.visit(Walker())
    return frozenset(names - rebound)


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


def _target_names(target: cst.BaseExpression) -> list[str]:
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for e in target.elements for n in _target_names(e.value)]
    if isinstance(target, cst.StarredElement):
        return _target_names(target.value)
    return []


def _small_statements(block: cst.BaseSuite) -> Optional[list[cst.BaseSmallStatement]]:
    """The small statements of a one-line block (``IndentedBlock`` holding one simple line, or a suite)."""
    if isinstance(block, cst.SimpleStatementSuite):
        return list(block.body)
    if isinstance(block, cst.IndentedBlock) and len(block.body) == 1:
        line = block.body[0]
        if isinstance(line, cst.SimpleStatementLine) and not line.leading_lines:
            return list(line.body)
    return None


class ControlFlowChecker:
    """Finds value-dependent branching; FL102 reports what it finds outside autograd.Function bodies."""

    def __init__(self) -> None:
        self.judge = TensorJudge()

    def _branch(self, what: str, test: cst.BaseExpression, ctx) -> str:
        return (
            f"{what} on a tensor value (`{short(source(ctx, test))}`): Dynamo cannot pick a branch without the "
            "value: graph break (GB0170) and a host sync"
        )

    # -- tests of compound statements and expressions ---------------------------------------------
    def check_If(self, node: cst.If, ctx) -> list[Found]:
        if not self.judge.value_dependent(node.test, ctx):
            return []
        kind = "`elif`" if isinstance(ctx.parent, cst.If) else "`if`"
        return [(node.test, self._branch(kind, node.test, ctx), self._if_fix(node, ctx))]

    def check_While(self, node: cst.While, ctx) -> list[Found]:
        if not self.judge.value_dependent(node.test, ctx):
            return []
        return [(node.test, self._branch("`while`", node.test, ctx), None)]

    def check_IfExp(self, node: cst.IfExp, ctx) -> list[Found]:
        if not self.judge.value_dependent(node.test, ctx):
            return []
        return [(node.test, self._branch("conditional expression", node.test, ctx), self._ifexp_fix(node, ctx))]

    def check_CompIf(self, node: cst.CompIf, ctx) -> list[Found]:
        if not self.judge.value_dependent(node.test, ctx):
            return []
        return [(node.test, self._branch("comprehension `if`", node.test, ctx), None)]

    def check_Assert(self, node: cst.Assert, ctx) -> list[Found]:
        # Measured on torch 2.13: the truth of an assert's last operand becomes a runtime assert inside
        # the graph (`assert t`, `assert x is not None and t`: no break, no sync). Earlier operands of
        # `and`/`or` and anything under `not` are real branches: `assert t and u`, `assert not t` break.
        test = node.test
        if not self.judge.value_dependent(test, ctx, tested=False):
            return []
        return [
            (
                test,
                f"`assert` takes the truth of a tensor before its last operand (`{short(source(ctx, test))}`): graph "
                "break (GB0170) and a host sync; assert each tensor condition separately (`assert t` stays in the "
                "graph) or combine them with `&`",
                None,
            )
        ]

    # -- `and` / `or` / `not` outside a test ----------------------------------------------------------
    def check_BooleanOperation(self, node: cst.BooleanOperation, ctx) -> list[Found]:
        if not self._standalone(node, ctx):
            return []
        if not self.judge.value_dependent(node, ctx, tested=False):
            return []
        return [
            (
                node,
                f"`and`/`or` takes the truth value of a tensor (`{short(source(ctx, node))}`): graph break (GB0170) "
                "and a host sync; use `&`/`|` or `torch.logical_and`/`torch.logical_or` on bool tensors",
                None,
            )
        ]

    def check_UnaryOperation(self, node: cst.UnaryOperation, ctx) -> list[Found]:
        if not isinstance(node.operator, cst.Not) or not self._standalone(node, ctx):
            return []
        if not self.judge.value_dependent(node, ctx, tested=False):
            return []
        return [
            (
                node,
                f"`not` takes the truth value of a tensor (`{short(source(ctx, node))}`): graph break and a host "
                "sync; use `~t` or `torch.logical_not(t)` on a bool tensor",
                None,
            )
        ]

    @staticmethod
    def _standalone(node: cst.CSTNode, ctx) -> bool:
        """``node`` (an `and`/`or`/`not`) is outermost and not the test of an if/while/assert/ternary."""
        for parent in ctx.iter_parents():
            if isinstance(parent, cst.BooleanOperation) or (
                isinstance(parent, cst.UnaryOperation) and isinstance(parent.operator, cst.Not)
            ):
                return False  # the outermost one decides
            if isinstance(parent, _TEST_HOLDERS) and getattr(parent, "test", None) is node:
                return False
            return True
        return True

    # -- calls that return a bool computed from tensor values --------------------------------------
    def check_Call(self, node: cst.Call, ctx) -> list[Found]:
        func = node.func
        name = None
        if isinstance(func, cst.Attribute) and func.attr.value in _BOOL_FROM_VALUES_METHODS:
            if ctx.qualname(func) in _BOOL_FROM_VALUES:
                name = ctx.qualname(func)
            elif ctx.is_tensor(func.value):
                name = f"Tensor.{func.attr.value}"
        if name is None:
            return []
        return [
            (
                node,
                f"`{name}()` returns a Python bool computed from tensor values: graph break (GB0033) and a host "
                "sync; keep the result a tensor (e.g. `(a == b).all()`, `torch.isclose(a, b).all()`) and select "
                "with `torch.where`",
                None,
            )
        ]

    # -- the unsafe torch.where rewrite ---------------------------------------------------------------
    def _where_parts(self, test, body, orelse, ctx) -> Optional[tuple[str, str, str]]:
        judge = self.judge
        if isinstance(test, cst.BooleanOperation) or (
            isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not)
        ):
            return None  # `a and b` would still take bool(); no faithful elementwise form
        if not judge.value_leaf(test, ctx) or not judge.pure(test, ctx) or not _bool_valued(test, ctx):
            return None
        numbers = (cst.Integer, cst.Float)
        for branch in (body, orelse):
            tensor = ctx.is_tensor(branch) or judge.strong(branch, ctx)
            if not (judge.pure(branch, ctx) and (tensor or isinstance(branch, numbers))):
                return None
        if isinstance(body, numbers) and isinstance(orelse, numbers):
            return None
        return source(ctx, test), source(ctx, body), source(ctx, orelse)

    def _ifexp_fix(self, node: cst.IfExp, ctx):
        torch = torch_alias(ctx)
        parts = self._where_parts(node.test, node.body, node.orelse, ctx) if torch else None
        if parts is None:
            return None
        cond, a, b = parts
        return ctx.fix(
            Applicability.UNSAFE,
            ctx.replace(node, f"{torch}.where({cond}, {a}, {b})"),
            title="Select with `torch.where` (both branches are computed)",
        )

    def _if_fix(self, node: cst.If, ctx):
        torch = torch_alias(ctx)
        if torch is None or not isinstance(node.orelse, cst.Else):
            return None
        if not isinstance(ctx.parent, (cst.IndentedBlock, cst.Module)):
            return None
        body, orelse = _small_statements(node.body), _small_statements(node.orelse.body)
        if not body or not orelse or len(body) != 1 or len(orelse) != 1:
            return None
        if "#" in ctx.code(node):
            return None  # comments would be lost
        first, second = body[0], orelse[0]
        if isinstance(first, cst.Assign) and isinstance(second, cst.Assign):
            if len(first.targets) != 1 or len(second.targets) != 1:
                return None
            t1, t2 = first.targets[0].target, second.targets[0].target
            if not (isinstance(t1, cst.Name) and isinstance(t2, cst.Name) and t1.value == t2.value):
                return None
            head = f"{t1.value} = "
        elif isinstance(first, cst.Return) and isinstance(second, cst.Return):
            if first.value is None or second.value is None:
                return None
            head = "return "
        else:
            return None
        parts = self._where_parts(node.test, first.value, second.value, ctx)
        if parts is None:
            return None
        cond, a, b = parts
        return ctx.fix(
            Applicability.UNSAFE,
            ctx.replace(node, f"{head}{torch}.where({cond}, {a}, {b})"),
            title="Select with `torch.where` (both branches are computed)",
        )


class DataDependentControlFlow(Rule):
    code = "FL102"
    name = "data-dependent-control-flow"
    message = "control flow on a tensor value inside compiled code: graph break and host sync"
    effects = (Effect.GRAPH_BREAK, Effect.HOST_SYNC)
    fix_applicability = Applicability.UNSAFE
    triggers = ("if ", "while ", "assert ", " and ", " or ", "not ", "equal(", "allclose(", "is_nonzero(")
    gb_ids = ("GB0170", "GB0033")
    measured_on = ("torch 2.13.0 CPU", "torch 2.11.0 H200")
    docs = """
## What it does
Flags Python control flow that depends on the *value* of a tensor in code that `torch.compile`
traces: `if`/`elif`/`while` tests, conditional expressions (`a if cond else b`), comprehension
`if` clauses, `and`/`or`/`not` applied to tensors, `assert` tests that take a tensor's truth
before their last operand (`assert t and u`, `assert not t`), and
`torch.equal`/`torch.allclose`/`Tensor.is_nonzero` (they return a Python bool computed from values).
Tests on shapes (`x.shape[0] > 8`, `x.dim()`, `x.size(1)`, `len(x)`, `x.numel()`), `is None`
checks, `self.training`, `isinstance` and dtype/device checks are not flagged. A condition read
through `.item()`/`float()` is FL101's finding; inside a custom `autograd.Function` it is FL108's.

## Why is this bad?
To trace one branch Dynamo needs the tensor's value, which does not exist until the graph so far
has run. It stops the graph, runs it, copies the value to the host and resumes in a new graph.
Measured with torch 2.13.0+cpu (1 thread), one forward after warm-up, each form in a small
function called from `forward` (1 compiled region when the form is absent):

| pattern | graph-break id | compiled regions | `aten::_local_scalar_dense` |
|---|---|---|---|
| `if h.sum() > 0:` | GB0170 | 3 (1 without) | 1 |
| `h * 2 if h.mean() > 0 else h - 1` | GB0170 | 3 | 1 |
| `while (h > 100).any():` | GB0170 | 3 | 1 |
| `if h.max() > 0 and h.min() < 0:` | GB0170 | 4 | 2 |
| `m = (h > 0).any() and (h < 1).all()` | GB0170 | 3 | 1 |
| `if not (h > 0).any():` / `if torch.isnan(h).any():` | GB0170 | 3 | 1 |
| `done = not (h > 0).any()` (outside a test) | GB0033, the function falls back to eager | 1 (helper eager) | 1 |
| `[r for r in h if r.sum() > 0]` | GB0170 | 3 | 4 |
| `assert (h >= 0).all() and h is not None`, `assert t.any() or u.any()`, `assert not t.any()` | GB0170 | 3 | 1 |
| `if torch.equal(h, h.abs()):` | GB0033 | 3 | 0 (`aten::equal`: CPU proxy blind) |
| `if torch.allclose(a, b):` / `if t.is_nonzero():` | GB0033 | 3 / 2 | 1 |

The fixture (`if h.sum() > 0: y = h * 2 else: y = h - 1`, truth case f04) breaks at the `if`
(GB0170) and runs as 2 compiled regions with 1 `aten::_local_scalar_dense` and 3 launches per
forward; the `torch.where` version (what the fix writes) runs as 1 region, 2 launches, no sync. The truth table measured f04 at 4 recompiles
instead of 1 for a second input shape and 1 sync-debug warning per forward on an H200 (torch 2.11).
Not flagged, because measured harmless on 2.13: a plain `assert (x >= 0).all()` and a tensor as the
*last* operand (`assert x is not None and (x >= 0).all()`) are compiled into a runtime assert (1
region, no sync; a failing one raises `RuntimeError` instead of `AssertionError`),
and shape branches (`x.shape[0] > 8`: no break; 1 recompile when the batch crosses the threshold).

## Example
```python
def forward(self, x):
    h = self.lin(x)
    if h.sum() > 0:
        y = h * 2
    else:
        y = h - 1
    return torch.relu(y)
```

## Use instead
```python
def forward(self, x):
    h = self.lin(x)
    y = torch.where(h.sum() > 0, h * 2, h - 1)
    return torch.relu(y)
```
For `and`/`or`/`not` on bool tensors use `&`, `|`, `~`; for `torch.equal(a, b)` use
`(a == b).all()` and keep it a tensor. When the branches really must differ in structure,
`torch.cond` traces both as subgraphs.

## Fix safety
Unsafe, offered for `y = a if cond else b`, for `if cond: y = a / else: y = b` (one assignment to
the same name in each branch) and for `if cond: return a / else: return b`, when the condition is
a single tensor comparison/value and both branches are side-effect-free tensor expressions (torch
functions and non-in-place tensor methods; no submodule calls, no random ops). It changes
behaviour because: both branches are always computed (cost; a NaN/inf in the unused branch still
reaches gradients through `torch.where`); the two branches are broadcast and type-promoted
together; and a multi-element condition, which raises in `if`, selects elementwise.

## PyTorch reference
GB0170 https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0170.html ·
GB0033 https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0033.html
"""
    VALID = [
        # shape, None, training and isinstance checks are not tensor values
        "import torch\nfrom torch import nn\nclass M(nn.Module):\n"
        "    def forward(self, x, mask=None):\n"
        "        if x.shape[0] > 8 and x.dim() == 2:\n            x = x * 2\n"
        "        if mask is not None and self.training:\n            x = x * mask\n"
        "        if isinstance(x, torch.Tensor) and x.size(1) > 3 and len(x) > 1:\n            x = x + 1\n"
        "        while x.numel() > 100:\n            x = x[::2]\n"
        "        return x if x.dtype == torch.float32 else x.float()\n",
        # a plain tensor assert stays in the graph (measured: runtime assert, no break)
        "import torch\nfrom torch import nn\nclass M(nn.Module):\n"
        "    def forward(self, x):\n        assert (x >= 0).all(), 'negative input'\n        return x.sqrt()\n",
        # a tensor as the last operand of an assert is a runtime assert too (measured: no break)
        "import torch\nfrom torch import nn\nclass M(nn.Module):\n"
        "    def forward(self, x, mask=None):\n        assert mask is None or (mask >= 0).all()\n        return x\n",
        # value branching outside compiled code (a training loop) is fine
        "import torch\ndef train_step(model, batch, opt):\n    loss = model(batch).mean()\n"
        "    if loss > 10:\n        print('spike')\n    if torch.isnan(loss):\n        return None\n"
        "    return loss\n",
        # already a torch.where; bool tensors combined with & and ~
        "import torch\nfrom torch import nn\nclass M(nn.Module):\n"
        "    def forward(self, h):\n        keep = (h > 0) & ~torch.isnan(h)\n"
        "        return torch.where(keep, h, torch.zeros_like(h))\n",
        # an int argument and a Python flag are not tensors; .item() is FL101's
        "import torch\nfrom torch import nn\nclass M(nn.Module):\n"
        "    def forward(self, x, steps, use_bias):\n        if use_bias and steps > 2:\n            x = x + 1\n"
        "        if x.sum().item() > 0:\n            x = x * 2\n        return x\n",
        # strings, devices and methods of non-tensor arguments are not tensor values
        "import torch\nfrom torch import nn\nclass M(nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.dev = torch.device('cpu')\n"
        "    def forward(self, x, group, target_device):\n        target_device = _index(target_device)\n"
        "        if target_device == 'cpu' or group.get_backend() != 'gloo':\n            x = x * 2\n"
        "        if x.device != self.dev:\n            x = x.to(self.dev)\n        return x\n",
        # found on transformers 5.24: a KV-cache object annotated as a tensor (`get_seq_length` is no
        # Tensor method), a flag annotated as a tensor with a `False` default, an autocast query
        "import torch\nfrom torch import nn\nclass M(nn.Module):\n"
        "    def forward(self, x, cache: torch.Tensor | None = None, output_attentions: torch.Tensor | None = False):\n"
        "        cache_length = 0 if cache is None else cache.get_seq_length()\n"
        "        if cache_length == 0 and not output_attentions:\n            x = x * 2\n"
        "        fp16 = torch.get_autocast_dtype('cuda') == torch.float16\n"
        "        return x.half() if fp16 and torch.is_autocast_enabled('cuda') else x\n",
        # a check that only runs in eager mode, and the length of *args
        "import torch\nfrom torch import nn\nfrom transformers.utils import is_torchdynamo_compiling\n"
        "class M(nn.Module):\n    def forward(self, x, *args):\n"
        "        if not is_torchdynamo_compiling() and (x < 0).any():\n            raise ValueError('negative')\n"
        "        return args[0] if args else x\n",
        # inside an autograd.Function the finding belongs to FL108
        "import torch\nclass Fn(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, x):\n"
        "        if x.sum() > 0:\n            return x * 2\n        return x\n"
        "    @staticmethod\n    def backward(ctx, g):\n        return g\n",
    ]
    INVALID = [
        Invalid(
            "import torch\nfrom torch import nn\n\n\nclass Model(nn.Module):\n"
            "    def forward(self, h):\n        if h.sum() > 0:\n            y = h * 2\n        else:\n"
            "            y = h - 1\n        return torch.relu(y)\n",
            expected_fix="import torch\nfrom torch import nn\n\n\nclass Model(nn.Module):\n"
            "    def forward(self, h):\n        y = torch.where(h.sum() > 0, h * 2, h - 1)\n        return torch.relu(y)\n",
            line=7,
        ),
        Invalid(
            "import torch as T\nfrom torch import nn\nclass M(nn.Module):\n"
            "    def forward(self, x):\n        return x * 2 if (x.mean() > 0) else x.abs()\n",
            expected_fix="import torch as T\nfrom torch import nn\nclass M(nn.Module):\n"
            "    def forward(self, x):\n        return T.where(x.mean() > 0, x * 2, x.abs())\n",
            line=5,
        ),
        Invalid(
            "import torch\nfrom torch import nn\nclass M(nn.Module):\n"
            "    def forward(self, x):\n        if x.max() > 1.0:\n            return x / x.max()\n"
            "        else:\n            return x\n",
            expected_fix="import torch\nfrom torch import nn\nclass M(nn.Module):\n"
            "    def forward(self, x):\n        return torch.where(x.max() > 1.0, x / x.max(), x)\n",
            line=5,
        ),
        # while + `not` + and: three findings, none fixable
        Invalid(
            "import torch\nfrom torch import nn\nclass M(nn.Module):\n"
            "    def forward(self, h, mask=None):\n"
            "        while (h > 100).any():\n            h = h / 2\n"
            "        if mask is not None and mask.any():\n            h = h * mask\n"
            "        done = not torch.isnan(h).any()\n        return h, done\n",
            line=5,
            count=3,
        ),
        Invalid(
            "import torch\nfrom torch import nn\nclass M(nn.Module):\n"
            "    def forward(self, a, b):\n        if torch.equal(a, b):\n            return a\n        return a + b\n",
            line=5,
            count=1,
        ),
        Invalid(
            "import torch\nfrom torch import nn\nclass M(nn.Module):\n"
            "    def forward(self, x):\n        assert (x >= 0).all() and (x < 10).all()\n"
            "        rows = [r for r in x.unbind(0) if r.sum() > 0]\n        return torch.stack(rows)\n",
            line=5,
            count=2,
        ),
        # in a helper reached from forward
        Invalid(
            "import torch\nfrom torch import nn\nclass M(nn.Module):\n"
            "    def forward(self, x):\n        return self._gate(x)\n"
            "    def _gate(self, x: torch.Tensor):\n        if torch.isnan(x).any():\n"
            "            x = torch.nan_to_num(x)\n        return x\n",
            line=7,
        ),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.checker = ControlFlowChecker()

    def _run(self, method: str, node: cst.CSTNode, ctx) -> None:
        if autograd_owner(ctx) is not None:
            return  # FL108 reports constructs inside autograd.Function bodies
        for at, message, fix in getattr(self.checker, method)(node, ctx):
            ctx.report(at, message, fix=fix)

    def visit_If(self, node: cst.If, ctx) -> None:
        self._run("check_If", node, ctx)

    def visit_While(self, node: cst.While, ctx) -> None:
        self._run("check_While", node, ctx)

    def visit_IfExp(self, node: cst.IfExp, ctx) -> None:
        self._run("check_IfExp", node, ctx)

    def visit_CompIf(self, node: cst.CompIf, ctx) -> None:
        self._run("check_CompIf", node, ctx)

    def visit_Assert(self, node: cst.Assert, ctx) -> None:
        self._run("check_Assert", node, ctx)

    def visit_BooleanOperation(self, node: cst.BooleanOperation, ctx) -> None:
        self._run("check_BooleanOperation", node, ctx)

    def visit_UnaryOperation(self, node: cst.UnaryOperation, ctx) -> None:
        self._run("check_UnaryOperation", node, ctx)

    def visit_Call(self, node: cst.Call, ctx) -> None:
        self._run("check_Call", node, ctx)
