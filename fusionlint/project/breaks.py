"""Which functions surely break the graph, judged on CPython ``ast`` while a file is summarised.

The rules find graph breaks with the tensor facts, one file at a time. What another file needs to
know is coarser: does calling this function break the graph, so that Dynamo runs it as a frame of
its own and resumes its caller in a new frame after the call (FL208)? That is answered here from the
calls that break whatever their arguments are, so no tensor fact is needed: ``print``, ``warnings.warn``,
a logger's methods, ``torch._dynamo.graph_break()``, the sparse constructors, ``.item()``,
``.tolist()``, ``.nonzero()`` (tensor-only methods, flagged unless the value is provably not a tensor:
the README's decision policy), ``int()``/``float()``/``bool()`` of a reduction (``int(index.max())``)
and a branch on one (``if mask.all():``, ``if x.max() > 10:``, ``torch.equal(a, b)``). Calls in statements Dynamo never traces (``if not
torch.compiler.is_compiling():``) do not count. The answer feeds only frame splits, never a finding
of its own; the project model (``fusionlint.project.model``) carries it along the call graph.
"""

from __future__ import annotations

import ast
from typing import Callable, Iterator, Optional

SURE_CALLS = frozenset(
    {"print", "breakpoint", "pdb.set_trace", "warnings.warn", "torch._dynamo.graph_break",
     "torch.sparse_coo_tensor", "torch.sparse_csr_tensor"}
    | {f"logging.{f}" for f in ("debug", "info", "warning", "warn", "error", "exception", "critical", "fatal", "log")}
)
SURE_METHODS = frozenset({"item", "tolist", "nonzero"})
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)

NONE, SOME_PATH, EVERY_CALL = 0, 1, 2


def first_break(every: list[ast.AST], calls: list[ast.Call], tests: list[ast.AST],
                resolve: Callable[[ast.expr], Optional[str]], loggers) -> tuple[int, int]:
    """(NONE / SOME_PATH / EVERY_CALL, the line of the first sure break or 0) for a function:
    ``every``: what every call evaluates (``every_call_nodes``); ``calls`` and ``tests`` (``if``,
    ``while``, ``assert`` statements and conditional expressions): all those of its traced body."""
    line = _first(every, resolve, loggers)
    if line:
        return EVERY_CALL, line
    line = _first([*calls, *tests], resolve, loggers)
    return (SOME_PATH, line) if line else (NONE, 0)


def every_call_nodes(body: list[ast.stmt], skipped: frozenset[int]) -> list[ast.AST]:
    """What every call of the function evaluates, in order (ids in ``skipped``: statements Dynamo
    never traces)."""
    return list(_evaluated_nodes(_every_call(body, skipped)))


def _first(nodes, resolve, loggers) -> int:
    """The smallest line of a sure break among ``nodes`` (0: none)."""
    lines = []
    for n in nodes:
        if isinstance(n, ast.Call) and _breaks(n, resolve, loggers):
            lines.append(n.lineno)
        elif isinstance(n, (ast.If, ast.While, ast.IfExp, ast.Assert)) and _breaking_test(n.test):
            lines.append(n.test.lineno)
    return min(lines, default=0)


def _breaks(call: ast.Call, resolve, loggers) -> bool:
    func = call.func
    qual = resolve(func)
    if qual in SURE_CALLS:
        return True
    if qual in _CONVERSIONS and len(call.args) == 1 and not call.keywords:
        return _reduction(call.args[0])  # `int(index.max())`: PyG's most common break
    if isinstance(func, ast.Attribute):
        if func.attr in SURE_METHODS and not call.args:
            return True
        return isinstance(func.value, ast.Name) and func.value.id in loggers
    return False


def _reduction(node: ast.expr) -> bool:
    """``x.max()``, ``x.sum()``, ``(a == b).all()``, ... plus arithmetic on one: methods no Python
    number, list or string has, whose value depends on the tensor's data."""
    if isinstance(node, ast.BinOp):
        return _reduction(node.left) or _reduction(node.right)
    return (
        isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _REDUCTIONS
        and not isinstance(node.func.value, ast.Constant)
    )


def _breaking_test(test: ast.expr) -> bool:
    """A branch test on a tensor's data: ``if mask.all():``, ``if x.max() > 10:``, ``not x.any()``,
    ``torch.equal(a, b)`` (FL102: Dynamo cannot branch on a tensor's value)."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _breaking_test(test.operand)
    if isinstance(test, ast.BoolOp):
        return _breaking_test(test.values[0])
    if isinstance(test, ast.Compare):
        return not any(isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)) for op in test.ops) and (
            _reduction(test.left) or any(_reduction(c) for c in test.comparators)
        )
    if isinstance(test, ast.Call) and isinstance(test.func, ast.Attribute) and test.func.attr == "equal":
        return isinstance(test.func.value, ast.Name) and test.func.value.id == "torch"
    return _reduction(test)


_CONVERSIONS = frozenset({"int", "float", "bool"})
_REDUCTIONS = frozenset({"max", "min", "sum", "mean", "prod", "any", "all", "argmax", "argmin", "norm", "std", "var"})


def _every_call(body: list[ast.stmt], skipped: frozenset[int]) -> Iterator[ast.AST]:
    """The statements and compound-statement headers every call runs, up to the first ``return``
    or a compound statement holding one (a branch that only raises does not end it)."""
    for stmt in body:
        if isinstance(stmt, _SCOPES) or id(stmt) in skipped:
            continue
        if isinstance(stmt, (ast.If, ast.While)):
            yield stmt  # not expanded: what decides whether its test breaks
            yield stmt.test
        elif isinstance(stmt, (ast.For, ast.AsyncFor)):
            yield stmt.iter
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            yield from (item.context_expr for item in stmt.items)
            yield from _every_call(stmt.body, skipped)
        elif isinstance(stmt, (ast.Try, ast.Match)) or type(stmt).__name__ == "TryStar":
            return
        else:
            yield stmt
            if isinstance(stmt, ast.Return):
                return
            continue
        if any(isinstance(n, ast.Return) for n in _walk(stmt)):
            return


def _walk(node: ast.AST, skipped: frozenset[int] = frozenset()) -> Iterator[ast.AST]:
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, _SCOPES) or id(n) in skipped:
            continue
        yield n
        stack.extend(ast.iter_child_nodes(n))


def _evaluated_nodes(nodes: Iterator[ast.AST]) -> Iterator[ast.AST]:
    """Each node and what evaluating it always evaluates, in order: not the branches of ``a if c else
    b``, the right operand of ``and``/``or``, a comprehension's body or a lambda."""
    for node in nodes:
        stack = [node]
        while stack:
            n = stack.pop()
            if isinstance(n, _SCOPES):
                continue
            yield n
            if isinstance(n, ast.IfExp):
                stack.append(n.test)
            elif isinstance(n, ast.BoolOp):
                stack.append(n.values[0])
            elif isinstance(n, _COMPREHENSIONS):
                stack.append(n.generators[0].iter)
            elif isinstance(n, (ast.stmt,)) and not isinstance(n, (ast.Expr, ast.Assign, ast.AnnAssign, ast.AugAssign,
                                                                   ast.Return, ast.Assert, ast.Raise, ast.Delete)):
                continue  # a compound statement's blocks are not all run (headers come one by one)
            else:
                stack.extend(reversed(list(ast.iter_child_nodes(n))))
