"""A fast, read-only walk over a libcst tree.

``node.visit(visitor)`` rebuilds every node it passes (``_visit_and_replace_children`` runs each
node's validation again), which made a traversal cost about three times the parse itself. Rules
only read the tree, so we walk the dataclass fields directly and skip the whitespace, comment and
punctuation fields that can never hold code.
"""

from __future__ import annotations

import dataclasses
from typing import Iterable, Iterator, Optional

import libcst as cst

# Fields that hold only formatting: whitespace, parentheses, commas, comments, blank lines, and
# operator tokens (rules read `node.operator` directly; it never contains code).
_FORMATTING_PREFIXES = ("whitespace", "lpar", "rpar", "leading_lines", "lines_after_decorator")
_FORMATTING_NAMES = frozenset({
    "comma", "semicolon", "header", "footer", "lbracket", "rbracket", "lbrace", "rbrace", "colon", "equal",
    "star", "dot", "operator", "newline", "trailing_whitespace", "asynchronous", "default_newline",
    "default_indent", "encoding", "relative", "posonly_ind",
})
_FIELDS: dict[type, tuple[str, ...]] = {}


def _fields(kind: type) -> tuple[str, ...]:
    names = _FIELDS.get(kind)
    if names is None:
        names = tuple(
            f.name
            for f in dataclasses.fields(kind)
            if f.name not in _FORMATTING_NAMES and not f.name.startswith(_FORMATTING_PREFIXES)
        )
        _FIELDS[kind] = names
    return names


# isinstance() against libcst's abstract CSTNode goes through ABCMeta and was the walk's largest
# cost; the answer depends only on the value's type, so remember it per type.
_IS_NODE: dict[type, bool] = {}


def _is_node(kind: type) -> bool:
    known = _IS_NODE.get(kind)
    if known is None:
        known = _IS_NODE[kind] = issubclass(kind, cst.CSTNode)
    return known


def children(node: cst.CSTNode) -> list[cst.CSTNode]:
    """Code-bearing children of ``node`` in field order (source order for almost every node).

    A list, not a generator: every walk takes them all, and this is the walks' innermost loop."""
    out: list[cst.CSTNode] = []
    known = _IS_NODE
    names = _FIELDS.get(type(node)) or _fields(type(node))
    for name in names:
        value = getattr(node, name)
        kind = type(value)
        if kind is tuple or kind is list:
            for item in value:
                hit = known.get(type(item))
                if hit is None:
                    hit = _is_node(type(item))
                if hit:
                    out.append(item)
        else:
            hit = known.get(kind)
            if hit is None:
                hit = _is_node(kind)
            if hit:
                out.append(value)
    return out


# libcst's node classes are ABCs, so isinstance() goes through ABCMeta.__instancecheck__ (most of a
# walk's cost): iter_nodes answers "is this node one of kinds" once per (kinds, node type).
_MATCHES: dict[tuple, dict[type, bool]] = {}
_SCOPES = frozenset({cst.FunctionDef, cst.ClassDef, cst.Lambda})  # libcst has no subclasses of these


def kind_table(kinds: tuple[type, ...]) -> dict[type, bool]:
    """node type -> is it one of ``kinds``: filled as the walks meet types (``issubclass`` once each)."""
    matches = _MATCHES.get(kinds)
    if matches is None:
        matches = _MATCHES[kinds] = {}
    return matches


# The rules and analyses ask for the nodes of one function body many times, each time for other
# kinds (on transformers, children() ran ~4 times per node of the linted code). Between
# ``remember_bodies()`` and ``forget_bodies()`` (one file's rules) the descendants of a block or a
# def are listed once, in iter_nodes' order, and each query filters that list.
_BODIES = frozenset({cst.IndentedBlock, cst.FunctionDef})
_FLAT: Optional[dict[tuple, tuple[cst.CSTNode, list[cst.CSTNode]]]] = None


def remember_bodies() -> None:
    global _FLAT
    _FLAT = {}


def forget_bodies() -> None:
    global _FLAT
    _FLAT = None


def descendants(root: cst.CSTNode, stops: frozenset, *, include_root: bool = False) -> list[cst.CSTNode]:
    """``root``'s descendants in pre-order (``root`` first with ``include_root``), not entering nodes
    whose type is in ``stops`` (listed themselves); remembered per (root, stops) while a file's rules run."""
    flat = _FLAT
    key = (id(root), stops, include_root)
    if flat is not None:
        entry = flat.get(key)
        if entry is not None and entry[0] is root:
            return entry[1]
        if type(root) is cst.FunctionDef and (stops == _SCOPES or stops == _DEFS_ONLY):
            shared = _function_lists(root, flat, stops, include_root)
            if shared is not None:
                return shared
    out: list[cst.CSTNode] = []
    if include_root:
        out.append(root)
    _flatten(children(root), stops, out)
    if flat is not None:
        flat[key] = (root, out)
    return out


def _flatten(stack: list, stops: frozenset, out: list) -> None:
    """Append the nodes of ``stack`` (siblings in order) and their descendants to ``out``, in pre-order."""
    stack.reverse()
    while stack:
        node = stack.pop()
        out.append(node)
        if type(node) in stops:
            continue
        kids = children(node)
        kids.reverse()
        stack.extend(kids)


# The three lists the rules ask of each function are made from one walk: its nodes without entering
# nested scopes, its body's (the same nodes, a slice of them) and, when it holds no class or lambda,
# everything but nested defs (the first list with the def in front). On transformers each function was
# walked three times for them.
_DEFS_ONLY = frozenset({cst.FunctionDef})
_NESTED_SCOPES = frozenset({cst.ClassDef, cst.Lambda})  # entered by _DEFS_ONLY's walk, not by _SCOPES'


def _function_lists(fn: cst.FunctionDef, flat: dict, stops: frozenset, include_root: bool) -> Optional[list]:
    """``descendants(fn, stops, include_root=...)`` from the shared walk; None when it must be walked
    on its own (a nested class or lambda: only the walk that enters them has their nodes)."""
    key = (id(fn), _SCOPES, False)
    entry = flat.get(key)
    if entry is None or entry[0] is not fn:
        nodes: list[cst.CSTNode] = []
        body = fn.body
        start = end = None
        for child in children(fn):
            if child is body:
                nodes.append(child)
                start = len(nodes)
                _flatten(children(child), _SCOPES, nodes)
                end = len(nodes)
            else:
                _flatten([child], _SCOPES, nodes)
        flat[key] = (fn, nodes)
        if start is not None and type(body) in _BODIES:
            flat[(id(body), _SCOPES, False)] = (body, nodes[start:end])
        if not any(type(n) in _NESTED_SCOPES for n in nodes):
            flat[(id(fn), _DEFS_ONLY, True)] = (fn, [fn, *nodes])
    else:
        nodes = entry[1]
    if stops == _SCOPES:
        return nodes if not include_root else None
    found = flat.get((id(fn), stops, include_root))
    return found[1] if found is not None and found[0] is fn else None


def iter_nodes(root: cst.CSTNode, kinds: tuple[type, ...], *, into_nested_defs: bool = False) -> Iterator[cst.CSTNode]:
    """Every descendant of ``root`` (not ``root`` itself) that is an instance of ``kinds``."""
    matches = kind_table(kinds)
    if _FLAT is not None and not into_nested_defs and type(root) in _BODIES:
        nodes: Iterable[cst.CSTNode] = descendants(root, _SCOPES)
    else:
        nodes = _walk_lazily(root, frozenset() if into_nested_defs else _SCOPES)
    for node in nodes:
        kind = type(node)
        hit = matches.get(kind)
        if hit is None:
            hit = matches[kind] = issubclass(kind, kinds)
        if hit:
            yield node


def _walk_lazily(root: cst.CSTNode, stops: frozenset) -> Iterator[cst.CSTNode]:
    """``descendants(root, stops)`` one node at a time (a caller that stops early walks no further)."""
    stack = children(root)
    stack.reverse()
    while stack:
        node = stack.pop()
        yield node
        if type(node) in stops:
            continue
        kids = children(node)
        kids.reverse()
        stack.extend(kids)
