"""Where each local name of a function is bound: the dataflow most rules need.

Rules ask "is every binding of ``y`` a ``.transpose()`` / an ``expand()`` / a ``sigmoid()``?".
This answers it with one fast walk, flow-insensitively; ``RuleContext.bindings()`` caches it per function.
"""

from __future__ import annotations

from typing import NamedTuple, Optional

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


# In a list of ``reaching_plain_values``: the parameter's own value may reach the read (no binding
# before it that always runs). Callers skip it when they look at the values themselves.
PARAMETER = cst.Name("__parameter__")
_BLOCK_TYPES = frozenset({cst.IndentedBlock, cst.SimpleStatementSuite})


class Reaching(NamedTuple):
    """The plain bindings that reach one read: ``values`` in evaluation order, the first one the
    binding that always ran before the read when there is one; ``hidden``: what that binding hid
    (earlier bindings, ``PARAMETER``), empty when there is no such binding."""

    values: list
    hidden: list


def reaching_plain_values(fn: cst.FunctionDef) -> dict[cst.Name, Reaching]:
    """For each read of a local name in ``fn`` (not in nested defs, lambdas or classes): the values
    of the plain ``name = value`` bindings that can reach it in evaluation order (an assignment's
    value is read before its target is bound). Without loops, only bindings before the read can
    reach it, so ``kv = [a, b]; if not kv: ...; kv = torch.cat(kv)`` tests a list; and a binding in
    the read's own block or a block enclosing it always runs first, so it hides the ones before it:
    in ``mask = idx.new_full(...); ...; mask = (row >= 0) & (col >= 0); row[mask]`` only the second
    reaches (a binding in a branch, a loop, a ``with`` or ``try`` body hides nothing after it).

    Left out, so the caller falls back to what it knows flow-insensitively: reads of names that any
    other kind of binding also binds (``+=``, ``for``, ``with``, unpacking, imports, ...), reads
    inside a loop that binds the name (a later binding reaches them in the next iteration), and
    reads with no binding before them (a parameter, a global). A read of a parameter that is bound
    again later maps to the values before it, with ``PARAMETER`` among them while no such binding
    hides the parameter's own value (in ``hidden`` when one does)."""
    # (is_bind, name, value, loops, blocks): `blocks` are the ids of the statement blocks around it
    events: list[tuple[bool, cst.CSTNode, Optional[cst.BaseExpression], tuple, tuple]] = []
    other: set[str] = set()
    body = fn.body.body if isinstance(fn.body, cst.IndentedBlock) else (fn.body,)
    stack: list[tuple[object, tuple, tuple]] = [(stmt, (), ()) for stmt in reversed(body)]
    # dispatch on the exact type: this walk runs once per function with a re-bound name, and
    # isinstance() against a tuple of libcst classes per node was most of its cost
    other_binders, loop_kinds, block_kinds = _OTHER_BINDER_TYPES, _LOOP_TYPES, _BLOCK_TYPES
    while stack:
        item, loops, blocks = stack.pop()
        if type(item) is tuple:  # a binding, queued after its value
            events.append((True, item[0], item[1], loops, blocks))
            continue
        node = item
        kind = type(node)
        if kind is cst.Name:
            events.append((False, node, None, loops, blocks))
            continue
        if kind is cst.Attribute:
            stack.append((node.value, loops, blocks))  # `.attr` is no read of a local
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
                    queued.append(((target, node.value), loops, blocks))
                else:
                    other.update(target_names(target))
                    queued.append((target, loops, blocks))  # `d[k] = v`, `self.x = v` read names
            stack.extend(reversed(queued))
            stack.append((node.value, loops, blocks))  # popped first: the value is evaluated first
            continue
        if kind is cst.Arg and node.keyword is not None:
            stack.append((node.value, loops, blocks))  # `f(dim=d)`: `dim` is no read
            continue
        inner = loops + (node,) if kind in loop_kinds else loops
        within = blocks + (id(node),) if kind in block_kinds else blocks
        stack.extend((child, inner, within) for child in reversed(children(node)))
    bound_in_loop: dict[int, set[str]] = {}
    for is_bind, name, _, loops, _ in events:
        if is_bind:
            for loop in loops:
                bound_in_loop.setdefault(id(loop), set()).add(name.value)
    params = {p.name.value for p in (*fn.params.posonly_params, *fn.params.params, *fn.params.kwonly_params)}
    earlier: dict[str, list[tuple[cst.BaseExpression, tuple]]] = {}
    out: dict[cst.Name, Reaching] = {}
    for is_bind, name, value, loops, blocks in events:
        n = name.value
        if is_bind:
            earlier.setdefault(n, []).append((value, blocks))
        elif n not in other and (n in params or n in earlier) and not any(n in bound_in_loop.get(id(l), ()) for l in loops):
            before = [PARAMETER] * (n in params) + [bound for bound, _ in earlier.get(n, ())]
            cut = 0
            for i in range(len(before) - 1, (n in params) - 1, -1):
                where = earlier[n][i - (n in params)][1]
                if blocks[: len(where)] == where:
                    cut = i  # it always ran before the read: what came before it is hidden
                    break
            out[name] = Reaching(before[cut:], before[:cut])
    # only names bound more than once (a parameter counts as one binding): a name bound once has one
    # value everywhere, and the caller's flow-insensitive facts already say what it is
    rebound = {n for n, values in earlier.items() if len(values) + (n in params) > 1}
    return {read: values for read, values in out.items() if read.value in rebound and read.value not in other}
