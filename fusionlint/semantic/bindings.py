"""Where each local name of a function is bound: the dataflow most rules need.

Rules ask "is every binding of ``y`` a ``.transpose()`` / an ``expand()`` / a ``sigmoid()``?".
This answers it with one fast walk, flow-insensitively; ``RuleContext.bindings()`` caches it per function.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from fusionlint.analysis.names import dotted
from fusionlint.analysis.walk import children, iter_nodes

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


# Statements that bind a name other than by `name = value`: a read after them cannot be answered
# from a list of assigned values.
_OTHER_BINDER_TYPES = frozenset({cst.AugAssign, cst.For, cst.With, cst.NamedExpr, cst.CompFor, cst.ExceptHandler,
                                 cst.Import, cst.ImportFrom, cst.FunctionDef, cst.ClassDef, cst.Global, cst.Nonlocal})
_LOOP_TYPES = frozenset({cst.For, cst.While})


def _other_bound(node: cst.CSTNode) -> list[str]:
    if isinstance(node, cst.With):
        return [n for item in node.items if item.asname is not None for n in target_names(item.asname.name)]
    if isinstance(node, cst.ExceptHandler):
        return target_names(node.name.name) if node.name is not None else []
    if isinstance(node, (cst.Import, cst.ImportFrom)):
        if isinstance(node.names, cst.ImportStar):
            return []
        return [(a.asname.name.value if a.asname is not None and isinstance(a.asname.name, cst.Name)
                 else (dotted(a.name) or "").split(".", 1)[0]) for a in node.names]
    if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
        return [node.name.value]
    if isinstance(node, (cst.Global, cst.Nonlocal)):
        return [n.name.value for n in node.names]
    return target_names(node.target)


def reaching_plain_values(fn: cst.FunctionDef) -> dict[cst.Name, list[cst.BaseExpression]]:
    """For each read of a local name in ``fn`` (not in nested defs, lambdas or classes): the values
    of the plain ``name = value`` bindings that come before it in evaluation order (an assignment's
    value is read before its target is bound). Without loops, only those can reach the read; the
    bindings after it cannot, so ``kv = [a, b]; if not kv: ...; kv = torch.cat(kv)`` tests a list.

    Left out, so the caller falls back to what it knows flow-insensitively: reads of names that any
    other kind of binding also binds (``+=``, ``for``, ``with``, unpacking, imports, ...), reads
    inside a loop that binds the name (a later binding reaches them in the next iteration), and
    reads with no binding before them (a parameter, a global). A read of a parameter that is bound
    again later maps to the values before it, possibly none: the caller adds the parameter itself."""
    events: list[tuple[bool, cst.CSTNode, Optional[cst.BaseExpression], tuple]] = []  # (is_bind, name, value, loops)
    other: set[str] = set()
    body = fn.body.body if isinstance(fn.body, cst.IndentedBlock) else (fn.body,)
    stack: list[tuple[object, tuple]] = [(stmt, ()) for stmt in reversed(body)]
    # dispatch on the exact type: this walk runs once per function with a re-bound name, and
    # isinstance() against a tuple of libcst classes per node was most of its cost
    other_binders, loop_kinds = _OTHER_BINDER_TYPES, _LOOP_TYPES
    while stack:
        item, loops = stack.pop()
        if type(item) is tuple:  # a binding, queued after its value
            events.append((True, item[0], item[1], loops))
            continue
        node = item
        kind = type(node)
        if kind is cst.Name:
            events.append((False, node, None, loops))
            continue
        if kind is cst.Attribute:
            stack.append((node.value, loops))  # `.attr` is no read of a local
            continue
        if kind is cst.FunctionDef or kind is cst.ClassDef:
            other.add(node.name.value)  # its body runs later (or in its own scope)
            continue
        if kind is cst.Lambda:
            continue
        if kind in other_binders:
            other.update(_other_bound(node))
        if (kind is cst.Assign or kind is cst.AnnAssign) and node.value is not None:
            targets = [t.target for t in node.targets] if kind is cst.Assign else [node.target]
            queued: list = []
            for target in targets:
                if type(target) is cst.Name:
                    queued.append(((target, node.value), loops))
                else:
                    other.update(target_names(target))
                    queued.append((target, loops))  # `d[k] = v`, `self.x = v` read names
            stack.extend(reversed(queued))
            stack.append((node.value, loops))  # popped first: the value is evaluated first
            continue
        if kind is cst.Arg and node.keyword is not None:
            stack.append((node.value, loops))  # `f(dim=d)`: `dim` is no read
            continue
        inner = loops + (node,) if kind in loop_kinds else loops
        stack.extend((child, inner) for child in reversed(children(node)))
    bound_in_loop: dict[int, set[str]] = {}
    for is_bind, name, _, loops in events:
        if is_bind:
            for loop in loops:
                bound_in_loop.setdefault(id(loop), set()).add(name.value)
    params = {p.name.value for p in (*fn.params.posonly_params, *fn.params.params, *fn.params.kwonly_params)}
    earlier: dict[str, list[cst.BaseExpression]] = {}
    out: dict[cst.Name, list[cst.BaseExpression]] = {}
    for is_bind, name, value, loops in events:
        n = name.value
        if is_bind:
            earlier.setdefault(n, []).append(value)
        elif n not in other and (n in params or n in earlier) and not any(n in bound_in_loop.get(id(l), ()) for l in loops):
            out[name] = list(earlier.get(n, ()))
    # only names bound more than once (a parameter counts as one binding): a name bound once has one
    # value everywhere, and the caller's flow-insensitive facts already say what it is
    rebound = {n for n, values in earlier.items() if len(values) + (n in params) > 1}
    return {read: values for read, values in out.items() if read.value in rebound and read.value not in other}
