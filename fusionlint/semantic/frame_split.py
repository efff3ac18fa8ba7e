"""Where a graph break splits a function into Dynamo frames, and the names read after the split.

When Dynamo meets a graph break it compiles the function up to the break, runs the breaking code
eagerly and resumes in a new frame (``torch_dynamo_resume_in_<fn>_at_<line>``) whose inputs are the
live local variables. A Python int, string or ``None`` among them is a constant of that frame: Dynamo
guards on its value where the resumed code first reads it. A function called from compiled code that
breaks is a frame of its own too, with a guard on each Python argument where its body first reads it
(measured with torch 2.13 CPU: ``tests/test_frame_split.py``).

``after_break`` gives the first breaking node of a function and the nodes that run after it, in
order; ``name_events`` tells, for those nodes, where each name is read or bound.
"""

from __future__ import annotations

from typing import Iterable, Iterator, Optional

import libcst as cst

from fusionlint.analysis.walk import children

_NESTED_SCOPES = (cst.FunctionDef, cst.ClassDef, cst.Lambda)


def after_break(fn: cst.FunctionDef, breaks: frozenset[int]) -> Optional[tuple[cst.CSTNode, list[cst.CSTNode]]]:
    """(the first node of ``fn``'s body, in source order, whose id is in ``breaks``; the nodes that run
    after it up to the end of the function, in order), or None when no node of the body breaks.
    After a break in an ``if`` test or a loop header comes the whole statement; after one in a
    branch, the rest of that branch and what follows the ``if`` (not the other branches)."""
    if not isinstance(fn.body, cst.IndentedBlock):
        return None
    return _after(fn.body.body, breaks)


def split_points(fn: cst.FunctionDef, breaks: frozenset[int],
                 every_call: bool = False) -> list[tuple[cst.CSTNode, list[cst.CSTNode]]]:
    """``after_break`` for every node of ``fn``'s body in ``breaks``, in source order: each one starts a
    frame of its own (the function resumes after every break). ``every_call``: only the breaks that
    every call reaches (``every_call_nodes``), the ones whose resumed frame surely runs."""
    if not isinstance(fn.body, cst.IndentedBlock):
        return []
    out = []
    nodes = _preorder(every_call_nodes(fn.body.body)) if every_call else _preorder(fn.body.body)
    for node in nodes:
        if id(node) in breaks:
            found = _after(fn.body.body, frozenset({id(node)}))
            if found is not None:
                out.append(found)
    return out


def _after(statements, breaks: frozenset[int]) -> Optional[tuple[cst.CSTNode, list]]:
    for i, stmt in enumerate(statements):
        if isinstance(stmt, _NESTED_SCOPES):
            continue
        rest = list(statements[i + 1:])
        if isinstance(stmt, cst.SimpleStatementLine):
            for k, small in enumerate(stmt.body):
                found = _rest_of(small, breaks, small)
                if found is not None:
                    breaking, tail = found
                    # what the statement evaluates after the break, then the statements after it
                    return breaking, tail + list(stmt.body[k + 1:]) + rest
            continue
        header = header_nodes(stmt)
        hit = next((n for n in _preorder(header) if id(n) in breaks), None)
        if hit is not None:
            return hit, [stmt] + rest
        for block in compound_blocks(stmt):
            inner = _after(block.body, breaks)
            if inner is not None:
                return inner[0], inner[1] + rest
    return None


def _rest_of(node: cst.CSTNode, breaks: frozenset[int], anchor: Optional[cst.CSTNode] = None):
    """(the first node in ``breaks`` within ``node``; the subtrees of ``node`` after it, in source
    order, each with the innermost consuming expression around it, else ``anchor``), or None."""
    if id(node) in breaks:
        return node, []
    if isinstance(node, _NESTED_SCOPES):
        return None
    inner = node if isinstance(node, _CONSUMERS) else anchor
    kids = children(node)
    for j, kid in enumerate(kids):
        found = _rest_of(kid, breaks, inner)
        if found is not None:
            return found[0], found[1] + [(k, inner) for k in kids[j + 1:]]
    return None


def every_call_nodes(statements) -> Iterator[cst.CSTNode]:
    """The parts of a function body that every call runs, in order: small statements and compound
    statement headers (an ``if`` test, a loop's iterable, ``with`` items and body) up to the first
    ``return``, or a compound statement that holds one. A branch that only raises does not end it: a
    call that raises is an error, not another path through the frame."""
    for stmt in statements:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                yield small
                if isinstance(small, cst.Return):
                    return
            continue
        if isinstance(stmt, _NESTED_SCOPES):
            continue
        if isinstance(stmt, cst.With):
            yield from stmt.items
            yield from every_call_nodes(stmt.body.body)
        elif isinstance(stmt, (cst.If, cst.For, cst.While)):
            yield from header_nodes(stmt)
        else:
            return  # try, match: not followed
        if any(isinstance(n, cst.Return) for n in _preorder([stmt])):
            return


def header_nodes(stmt: cst.CSTNode) -> list[cst.CSTNode]:
    """What a compound statement evaluates before its blocks: an ``if``/``while`` test, a ``for``
    loop's iterable, a ``with`` statement's items."""
    if isinstance(stmt, (cst.If, cst.While)):
        return [stmt.test]
    if isinstance(stmt, cst.For):
        return [stmt.iter]
    if isinstance(stmt, cst.With):
        return list(stmt.items)
    return []


def compound_blocks(stmt: cst.CSTNode) -> Iterator[cst.BaseSuite]:
    """The blocks of a compound statement: its body, handlers, ``elif``/``else`` and ``finally``."""
    body = getattr(stmt, "body", None)
    if isinstance(body, cst.BaseSuite):
        yield body
    for handler in getattr(stmt, "handlers", ()):
        yield handler.body
    orelse = getattr(stmt, "orelse", None)
    if isinstance(orelse, cst.If):
        yield from compound_blocks(orelse)
    elif orelse is not None:
        yield orelse.body
    final = getattr(stmt, "finalbody", None)
    if final is not None:
        yield final.body


def _preorder(nodes: Iterable[cst.CSTNode]) -> Iterator[cst.CSTNode]:
    """Every node of ``nodes`` in source order, not inside nested functions, classes or lambdas."""
    stack = list(reversed(list(nodes)))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, _NESTED_SCOPES):
            stack.extend(reversed(children(node)))


def name_events(items: Iterable) -> Iterator[tuple[str, cst.Name, bool, cst.CSTNode]]:
    """(name, its node, True for a read / False for a binding, where the read is used) for the plain
    names of ``items`` (nodes, or (node, the statement holding it) pairs), in the order Python evaluates
    them: an assignment's value before its targets, ``x += 1`` reads ``x`` before binding it. An
    attribute's name (``.n``) and a keyword (``f(n=1)``) are not names. Where a read is used is the
    innermost call, operation, comparison or subscript around it, else its statement or header: the
    line Dynamo names for a guard on the value (a local is wrapped when an operation needs it: in the
    recall bench, PyG's ChebConv passes `num_nodes` on the third line of a call that breaks and the
    guard names the call's first line; JetMoE's `bsz * length` on the second line of a call names
    that line)."""
    for item in items:
        node, anchor = item if isinstance(item, tuple) else (item, None)
        yield from _statement_events(node, anchor)


def _statement_events(node: cst.CSTNode, anchor: Optional[cst.CSTNode]):
    if isinstance(node, cst.SimpleStatementLine):
        for small in node.body:
            yield from _events(small, small)
    elif isinstance(node, cst.BaseCompoundStatement) and not isinstance(node, _NESTED_SCOPES):
        if isinstance(node, cst.For):
            yield from _events(node.iter, node.iter)
            yield from _stores(node.target, node.iter)
        else:
            for part in header_nodes(node):
                yield from _events(part, part)
        if isinstance(node, cst.If):  # an `elif` is a statement of its own, with a test of its own
            for stmt in node.body.body:
                yield from _statement_events(stmt, None)
            if isinstance(node.orelse, cst.If):
                yield from _statement_events(node.orelse, None)
            elif node.orelse is not None:
                for stmt in node.orelse.body.body:
                    yield from _statement_events(stmt, None)
            return
        for block in compound_blocks(node):
            for stmt in block.body:
                yield from _statement_events(stmt, None)
    elif isinstance(node, cst.BaseSmallStatement):
        yield from _events(node, node)
    else:
        yield from _events(node, anchor if anchor is not None else node)


# expressions that consume their operands' values: a read's guard is named at the innermost one around it
_CONSUMERS = (cst.Call, cst.BinaryOperation, cst.Comparison, cst.UnaryOperation, cst.BooleanOperation, cst.Subscript)


def _events(node: cst.CSTNode, anchor: cst.CSTNode) -> Iterator[tuple[str, cst.Name, bool, cst.CSTNode]]:
    if isinstance(node, cst.Name):
        yield node.value, node, True, anchor
    elif isinstance(node, _NESTED_SCOPES):
        return
    elif isinstance(node, _CONSUMERS):
        for child in children(node):
            yield from _events(child, node)
    elif isinstance(node, cst.Attribute):
        yield from _events(node.value, anchor)
    elif isinstance(node, cst.Arg):
        yield from _events(node.value, anchor)
    elif isinstance(node, cst.WithItem):
        yield from _events(node.item, anchor)
        if node.asname is not None:
            yield from _stores(node.asname.name, anchor)
    elif isinstance(node, cst.Assign):
        yield from _events(node.value, anchor)
        for target in node.targets:
            yield from _stores(target.target, anchor)
    elif isinstance(node, cst.AnnAssign):
        if node.value is not None:
            yield from _events(node.value, anchor)
            yield from _stores(node.target, anchor)
    elif isinstance(node, cst.AugAssign):
        yield from _events(node.value, anchor)
        yield from _events(node.target, anchor)
        yield from _stores(node.target, anchor)
    elif isinstance(node, cst.NamedExpr):
        yield from _events(node.value, anchor)
        yield from _stores(node.target, anchor)
    elif isinstance(node, (cst.BaseCompoundStatement, cst.SimpleStatementLine)):
        yield from _statement_events(node, None)
    else:
        for child in children(node):
            yield from _events(child, anchor)


def _stores(target: cst.CSTNode, anchor: cst.CSTNode) -> Iterator[tuple[str, cst.Name, bool, cst.CSTNode]]:
    if isinstance(target, cst.Name):
        yield target.value, target, False, anchor
    elif isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            yield from _stores(element.value, anchor)
    elif isinstance(target, cst.StarredElement):
        yield from _stores(target.value, anchor)
    else:  # `a[i] = v`, `a.b = v`: reads `a` and `i`
        yield from _events(target, anchor)



def host_uses(statements, hosts: frozenset[int]) -> Iterator[tuple[cst.CSTNode, Optional[cst.CSTNode], tuple[str, ...]]]:
    """For each node of ``statements`` whose id is in ``hosts`` (a call that reads a tensor's value into
    Python and breaks the graph: ``int(x.max())``, ``.item()``, ``.tolist()``), in source order: (the
    node; the innermost operation of its statement that consumes its value, or the ``if``/``while``
    test or loop iterable it is part of, else None; the names an assignment binds when the node is the
    assigned value). The frame Dynamo resumes in after the break gets the value on its stack and
    guards on it where an operation first consumes it (measured: ``tests/test_frame_split.py``). A
    loop's body is left out: after a break there Dynamo runs the whole frame eagerly (measured: no
    recompile)."""
    for stmt in statements:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                value, names = _assignment(small)
                # `n += int(x.max())` adds the value to `n`'s
                for host, consumer in _hosts_in(small, hosts, small if isinstance(small, cst.AugAssign) else None):
                    yield host, consumer, names if host is value else ()
        elif isinstance(stmt, _NESTED_SCOPES):
            continue
        elif isinstance(stmt, cst.BaseCompoundStatement):
            for header in header_nodes(stmt):
                consumer = header if isinstance(stmt, (cst.If, cst.While, cst.For)) else None
                for host, found in _hosts_in(header, hosts, consumer):
                    yield host, found, ()
            if isinstance(stmt, (cst.For, cst.While)):
                continue
            for block in compound_blocks(stmt):
                yield from host_uses(block.body, hosts)


def _assignment(stmt: cst.BaseSmallStatement) -> tuple[Optional[cst.CSTNode], tuple[str, ...]]:
    """(the value, the plain names it is bound to) of ``n = v``, ``a, b = v``, ``n: int = v``."""
    if isinstance(stmt, cst.Assign):
        targets = [t.target for t in stmt.targets]
    elif isinstance(stmt, cst.AnnAssign) and stmt.value is not None:
        targets = [stmt.target]
    else:
        return None, ()
    return stmt.value, tuple(name for t in targets for name, _, read, _ in _stores(t, stmt) if not read)


def _hosts_in(node: cst.CSTNode, hosts: frozenset[int], consumer: Optional[cst.CSTNode]):
    if id(node) in hosts:
        yield node, consumer
        return
    if isinstance(node, _NESTED_SCOPES):
        return
    inner = node if isinstance(node, _CONSUMERS) else consumer
    for kid in children(node):
        yield from _hosts_in(kid, hosts, inner)


def element_read(statements, name: str) -> Optional[tuple[cst.Name, cst.CSTNode]]:
    """(the read, where its value is used: ``name_events``) that first uses an element of the sequence
    ``name`` holds (a parameter passed ``size=(N, N)``), or None: Dynamo guards on an element's value
    where it is read, not where the sequence is tested (``size is None``, ``isinstance(size, tuple)``,
    ``len(size)``) or unpacked (``a, b = size``: the first read of ``a`` or ``b`` counts); code under
    ``if size is None:`` does not run for such a call (measured: PyG's ``to_torch_coo_tensor``,
    ``tests/test_frame_split.py``)."""
    skipped = {id(n) for n in _under_none_test(statements, name)}
    elements: set[str] = set()
    unpacked: set[int] = set()  # the targets of `a, b = size`
    for n, node, read, anchor in name_events(statements):
        if id(node) in skipped:
            continue
        if n == name:
            if not read:
                return None  # re-bound: what the caller passed is gone
            if _tests_only(anchor, node):
                continue
            if isinstance(anchor, cst.Assign) and anchor.value is node:
                for target in anchor.targets:
                    for element, stored, _, _ in _stores(target.target, anchor):
                        elements.add(element)
                        unpacked.add(id(stored))
                continue
            return node, anchor
        if n in elements:
            if not read:
                if id(node) not in unpacked:
                    elements.discard(n)
                continue
            return node, anchor
    return None


def _tests_only(anchor: cst.CSTNode, node: cst.Name) -> bool:
    """``size is None``, ``isinstance(size, ...)``, ``len(size)``: the sequence's identity, type or length."""
    if isinstance(anchor, cst.Comparison):
        return all(isinstance(c.operator, (cst.Is, cst.IsNot)) for c in anchor.comparisons)
    if isinstance(anchor, cst.Call) and isinstance(anchor.func, cst.Name) and anchor.func.value in ("isinstance", "len"):
        return bool(anchor.args) and anchor.args[0].value is node
    return False


def _under_none_test(statements, name: str) -> Iterator[cst.CSTNode]:
    """The nodes of the bodies of ``if <name> is None:`` statements among ``statements``."""
    for node in _preorder(statements):
        if isinstance(node, cst.If) and _is_none_test(node.test, name):
            yield from _preorder([node.body])


def _is_none_test(test: cst.CSTNode, name: str) -> bool:
    return (
        isinstance(test, cst.Comparison) and isinstance(test.left, cst.Name) and test.left.value == name
        and len(test.comparisons) == 1 and isinstance(test.comparisons[0].operator, cst.Is)
        and isinstance(test.comparisons[0].comparator, cst.Name) and test.comparisons[0].comparator.value == "None"
    )


def first_reads(items, names=None, passed_on=None) -> list[tuple[str, cst.Name, cst.CSTNode]]:
    """(name, the read, where its value is used: ``name_events``) for each read of ``items`` (nodes, or
    (node, anchor) pairs; of ``names`` only, when given) that is the first occurrence of its name on some
    path through them: a name bound first is a new value, not one that crossed into the frame. The two
    arms of an ``if`` are two paths (PyG's ``add_remaining_self_loops`` reads ``N`` first in an
    ``isinstance(edge_index, EdgeIndex)`` arm, and for a plain tensor in the ``else``: the guard is on the
    path taken); a loop's body counts as run. ``passed_on(call)``: a read that is an argument of such a
    call does not count (the callee, inlined, reads it: its guard is there)."""
    out: list[tuple[str, cst.Name, cst.CSTNode]] = []
    _walk_items(items, frozenset(), _Wanted(names, passed_on), out)
    return out


class _Wanted:
    """Which reads ``first_reads`` looks for."""

    __slots__ = ("names", "passed_on")

    def __init__(self, names, passed_on) -> None:
        self.names, self.passed_on = names, passed_on

    def passes_on(self, read: cst.Name, anchor: cst.CSTNode) -> bool:
        """``read`` is an argument of a call ``passed_on`` names."""
        return (
            self.passed_on is not None and isinstance(anchor, cst.Call) and self.passed_on(anchor)
            and any(a.value is read for a in anchor.args)
        )


def _walk_items(items, seen: frozenset, names, out: list) -> frozenset:
    for item in items:
        node, anchor = item if isinstance(item, tuple) else (item, None)
        seen = _walk_node(node, anchor, seen, names, out)
    return seen


def _walk_node(node: cst.CSTNode, anchor: Optional[cst.CSTNode], seen: frozenset, names, out: list) -> frozenset:
    if isinstance(node, cst.If):
        seen = _linear(_events(node.test, node.test), seen, names, out)
        taken = _walk_items(node.body.body, seen, names, out)
        if node.orelse is None:
            other = seen
        elif isinstance(node.orelse, cst.If):  # `elif`
            other = _walk_node(node.orelse, None, seen, names, out)
        else:
            other = _walk_items(node.orelse.body.body, seen, names, out)
        return taken & other  # seen on every path
    if isinstance(node, (cst.For, cst.While, cst.With, cst.Try)):
        if isinstance(node, cst.For):
            seen = _linear(_events(node.iter, node.iter), seen, names, out)
            seen = _linear(_stores(node.target, node.iter), seen, names, out)
        else:
            for part in header_nodes(node):
                seen = _linear(_events(part, part), seen, names, out)
        for block in compound_blocks(node):
            seen = _walk_items(block.body, seen, names, out)
        return seen
    return _linear(name_events([(node, anchor) if anchor is not None else node]), seen, names, out)


def _linear(events, seen: frozenset, wanted: "_Wanted", out: list) -> frozenset:
    added: set[str] = set()
    for name, at, read, anchor in events:
        if name in seen or name in added or (wanted.names is not None and name not in wanted.names):
            continue
        if read and wanted.passes_on(at, anchor):
            continue  # not seen yet: the next read on this path counts
        added.add(name)
        if read:
            out.append((name, at, anchor))
    return seen | added if added else seen
