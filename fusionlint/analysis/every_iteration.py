"""Loops whose every iteration breaks the graph, and the findings that cannot happen in them.

Measured with torch 2.13 (CPU, backend ``eager``; ``tests/test_every_iteration.py``): when Dynamo meets a
graph break inside a ``for`` loop it gives up on the whole frame and runs it eagerly ("graph break in
loop"), so the loop is never unrolled and its trip count never becomes a guard. A finding that claims
the unrolling's cost (FL204: "every new size recompiles") is then not real: what the code costs is the
eager frame, which the breaking line's own finding reports. This holds when the break is on the path
that every iteration runs: a statement of the loop body before anything that can leave it early, or a
call there to a function of the same file whose own every-call path breaks (the omdet-turbo form: the
loop's first statement calls a helper that calls ``.tolist()`` on a boolean-mask index).

Only same-file callees are followed, so the answer depends on nothing outside the file (the cache's key
and the editor's per-group memo need no cross-file fact). A break that a finding states a condition for
("when `x.dtype == torch.float16` holds", "once `n` is a dynamic size") does not count: in other runs
the loop is traced and unrolled.
"""

from __future__ import annotations

from typing import Iterator, Optional

import libcst as cst

from fusionlint.analysis.conditions import states_condition
from fusionlint.analysis.index import FileIndex, FunctionInfo
from fusionlint.analysis.walk import children
from fusionlint.rule import Effect

_LEAVES = (cst.Return, cst.Raise)
_LOOP_EXITS = (cst.Break, cst.Continue)
_NESTED_SCOPES = (cst.FunctionDef, cst.ClassDef, cst.Lambda)
_LOOPS = (cst.For, cst.While)
_COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)
_DEPTH = 6  # same-file calls followed, at most


def drop_reports_in_breaking_loops(reports: list, index: FileIndex, evidence: list = ()) -> list:
    """``reports`` without those of rules marked ``void_in_breaking_loop`` whose loop breaks on every
    iteration (the report's node is the loop's iterable). ``evidence``: reports of graph-break rules
    that were run only to tell this, never shown."""
    asked = [r for r in reports if r.rule.void_in_breaking_loop]
    if not asked:
        return reports
    breaks = frozenset(id(r.node) for r in (*reports, *evidence) if _unconditional_break(r))
    if not breaks:
        return reports
    loops = _loops_by_iterable(index)
    facts = _BreakFacts(index, breaks)
    dropped: set[int] = set()
    for report in asked:
        found = loops.get(id(report.node))
        if found is not None and facts.loop_breaks(*found):
            dropped.add(id(report))
    return [r for r in reports if id(r) not in dropped] if dropped else reports


def _unconditional_break(report) -> bool:
    effects = report.effects if report.effects is not None else report.rule.effects
    return Effect.GRAPH_BREAK in effects and not states_condition(report.message)


def _loops_by_iterable(index: FileIndex) -> dict[int, tuple[cst.For, Optional[FunctionInfo]]]:
    out: dict[int, tuple[cst.For, Optional[FunctionInfo]]] = {}
    for rec in index.records.get("For", ()):
        out[id(rec.node.iter)] = (rec.node, rec.function)
    return out


class _BreakFacts:
    def __init__(self, index: FileIndex, breaks: frozenset[int]) -> None:
        self.index = index
        self.breaks = breaks
        self.memo: dict[int, bool] = {}

    def loop_breaks(self, loop: cst.For, fn: Optional[FunctionInfo]) -> bool:
        return self._path_breaks(_every_pass(loop.body.body, in_loop=True), fn, 0)

    def _path_breaks(self, nodes: Iterator[cst.CSTNode], fn: Optional[FunctionInfo], depth: int) -> bool:
        for node in nodes:
            for sub in _evaluated(node):
                if id(sub) in self.breaks:
                    return True
                if isinstance(sub, cst.Call) and depth < _DEPTH:
                    callee = self._callee(sub, fn)
                    if callee is not None and self._function_breaks(callee, depth + 1):
                        return True
        return False

    def _function_breaks(self, fn: FunctionInfo, depth: int) -> bool:
        key = id(fn.node)
        if key not in self.memo:
            self.memo[key] = False  # a recursive call does not make itself break
            self.memo[key] = self._path_breaks(_every_pass(fn.node.body.body, in_loop=False), fn, depth)
        return self.memo[key]

    def _callee(self, call: cst.Call, fn: Optional[FunctionInfo]) -> Optional[FunctionInfo]:
        """The same-file function ``call`` surely runs: ``self.m(...)``/``cls.m(...)`` of the caller's
        class, ``Class.m(...)`` of a class of this file, or a module-level ``f(...)``."""
        func = call.func
        if isinstance(func, cst.Name):
            found = self.index.functions.get(func.value)
            return found if found is not None and found.parent is None and found.cls is None else None
        if not (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name)):
            return None
        owner = func.value.value
        if owner in ("self", "cls"):
            cls = fn.cls if fn is not None else None
        else:
            cls = self.index.classes.get(owner)
        if cls is None:
            return None
        return cls.methods.get(func.attr.value)


def _every_pass(statements, *, in_loop: bool) -> Iterator[cst.CSTNode]:
    """The parts of a block that run every time the block runs, in order: every small statement and
    compound-statement header up to and including the first statement that can leave the block early
    (``return``/``raise``, and in a loop body ``break``/``continue`` of this loop)."""
    for stmt in statements:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                yield small
                if isinstance(small, _LEAVES) or (in_loop and isinstance(small, _LOOP_EXITS)):
                    return
            continue
        if isinstance(stmt, cst.If):
            yield stmt.test
        elif isinstance(stmt, cst.With):
            yield from stmt.items
            inner = list(_every_pass(stmt.body.body, in_loop=in_loop))
            yield from inner
        elif isinstance(stmt, _LOOPS):
            yield stmt.iter if isinstance(stmt, cst.For) else stmt.test
        elif isinstance(stmt, _NESTED_SCOPES):
            pass  # defining runs; the body does not
        else:
            return  # try, match, ...: not followed
        if _may_leave(stmt, in_loop):
            return


def _may_leave(node: cst.CSTNode, in_loop: bool) -> bool:
    """Does ``node`` hold a ``return``/``raise`` (or, for our loop, a ``break``/``continue`` outside a
    nested loop)?"""
    stack = [(node, in_loop)]
    while stack:
        current, loop_exit_counts = stack.pop()
        if isinstance(current, _LEAVES) or (loop_exit_counts and isinstance(current, _LOOP_EXITS)):
            return True
        if isinstance(current, _NESTED_SCOPES):
            continue
        nested_loop = isinstance(current, _LOOPS) and current is not node
        for child in children(current):
            stack.append((child, loop_exit_counts and not nested_loop))
    return False


def _evaluated(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """``node`` and what evaluating it always evaluates: not the branches of a conditional expression,
    the right operand of ``and``/``or``, comprehension bodies or lambdas (each may run zero times)."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        if isinstance(current, cst.IfExp):
            stack.append(current.test)
        elif isinstance(current, cst.BooleanOperation):
            stack.append(current.left)
        elif isinstance(current, _COMPREHENSIONS):
            stack.append(current.for_in.iter)
        elif isinstance(current, _NESTED_SCOPES):
            continue
        else:
            stack.extend(reversed(children(current)))
