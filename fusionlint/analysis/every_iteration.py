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

from dataclasses import replace
from typing import Iterator, Optional

import libcst as cst

from fusionlint.analysis.conditions import (
    LOOP_SKIPS_FRAME, SPARSE_SKIPS_FRAME, shadowed_condition, states_condition, states_shadow,
)
from fusionlint.analysis.context import LINE_REFS
from fusionlint.analysis.index import FileIndex, FunctionInfo
from fusionlint.analysis.walk import children
from fusionlint.rule import Effect
from fusionlint.semantic.frame_split import after_break, compound_blocks

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
    breaks = frozenset(id(r.node) for r in (*reports, *evidence) if unconditional_break(r))
    if not breaks:
        return reports
    loops = _loops_by_iterable(index)
    facts = BreakFacts(index, breaks)
    dropped: set[int] = set()
    for report in asked:
        found = loops.get(id(report.node))
        if found is not None and facts.loop_breaks(*found):
            dropped.add(id(report))
    return [r for r in reports if id(r) not in dropped] if dropped else reports


def mark_reports_after_frame_ends(reports: list, index: FileIndex, evidence: list = ()) -> list:
    """``reports`` with those that lie after a loop whose every iteration breaks, in the same function,
    saying that their line runs eagerly today (measured on torch 2.13 CPU, PyG's ``EdgePooling`` and
    vit-pytorch's ``NaViT``: Dynamo records the loop's break and none after it in that frame), and
    likewise those after a report that ends its frame (``Report.ends_frame``: a sparse tensor live in a
    resumed frame, PyG's ``ASAPooling``). A function that the skipped frame calls is still compiled as a
    frame of its own: only the breaking function is concerned. ``evidence`` as for
    ``drop_reports_in_breaking_loops``."""
    breaks = frozenset(id(r.node) for r in (*reports, *evidence) if unconditional_break(r))
    if not breaks:
        return reports
    facts = BreakFacts(index, breaks)
    shadow: dict[int, tuple[cst.CSTNode, str]] = {}  # node id -> (the breaking node, why the frame ends there)
    for report in (*reports, *evidence):
        if report.ends_frame and unconditional_break(report):
            for node in _walk(_frame_rest(index, report.node)):
                shadow.setdefault(id(node), (report.node, SPARSE_SKIPS_FRAME))
    for rec in index.records.get("For", ()):
        fn = rec.function
        if fn is None or id(rec.node) in shadow:  # a later loop of a frame already skipped
            continue
        found = facts.first_break(rec.node, fn)
        if found is None:
            continue
        stmt, breaking = found
        after = rec.node.body.body
        region = list(after[after.index(stmt) + 1:]) + (_after(fn.node.body.body, rec.node) or [])
        for node in _walk(region):
            shadow.setdefault(id(node), (breaking, LOOP_SKIPS_FRAME))
    if not shadow:
        return reports
    out = []
    for report in reports:
        found = shadow.get(id(report.node))
        # a message naming other lines gets the breaking line as one more placeholder (filled in order) when
        # each of its placeholders stands for one line
        if (found is None or report.node is found[0] or states_shadow(report.message)
                or report.message.count(LINE_REFS) != len(report.line_refs)):
            out.append(report)
            continue
        breaking, cause = found
        out.append(replace(report, message=report.message + shadowed_condition(LINE_REFS, cause),
                           line_refs=(*report.line_refs, breaking)))
    return out


def _frame_rest(index: FileIndex, node: cst.CSTNode) -> list:
    """What runs after ``node`` up to the end of the function holding it (not in nested scopes), up to
    the first ``return``/``raise`` on that path (PyG's ``cat``: the rest of a branch that returns, not
    what follows the ``if``)."""
    for fn in index.functions.values():
        found = after_break(fn.node, frozenset({id(node)}))
        if found is None:
            continue
        out = []
        for item in found[1]:
            part = item[0] if isinstance(item, tuple) else item
            out.append(part)
            if isinstance(part, _LEAVES) or (
                isinstance(part, cst.SimpleStatementLine) and any(isinstance(s, _LEAVES) for s in part.body)
            ):
                break
        return out
    return []


def _after(statements, target: cst.CSTNode) -> Optional[list]:
    """The statements that run after ``target`` (a statement somewhere in ``statements``) up to the end
    of the function: those after it in its block, then after each enclosing statement."""
    for i, stmt in enumerate(statements):
        if stmt is target:
            return list(statements[i + 1:])
        if isinstance(stmt, (*_NESTED_SCOPES, cst.SimpleStatementLine)):
            continue
        for block in compound_blocks(stmt):
            inner = _after(block.body, target)
            if inner is not None:
                return inner + list(statements[i + 1:])
    return None


def _walk(statements) -> Iterator[cst.CSTNode]:
    """Every node of ``statements``, not inside nested functions, classes or lambdas."""
    stack = list(statements)
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, _NESTED_SCOPES):
            continue
        stack.extend(children(node))


def unconditional_break(report) -> bool:
    """A graph-break report that states no condition for its break."""
    effects = report.effects if report.effects is not None else report.rule.effects
    return Effect.GRAPH_BREAK in effects and not states_condition(report.message)


def _loops_by_iterable(index: FileIndex) -> dict[int, tuple[cst.For, Optional[FunctionInfo]]]:
    out: dict[int, tuple[cst.For, Optional[FunctionInfo]]] = {}
    for rec in index.records.get("For", ()):
        out[id(rec.node.iter)] = (rec.node, rec.function)
    return out


class BreakFacts:
    def __init__(self, index: FileIndex, breaks: frozenset[int]) -> None:
        self.index = index
        self.breaks = breaks
        self.memo: dict[int, bool] = {}

    def loop_breaks(self, loop: cst.For, fn: Optional[FunctionInfo]) -> bool:
        return self._path_breaks(_every_pass(loop.body.body, in_loop=True), fn, 0)

    def first_break(self, loop: cst.For, fn: Optional[FunctionInfo]) -> Optional[tuple[cst.CSTNode, cst.CSTNode]]:
        """(the statement of the loop body, the node in it) where every iteration breaks, or None."""
        for stmt in loop.body.body:
            hit = self._breaking_node(_every_pass([stmt], in_loop=True), fn, 0)
            if hit is not None:
                return stmt, hit
            if not _runs_on(stmt, in_loop=True):
                return None
        return None

    def call_breaks(self, call: cst.Call, fn: Optional[FunctionInfo]) -> bool:
        """Does ``call`` surely run a function of this file that breaks the graph on every call?"""
        callee = self._callee(call, fn)
        return callee is not None and self._function_breaks(callee, 1)

    def _path_breaks(self, nodes: Iterator[cst.CSTNode], fn: Optional[FunctionInfo], depth: int) -> bool:
        return self._breaking_node(nodes, fn, depth) is not None

    def _breaking_node(self, nodes: Iterator[cst.CSTNode], fn: Optional[FunctionInfo], depth: int) -> Optional[cst.CSTNode]:
        for node in nodes:
            for sub in _evaluated(node):
                if id(sub) in self.breaks:
                    return sub
                if isinstance(sub, cst.Call) and depth < _DEPTH:
                    callee = self._callee(sub, fn)
                    if callee is not None and self._function_breaks(callee, depth + 1):
                        return sub
        return None

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


def _runs_on(stmt: cst.CSTNode, in_loop: bool) -> bool:
    """Does ``_every_pass`` go on past ``stmt`` (it cannot leave the block and is a kind it follows)?"""
    if isinstance(stmt, cst.SimpleStatementLine):
        return not any(isinstance(small, _LEAVES) or (in_loop and isinstance(small, _LOOP_EXITS)) for small in stmt.body)
    if not isinstance(stmt, (cst.If, cst.With, *_LOOPS, *_NESTED_SCOPES)):
        return False
    return not _may_leave(stmt, in_loop)


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
