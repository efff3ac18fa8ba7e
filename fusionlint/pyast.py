"""Children of a CPython ``ast`` node, cheaply.

``ast.iter_child_nodes`` is a generator over ``ast.iter_fields``, and it also yields the ``ctx``
(``Load``/``Store``) and operator leaves of every name, attribute and expression: about a third of
what a walk pops. The project model's summaries and the sparse plan walk every node of every file,
so they take the children from here: the same nodes in the same order, less those leaves.
"""

from __future__ import annotations

import ast

# fields that never hold a node worth visiting: strings, ints, and the ctx/operator singletons
NOT_CHILDREN = frozenset(
    {"id", "arg", "name", "attr", "kind", "type_comment", "ctx", "op", "ops", "level", "module", "conversion",
     "is_async", "simple"}
)
_FIELDS: dict[type, tuple[str, ...]] = {}


def child_nodes(node: ast.AST) -> list[ast.AST]:
    """``list(ast.iter_child_nodes(node))`` without ``ctx`` and operator nodes."""
    kind = type(node)
    fields = _FIELDS.get(kind)
    if fields is None:
        fields = _FIELDS[kind] = tuple(f for f in kind._fields if f not in NOT_CHILDREN)
    out: list[ast.AST] = []
    for name in fields:
        value = getattr(node, name, None)
        if type(value) is list:
            for item in value:
                if isinstance(item, ast.AST):
                    out.append(item)
        elif isinstance(value, ast.AST):
            out.append(value)
    return out
