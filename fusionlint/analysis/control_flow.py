"""Python control flow on tensor values: the check FL102 reports in compiled code and FL108 inside
``autograd.Function`` bodies (one construct gives one finding: FL102 skips those bodies).
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from fusionlint.analysis.conditions import config_condition, dtype_condition
from fusionlint.analysis.judge import BOOL_FROM_VALUES, BOOL_FROM_VALUES_METHODS, Found, TensorJudge, short, source
from fusionlint.rule import Applicability

_TEST_HOLDERS = (cst.If, cst.While, cst.IfExp, cst.CompIf, cst.Assert)
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
            "value: graph break (GB0170) and a host sync" + _precondition(test, ctx)
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
        if isinstance(func, cst.Name) and func.value in ("any", "all") and ctx.qualname(func) == func.value:
            return self._python_any(node, func.value, ctx)
        if ctx.qualname(func) == "torch._assert" and node.args and node.args[0].keyword is None:
            cond = node.args[0].value
            if self.judge.strong(cond, ctx) or ctx.is_tensor(cond):
                # measured, torch 2.13 CPU: `torch._assert((x > -100).all(), "bad")` -> GB0033 (a plain `assert`
                # on the same tensor compiles into a runtime assert: no break)
                return [(node, "`torch._assert()` on a tensor condition reads it on the host: graph break (GB0033) "
                               "and a host sync; a plain `assert cond` on the tensor is compiled into a runtime check",
                         None)]
        name = None
        if isinstance(func, cst.Attribute) and func.attr.value in BOOL_FROM_VALUES_METHODS:
            if ctx.qualname(func) in BOOL_FROM_VALUES:
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

    def _python_any(self, node: cst.Call, name: str, ctx) -> list[Found]:
        """Python's ``any``/``all`` over tensors takes ``bool()`` of each item: ``any(t.sum() > 0 for t in
        parts)``, ``all(x.flatten() > 0)`` (the rows of a tensor). Measured, torch 2.13 CPU: GB0170, and
        over a generator the whole function then runs eagerly."""
        if len(node.args) != 1 or node.args[0].keyword is not None or node.args[0].star:
            return []
        arg = node.args[0].value
        items = arg.elt if isinstance(arg, (cst.GeneratorExp, cst.ListComp, cst.SetComp)) else arg
        if not self.judge.strong(items, ctx) and not ctx.is_tensor(items):
            return []
        return [
            (
                node,
                f"Python's `{name}()` over tensor values takes the truth value of each one: graph break (GB0170) and "
                f"a host sync; keep it a tensor (`torch.stack([...]).{name}()`, `(x > 0).{name}()`)",
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
        torch = ctx.alias_for("torch")
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
        torch = ctx.alias_for("torch")
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



def _is_dtype_test(expr: cst.BaseExpression) -> bool:
    """`x.dtype == torch.float16`, `h.dtype in (torch.float16, torch.bfloat16)`, `x.is_floating_point()`..."""
    if isinstance(expr, cst.Comparison):
        operands = [expr.left] + [c.comparator for c in expr.comparisons]
        return any(isinstance(o, cst.Attribute) and o.attr.value == "dtype" for o in operands)
    return False


def _precondition(test: cst.BaseExpression, ctx) -> str:
    """For `x.dtype == torch.float16 and <tensor condition>` or `self.config.kind != "default" and <tensor
    condition>`: Dynamo knows dtypes and reads the configuration while tracing, so the tensor condition (and
    its break) is only reached when the first test holds; say so. (Measured, torch 2.13 CPU: transformers'
    PhimoeRotaryEmbedding breaks at `if self.config.rope_parameters["rope_type"] != "default" and seq_len:`
    with a longrope configuration, not with the default one.)"""
    if not (isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And)):
        return ""
    first = test.left
    while isinstance(first, cst.BooleanOperation) and isinstance(first.operator, cst.And):
        first = first.left
    if _is_dtype_test(first):
        return dtype_condition(short(source(ctx, first)))
    if _is_config_test(first) and not ctx.is_tensor(first):
        return config_condition(short(source(ctx, first)))
    return ""


def _is_config_test(expr: cst.BaseExpression) -> bool:
    """`self.config.x`, `not config.flag`, `self.config.params["kind"] != "default"`: a test of a
    configuration object's fields against constants."""
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Not):
        return _is_config_test(expr.expression)
    if isinstance(expr, cst.Comparison):
        operands = [expr.left, *(c.comparator for c in expr.comparisons)]
        return any(_config_field(o) for o in operands) and all(_config_field(o) or _constant(o) for o in operands)
    return _config_field(expr)


def _config_field(expr: cst.BaseExpression) -> bool:
    """An attribute/constant-subscript chain through a `config` attribute (`self.config.a["b"]`) or rooted
    at a name `config`."""
    through_config = False
    while True:
        if isinstance(expr, cst.Attribute):
            through_config = through_config or expr.attr.value == "config"
            expr = expr.value
        elif isinstance(expr, cst.Subscript):
            if not all(isinstance(e.slice, cst.Index) and _constant(e.slice.value) for e in expr.slice):
                return False
            expr = expr.value
        else:
            return isinstance(expr, cst.Name) and (through_config or expr.value == "config")


def _constant(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, (cst.SimpleString, cst.ConcatenatedString, cst.Integer, cst.Float)):
        return True
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        return _constant(expr.expression)
    return isinstance(expr, cst.Name) and expr.value in ("None", "True", "False")
