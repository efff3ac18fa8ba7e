"""Where each local name of a function is bound: the dataflow most rules need.

Rules ask "is every binding of ``y`` a ``.transpose()`` / an ``expand()`` / a ``sigmoid()``?".
This answers it with one fast walk, flow-insensitively; ``RuleContext.bindings()`` caches it per function.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from fusionlint.analysis.walk import iter_nodes

_BINDING_NODES = (cst.Assign, cst.AnnAssign, cst.AugAssign, cst.For, cst.With, cst.NamedExpr, cst.CompFor)


def target_names(target: cst.BaseExpression) -> list[str]:
    """Names bound by an assignment target: ``a``, ``a, (b, *c)``; not ``self.x`` or ``d[k]``."""
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for e in target.elements for n in target_names(e.value)]
    if isinstance(target, cst.StarredElement):
        return target_names(target.value)
    return []


def bindings(fn: cst.FunctionDef) -> dict[str, list[Optional[cst.BaseExpression]]]:
    """name -> the value of each binding in ``fn`` (not nested defs), in source order.

    A plain ``name = value`` (or ``name: T = value``, ``name := value``) records ``value``; every
    other binding (tuple unpacking, ``+=``, ``for``, ``with ... as``, parameters) records None.
    """
    found: dict[str, list[Optional[cst.BaseExpression]]] = {}
    params = fn.params
    for param in (*params.posonly_params, *params.params, *params.kwonly_params):
        found.setdefault(param.name.value, []).append(None)
    for star in (params.star_arg, params.star_kwarg):
        if isinstance(star, cst.Param):
            found.setdefault(star.name.value, []).append(None)
    for node in iter_nodes(fn.body, _BINDING_NODES):
        if isinstance(node, cst.Assign):
            for target in node.targets:
                _record(found, target.target, node.value)
        elif isinstance(node, (cst.AnnAssign, cst.NamedExpr)):
            if node.value is not None:
                _record(found, node.target, node.value)
        elif isinstance(node, cst.With):
            for item in node.items:
                if item.asname is not None:
                    _record(found, item.asname.name, None)
        else:  # AugAssign, For, CompFor
            _record(found, node.target, None)
    return found


def bound_names(node: cst.CSTNode) -> set[str]:
    """The local names a statement binds anywhere inside it (not in nested defs)."""
    out: set[str] = set()
    itself = [node] if isinstance(node, _BINDING_NODES) else []  # a `for`/`with` statement binds too
    for found in [*itself, *iter_nodes(node, _BINDING_NODES)]:
        if isinstance(found, cst.Assign):
            for target in found.targets:
                out.update(target_names(target.target))
        elif isinstance(found, cst.With):
            out.update(n for item in found.items if item.asname is not None for n in target_names(item.asname.name))
        else:
            out.update(target_names(found.target))
    return out


def _record(found: dict, target: cst.BaseExpression, value: Optional[cst.BaseExpression]) -> None:
    if isinstance(target, cst.Name):
        found.setdefault(target.value, []).append(value)
        return
    for name in target_names(target):
        found.setdefault(name, []).append(None)


def sole_value(table: dict[str, list[Optional[cst.BaseExpression]]], name: str) -> Optional[cst.BaseExpression]:
    """The value of ``name`` when ``table`` (from ``bindings``) has exactly one plain assignment to it."""
    values = table.get(name)
    if values is None or len(values) != 1:
        return None
    return values[0]
