"""CPython's parser as the gate before libcst: syntax errors, nesting depth and size limits.

libcst's tree costs far more than CPython's (a 1 MB one-line list: 25 s and 1.37 GB with libcst,
1.7 s and 0.34 GB with ``ast``), and libcst code generation, position metadata and our own
analysis recurse once or twice per level of nesting, so a deep but valid expression
(``x[0][0]...`` 1,000 times) ran out of Python stack. CPython's parser is the cheaper judge: it
rejects invalid files (including 200+ nested brackets) before libcst sees them, and its tree tells
how deep and how big the file is, so a file beyond what the analysis can handle becomes that
file's error instead of a traceback or gigabytes of memory.
"""

from __future__ import annotations

import ast

from fusionlint import pyast
from fusionlint.pyast import NOT_CHILDREN
import re
from dataclasses import dataclass
from typing import Optional

from fusionlint.outline import Outline, outline_of

# Deepest nesting of the CPython syntax tree that fusionlint analyses. Real code stays far below
# it: the deepest of the 3,216 files of timm 1.0.31 + transformers 5.24.0 nests 28 levels, the
# deepest fixture or example 12, fusionlint's own sources 18 (measured with ``tree_shape``).
# libcst has up to two nodes per CPython node (``[[x]]`` is List > Element > List) and its code
# generation takes two Python frames per node, so 100 levels need ~400 of the interpreter's
# 1,000 frames, which leaves room for the caller's (pytest, pre-commit) own stack.
MAX_DEPTH = 100
# Most syntax nodes analysed in one file. libcst needs ~4 KB per node (a one-line list of 333,000
# ints: 1.37 GB), so this keeps one file's tree under ~0.8 GB. The largest file of timm +
# transformers has 20,330 nodes.
MAX_NODES = 200_000

# Fields of CPython's AST classes that never hold a child worth walking: names, flags, and the
# shared Load/Store and operator singletons (leaves). Skipping them per type made the walk ~40%
# faster on transformers.
_NOT_CHILDREN = NOT_CHILDREN
_CHILD_FIELDS: dict[type, tuple[str, ...]] = {}


@dataclass(frozen=True)
class TreeShape:
    depth: int  # nodes on the longest root-to-leaf path (the module is depth 1)
    nodes: int


@dataclass(frozen=True)
class Rejection:
    """Why a file is not handed to libcst; ``line``/``column`` are 1-based when known."""

    message: str
    line: Optional[int] = None
    column: Optional[int] = None


def tree_shape(tree: ast.AST, *, stop_nodes: Optional[int] = None) -> tuple[TreeShape, ast.AST]:
    """Depth and node count of ``tree``, walked iteratively (no recursion limit), and its deepest
    node. Stops once more than ``stop_nodes`` nodes were seen (the counts are then lower bounds)."""
    stack: list[tuple[ast.AST, int]] = [(tree, 1)]
    pop, push = stack.pop, stack.append
    deepest, deepest_node, nodes = 0, tree, 0
    node_type, child_fields = ast.AST, _CHILD_FIELDS
    while stack:
        node, depth = pop()
        nodes += 1
        if depth > deepest:
            deepest, deepest_node = depth, node
        if stop_nodes is not None and nodes > stop_nodes:
            break
        kind = type(node)
        fields = child_fields.get(kind)
        if fields is None:
            fields = child_fields[kind] = tuple(f for f in kind._fields if f not in _NOT_CHILDREN)
        below = depth + 1
        for name in fields:
            value = getattr(node, name, None)
            if type(value) is list:
                for item in value:
                    if isinstance(item, node_type):
                        push((item, below))
            elif isinstance(value, node_type):
                push((value, below))
    return TreeShape(deepest, nodes), deepest_node


def _parse(source: str, path: str) -> "ast.Module | Rejection":
    try:
        return pyast.parse(source, path)
    except SyntaxError as exc:  # also "too many nested parentheses" (200) and "too many indentation levels"
        return Rejection(f"syntax error: {exc.msg}", exc.lineno or 1, exc.offset or 1)
    except RecursionError:  # CPython's parser has its own guard against deep nesting
        return Rejection(f"too deeply nested to analyse (CPython's parser gave up; limit {MAX_DEPTH})")
    except MemoryError:  # CPython 3.11's parser also says this when its stack overflows (deep blocks + brackets)
        return Rejection("too deeply nested or too large for CPython's parser (MemoryError)")
    except ValueError as exc:  # e.g. "source code string cannot contain null bytes"
        return Rejection(f"cannot parse: {exc}")


def syntax_error(source: str, path: str) -> Optional[Rejection]:
    """CPython's verdict alone (for files no rule needs parsed): None when it parses."""
    parsed = _parse(source, path)
    return parsed if isinstance(parsed, Rejection) else None


def check_source(source: str, path: str, *, max_depth: int = MAX_DEPTH, max_nodes: int = MAX_NODES) -> Optional[Rejection]:
    """None when libcst may parse ``source``; else why not (syntax error, too deep, too big)."""
    tree = _parse(source, path)
    if isinstance(tree, Rejection):
        return tree
    shape, deepest = tree_shape(tree, stop_nodes=max_nodes)
    if shape.nodes > max_nodes:
        return Rejection(f"too large to analyse (more than {max_nodes:,} syntax nodes, the limit)")
    if shape.depth > max_depth:
        line, column = _position(source, getattr(deepest, "lineno", None), getattr(deepest, "col_offset", None))
        return Rejection(f"too deeply nested to analyse (depth {shape.depth}, limit {max_depth})", line, column)
    return None


def check_outline(source: str, path: str) -> "Outline | Rejection":
    """``check_source``, giving the file's outline (``fusionlint.outline``) when it passes."""
    found = parse_outline(source, path)
    return found if isinstance(found, Rejection) else found[0]


def parse_outline(source: str, path: str) -> "tuple[Outline, ast.Module] | Rejection":
    """``check_outline`` and the CPython tree it read (the sparse plan reads the same tree)."""
    tree = _parse(source, path)
    if isinstance(tree, Rejection):
        return tree
    outline = judge_outline(outline_of(tree, source, MAX_NODES), source)
    return outline if isinstance(outline, Rejection) else (outline, tree)


def judge_outline(outline: Outline, source: str, *, max_depth: int = MAX_DEPTH, max_nodes: int = MAX_NODES) -> "Outline | Rejection":
    """The outline of a file CPython parsed, or why libcst may not have it (too deep, too big)."""
    if outline.nodes > max_nodes:
        return Rejection(f"too large to analyse (more than {max_nodes:,} syntax nodes, the limit)")
    if outline.depth > max_depth:
        line, column = _position(source, *outline.deepest)
        return Rejection(f"too deeply nested to analyse (depth {outline.depth}, limit {max_depth})", line, column)
    return outline


def _position(source: str, line: Optional[int], offset: Optional[int]) -> tuple[Optional[int], Optional[int]]:
    """1-based line and code-point column of a node at ``line``/``offset`` (``ast`` counts columns in UTF-8 bytes)."""
    if line is None or offset is None:
        return line, None
    lines = _LINE_BREAK.split(source, maxsplit=line)
    text = lines[line - 1] if line - 1 < len(lines) else ""
    return line, len(text.encode("utf-8")[:offset].decode("utf-8", "replace")) + 1


# The line breaks CPython's tokenizer counts (not str.splitlines, which also splits at \x0c etc.).
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
