"""What the engine needs to know about a file's CPython tree before it hands the file to libcst:
its size and depth (``fusionlint.precheck``'s limits), its top-level definitions and libcst's
default indentation (``fusionlint.sparse``).

Taken from the tree the project model already parses (``fusionlint.project.summary``), so the
engine does not parse the file with CPython a second time; a file the model has no summary for
(it did not parse) is parsed by the engine as before, which reports why.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Optional

from fusionlint.lines import line_starts
from fusionlint.pickling import by_fields


# Outlines are kept for every file of the run: line numbers above 256 are a new int object each (32
# bytes), so each distinct one is kept once.
_LINES: dict[int, int] = {}


@by_fields
@dataclass(frozen=True, slots=True)  # kept for every file of the run: no __dict__ each
class Unit:
    """A top-level ``def``/``class``, decorators included."""

    name: str
    start: int  # first line, 1-based
    end: int  # last line


@by_fields
@dataclass(frozen=True, slots=True)
class Outline:
    depth: int  # as fusionlint.precheck.TreeShape
    nodes: int  # counted up to one past the node limit
    deepest: tuple[Optional[int], Optional[int]]  # (line, UTF-8 byte column) of the deepest node
    units: tuple[Unit, ...]
    default_indent: Optional[str]  # the indentation libcst will take as the module's default (None: unknown)


def outline_of(tree: ast.Module, source: str, max_nodes: int, shapes: Optional[dict] = None) -> Outline:
    """``shapes``: the shape of each top-level statement, from an earlier outline of the same file,
    updated in place (an editor's outline on every keystroke re-walks only the changed statements)."""
    from fusionlint.precheck import TreeShape, tree_shape  # (precheck builds on this module)

    starts = line_starts(source)
    found = _shape_by_statement(tree, source, starts, max_nodes, shapes) if shapes is not None else None
    if found is None:
        shape, deepest = tree_shape(tree, stop_nodes=max_nodes)
        where = (getattr(deepest, "lineno", None), getattr(deepest, "col_offset", None))
    else:
        depth, nodes, where = found
        shape = TreeShape(depth, nodes)
    units = []
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            first = min([stmt.lineno, *(d.lineno for d in stmt.decorator_list)])
            end = stmt.end_lineno if stmt.end_lineno is not None else stmt.lineno
            units.append(Unit(stmt.name, _LINES.setdefault(first, first), _LINES.setdefault(end, end)))
    return Outline(shape.depth, shape.nodes, where, tuple(units), first_indent(tree.body, source, starts))


def _shape_by_statement(tree: ast.Module, source: str, starts: list[int], max_nodes: int, shapes: dict):
    """(depth, nodes, deepest node's place) as ``tree_shape`` gives them for the whole module, from
    each top-level statement's own walk (kept in ``shapes`` under its lines' text and place); None
    when the whole walk must decide (a file over the node limit, type-ignore comments)."""
    from fusionlint.precheck import tree_shape

    if tree.type_ignores:
        return None
    fresh: dict = {}
    depth, nodes, where = 1, 1, (None, None)
    for stmt in reversed(tree.body):  # tree_shape's stack visits the last statement first
        first, last = stmt.lineno, stmt.end_lineno or stmt.lineno
        key = (source[starts[first - 1] : starts[last] if last < len(starts) else len(source)], first, stmt.col_offset,
               stmt.end_col_offset)
        known = shapes.get(key)
        if known is None:
            shape, deepest = tree_shape(stmt, stop_nodes=max_nodes)
            known = (shape.depth + 1, shape.nodes, (getattr(deepest, "lineno", None), getattr(deepest, "col_offset", None)))
        fresh[key] = known
        if known[0] > depth:  # the first statement visited that reaches a depth keeps it (strictly deeper wins)
            depth, where = known[0], known[2]
        nodes += known[1]
        if nodes > max_nodes:
            return None
    shapes.clear()
    shapes.update(fresh)
    return depth, nodes, where


def first_indent(body: list[ast.stmt], source: str, starts: list[int]) -> Optional[str]:
    """The indentation libcst takes as the module's default: that of the first statement that
    starts an indented line (where the tokenizer's first INDENT is), "    " when there is none;
    None when a ``match`` comes first (libcst then takes a case body's, not the case's)."""
    try:
        found = _first_indented(body, source, starts)
    except _Unknown:
        return None
    return found if found is not None else "    "


class _Unknown(Exception):
    pass


_MATCH = getattr(ast, "Match", ())


def _blocks(stmt: ast.stmt) -> list[list[ast.stmt]]:
    """The statement lists of a compound statement, in source order."""
    out: list[list[ast.stmt]] = []
    body = getattr(stmt, "body", None)
    if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
        out.append(body)
    out.extend(h.body for h in getattr(stmt, "handlers", ()))
    out.extend(case.body for case in getattr(stmt, "cases", ()))
    for name in ("orelse", "finalbody"):
        block = getattr(stmt, name, None)
        if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
            out.append(block)
    return out


def _first_indented(body: list[ast.stmt], source: str, starts: list[int]) -> Optional[str]:
    for stmt in body:
        if isinstance(stmt, _MATCH):
            raise _Unknown
        if stmt.col_offset > 0:
            line_start = starts[stmt.lineno - 1]
            prefix = source[line_start : line_start + stmt.col_offset]
            if prefix and not prefix.strip(" \t\f"):
                return prefix
        for block in _blocks(stmt):
            found = _first_indented(block, source, starts)
            if found is not None:
                return found
    return None
