"""What one function's own code contains: the per-function scans several rules share.

``function_nodes`` is the traversal these rules made with libcst's visitor (``visit_FunctionDef``
returning ``node is fn``), on ``fusionlint.analysis.walk``'s field walk, which does not rebuild nodes:
everything under ``fn`` (decorators, parameters, annotations, body) without entering nested function
definitions. Class bodies and lambdas written inside ``fn`` are entered, as the visitor did.
``fusionlint.semantic.bindings`` answers the narrower "which values does each local name get"
(body only, nested classes and lambdas excluded); the scans here keep their own rules' semantics.
"""

from __future__ import annotations

from typing import Callable, Optional

import libcst as cst

from fusionlint.semantic.bindings import target_names
from fusionlint.analysis.walk import descendants, kind_table


def function_nodes(fn: cst.FunctionDef, kinds: tuple[type, ...]) -> list[cst.CSTNode]:
    """Nodes of ``kinds`` in ``fn`` (``fn`` included), depth-first in field order, nested defs not entered."""
    found: list[cst.CSTNode] = []
    matches = kind_table(kinds)
    for node in descendants(fn, _NESTED_DEFS, include_root=True):
        kind = type(node)
        hit = matches.get(kind)
        if hit is None:
            hit = matches[kind] = issubclass(kind, kinds)
        if hit:
            found.append(node)
    return found


_NESTED_DEFS = frozenset({cst.FunctionDef})  # (libcst has no subclass of FunctionDef)


_BINDERS = (cst.Assign, cst.AnnAssign, cst.For, cst.NamedExpr, cst.WithItem)


def names_always_bound_to(
    fn: cst.FunctionDef, label: Callable[[Optional[cst.BaseExpression]], Optional[str]]
) -> dict[str, str]:
    """Local names of ``fn`` whose every binding is a value ``label`` recognises -> the first one's label.

    Bindings: ``name = v`` / ``name: T = v`` / ``(name := v)`` give ``label(v)``; unpacking, ``for``,
    ``with ... as``, a declaration without a value and the parameters count as unrecognised. An
    augmented assignment (``y += 1``) is not a binding here: it is the in-place write that FL401 and
    FL403 look for on such a name.
    """
    binds: dict[str, list[Optional[str]]] = {}
    for node in function_nodes(fn, _BINDERS):
        if isinstance(node, cst.Assign):
            op = label(node.value)
            for target in node.targets:
                if isinstance(target.target, cst.Name):
                    binds.setdefault(target.target.value, []).append(op)
                else:
                    for name in target_names(target.target):
                        binds.setdefault(name, []).append(None)
        elif isinstance(node, (cst.AnnAssign, cst.NamedExpr)):
            op = label(node.value) if node.value is not None else None
            for name in target_names(node.target):
                binds.setdefault(name, []).append(op)
        elif isinstance(node, cst.For):
            for name in target_names(node.target):
                binds.setdefault(name, []).append(None)
        elif node.asname is not None:  # WithItem
            for name in target_names(node.asname.name):
                binds.setdefault(name, []).append(None)
    params = fn.params
    for p in (*params.posonly_params, *params.params, *params.kwonly_params):
        binds.setdefault(p.name.value, []).append(None)
    return {name: ops[0] for name, ops in binds.items() if ops and all(op is not None for op in ops)}  # type: ignore[misc]
