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
from typing import Callable, Optional


# the sparse constructors Dynamo skips (measured, torch 2.13 CPU: GB0007); a sparse tensor one of them made
# cannot be an input of the frame Dynamo resumes in after that break (GB0015)
SPARSE_CONSTRUCTORS = frozenset({"torch.sparse_coo_tensor", "torch.sparse_csr_tensor"})
SURE_CALLS = frozenset(
    {"print", "breakpoint", "pdb.set_trace", "warnings.warn", "torch._dynamo.graph_break"}
    | SPARSE_CONSTRUCTORS
    | {f"logging.{f}" for f in ("debug", "info", "warning", "warn", "error", "exception", "critical", "fatal", "log")}
)
SURE_METHODS = frozenset({"item", "tolist", "nonzero"})
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)

NONE, SOME_PATH, EVERY_CALL = 0, 1, 2


def first_break(every: frozenset[int], calls: list[ast.Call], tests: list[ast.AST], spans: list[tuple[int, int]],
                resolve: Callable[[ast.expr], Optional[str]], loggers,
                tensor_local: Optional[Callable[[str], bool]] = None) -> tuple[int, int]:
    """(NONE / SOME_PATH / EVERY_CALL, the line of the first sure break or 0) for a function: ``calls``
    and ``tests`` (``if``, ``while``, ``assert`` statements and conditional expressions; an ``assert``
    never counts: ``_branches``) of its traced body, ``every`` the ids of the calls every call of the function makes, ``spans`` its every-call
    lines (``every_call_spans``); ``tensor_local(name)``: the local is a tensor on every binding
    (``p = torch.rand([])``, so ``if p < self.layerdrop:`` branches on its value)."""
    breaking = [c.lineno for c in calls if _breaks(c, resolve, loggers)]
    tested = [t.test.lineno for t in tests if _branches(t) and _breaking_test(t.test, tensor_local)]
    if not breaking and not tested:
        return NONE, 0
    sure = [c.lineno for c in calls if id(c) in every and _breaks(c, resolve, loggers)]
    sure += [line for line in tested if on_spans(line, spans)]
    if sure:
        return EVERY_CALL, min(sure)
    return SOME_PATH, min(breaking + tested)


def break_conditions(calls: list[ast.Call], tests: list[ast.AST], conds: dict[int, tuple],
                     resolve: Callable[[ast.expr], Optional[str]], loggers,
                     tensor_local: Optional[Callable[[str], bool]] = None) -> tuple:
    """For a function that breaks on some path only: the branch tests around each call that breaks
    (``conds``: ``summary._branch_conditions``), when every break is such a call inside a branch
    testing a parameter (``if ddp_cache_data is not None: ... .item()``); () when one is not, or a
    test breaks. A compiled caller whose constants rule out every branch reaches no break."""
    if any(_branches(t) and _breaking_test(t.test, tensor_local) for t in tests):
        return ()
    out = []
    for call in calls:
        if _breaks(call, resolve, loggers):
            around = conds.get(id(call))
            if not around:
                return ()
            out.append(around)
    return tuple(out)


def every_call_spans(body: list[ast.stmt], skipped: frozenset[int], return_lines: list[int]) -> list[tuple[int, int]]:
    """The line spans every call of the function runs (ids in ``skipped``: statements Dynamo never
    traces; ``return_lines``: the lines of the function's own ``return`` statements): its statements
    up to the first ``return`` or a compound statement holding one, of a compound statement only its
    header (an ``if`` test, a loop's iterable; a ``with`` statement's items and body), a branch that
    only raises not counted as an exit. By lines, not nodes (a second walk of every body cost a fifth
    of the summaries): a conditional expression's arms and a comprehension's body on such a line count
    as run."""
    spans: list[tuple[int, int]] = []
    _spans(body, skipped, return_lines, spans)
    return spans


def _spans(body, skipped, return_lines, out: list) -> bool:
    """Append the spans of ``body`` to ``out``; False once a statement may leave the function."""
    for stmt in body:
        if isinstance(stmt, _SCOPES) or id(stmt) in skipped:
            continue
        if isinstance(stmt, (ast.If, ast.While)):
            out.append(_span(stmt.test))
        elif isinstance(stmt, (ast.For, ast.AsyncFor)):
            out.append(_span(stmt.iter))
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            out.extend(_span(item.context_expr) for item in stmt.items)
            if not _spans(stmt.body, skipped, return_lines, out):
                return False
        elif isinstance(stmt, (ast.Try, ast.Match)) or type(stmt).__name__ == "TryStar":
            return False
        else:
            out.append(_span(stmt))
            if isinstance(stmt, ast.Return):
                return False
            continue
        end = stmt.end_lineno or stmt.lineno
        if any(stmt.lineno <= line <= end for line in return_lines):  # it holds a `return`
            return False
    return True


def _span(node: ast.AST) -> tuple[int, int]:
    return node.lineno, node.end_lineno or node.lineno


def on_spans(line: int, spans: list[tuple[int, int]]) -> bool:
    return any(a <= line <= b for a, b in spans)


def _breaks(call: ast.Call, resolve, loggers) -> bool:
    func = call.func
    last = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
    if last is None or (last not in _LAST_NAMES and not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
                                                         and func.value.id in loggers)):
        return False  # most calls: no name of the tables (resolving every call's name cost a tenth of a summary)
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


def reads_tensor_value(call: ast.Call) -> bool:
    """``x.item()``, ``x.tolist()``, ``int()``/``float()``/``bool()`` of a reduction (``int(index.max())``): a
    break whose result is a Python value read from a tensor's data (as written, not through imports:
    a summary judges every call argument with it)."""
    func = call.func
    if isinstance(func, ast.Attribute):
        return func.attr in ("item", "tolist") and not call.args and not call.keywords
    return (
        isinstance(func, ast.Name) and func.id in ("int", "float", "bool") and len(call.args) == 1
        and not call.keywords and _reduction(call.args[0])
    )


def _reduction(node: ast.expr) -> bool:
    """``x.max()``, ``x.sum()``, ``(a == b).all()``, ... plus arithmetic on one: methods no Python
    number, list or string has, whose value depends on the tensor's data."""
    if isinstance(node, ast.BinOp):
        return _reduction(node.left) or _reduction(node.right)
    return (
        isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _REDUCTIONS
        and not isinstance(node.func.value, ast.Constant)
    )


def _branches(test_holder: ast.AST) -> bool:
    """An ``if``, ``while`` or conditional expression, not an ``assert``: Dynamo turns an assert on a
    tensor into a runtime check (measured, torch 2.13 CPU: ``assert x.abs().max() < 100`` and ``p =
    torch.rand([])``, ``assert p < 2.0`` give no graph break)."""
    return not isinstance(test_holder, ast.Assert)


def _breaking_test(test: ast.expr, tensor_local: Optional[Callable[[str], bool]] = None) -> bool:
    """A branch test on a tensor's data: ``if mask.all():``, ``if x.max() > 10:``, ``not x.any()``,
    ``torch.equal(a, b)``, a comparison of a local that is surely a tensor (m2m_100's ``p =
    torch.rand([])`` ... ``if p < self.layerdrop:``) (FL102: Dynamo cannot branch on a tensor's value)."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _breaking_test(test.operand, tensor_local)
    if isinstance(test, ast.BoolOp):
        return _breaking_test(test.values[0], tensor_local)
    if isinstance(test, ast.Compare):
        if any(isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)) for op in test.ops):
            return False
        operands = (test.left, *test.comparators)
        return any(_reduction(o) for o in operands) or (
            tensor_local is not None and any(isinstance(o, ast.Name) and tensor_local(o.id) for o in operands)
        )
    if isinstance(test, ast.Call) and isinstance(test.func, ast.Attribute) and test.func.attr == "equal":
        return isinstance(test.func.value, ast.Name) and test.func.value.id == "torch"
    return _reduction(test)


_CONVERSIONS = frozenset({"int", "float", "bool"})
# the last names of everything above: what a call must end with to be looked at further
_LAST_NAMES = frozenset({q.rsplit(".", 1)[-1] for q in SURE_CALLS} | SURE_METHODS | _CONVERSIONS)
_REDUCTIONS = frozenset({"max", "min", "sum", "mean", "prod", "any", "all", "argmax", "argmin", "norm", "std", "var"})


