"""Abstract values of expressions on CPython ``ast``, symbolic in what one function cannot know alone.

A value is a frozenset of *atoms*; it may be a tensor when any atom resolves to one:

- ``TENSOR``: a tensor by its own form (``torch.zeros(...)``, ``x.view(...)`` of a tensor...);
- ``("param", name)``: whatever the parameter ``name`` holds (decided by the callers, interprocedurally);
- ``("self-call", attr)``: the result of ``self.attr(...)`` (a tensor when ``attr`` is a submodule);
- ``("self-attr", attr)``: ``self.attr`` (a tensor when it is a parameter, buffer or tensor attribute);
- ``("call", name)``: the result of ``name(...)`` / ``mod.name(...)`` as written (a tensor when the
  project function it resolves to returns one);
- ``("items", value)``: a list, tuple, set or dict display whose items (a dict's values) have ``value``:
  never a tensor itself, but an item taken from it (``parts[0]``, ``feats["a"]``, ``for p in parts``) is.

The empty set means "not known to be a tensor": Python numbers, shapes, strings, lists, ``None``,
results of unknown calls. Values are computed once per function when its file is summarised and
resolved later by ``fusionlint.project.model.Project``, which knows the callers and the classes.
"""

from __future__ import annotations

import ast
from typing import Callable, Optional

from fusionlint.analysis.names import through_aliases
from fusionlint.semantic.tensors import (
    NON_TENSOR_ATTRS,
    NON_TENSOR_METHODS,
    SEQUENCE_METHODS,
    TENSOR_ATTRS,
    is_tensor_api,
    torch_call_returns_tensor,
)

TENSOR = "tensor"
# builtins whose result is never a project function's return value
_BUILTINS = frozenset(
    {"len", "range", "isinstance", "int", "float", "bool", "str", "tuple", "list", "dict", "set", "zip", "enumerate",
     "getattr", "hasattr", "max", "min", "sum", "abs", "round", "any", "all", "map", "sorted", "super", "type",
     "iter", "next", "reversed", "repr", "id", "callable", "divmod", "pow", "format", "vars", "print"}
)
Value = frozenset
NOTHING: Value = frozenset()
_TENSOR_VALUE: Value = frozenset({TENSOR})


def dotted(node: ast.expr) -> Optional[str]:
    # exact types: CPython's parser makes no subclasses of its node classes (and most calls are a name)
    kind = type(node)
    if kind is ast.Name:
        return node.id
    parts = []
    while kind is ast.Attribute:
        parts.append(node.attr)
        node = node.value
        kind = type(node)
    if kind is not ast.Name:
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def resolve(node: ast.expr, aliases: dict[str, str]) -> Optional[str]:
    """The dotted name of an ``ast`` expression, through the file's import aliases."""
    name = dotted(node)
    return None if name is None else through_aliases(name, aliases)


class LocalValues:
    """Values of the local names of one function: flow-insensitive, iterated to a fixpoint.

    ``resolve_name`` maps a dotted name through the file's imports (``F.relu`` -> ``torch.nn.functional.relu``).
    """

    def __init__(self, params: list[str], aliases: dict[str, str]) -> None:
        self.aliases = aliases
        self.env: dict[str, Value] = {p: frozenset({("param", p)}) for p in params}
        self.params = frozenset(params)

    def bind(self, target: ast.expr, value: Value) -> bool:
        """Join ``value`` into the names ``target`` binds; True when something changed (unpacking takes
        the items of a display: ``a, b = parts``)."""
        if isinstance(target, ast.Name):
            old = self.env.get(target.id, NOTHING)
            new = old | value
            if new != old:
                self.env[target.id] = new
                return True
            return False
        if isinstance(target, (ast.Tuple, ast.List)):
            # unpacking a tensor walks its first dimension: every element is a tensor
            changed = False
            value = items_of(value)
            for element in target.elts:
                if isinstance(element, ast.Starred):
                    element = element.value
                changed |= self.bind(element, value)
            return changed
        return False

    def of(self, node: ast.expr) -> Value:
        kind = type(node)  # exact types, as in dotted
        if kind is ast.Name:
            return self.env.get(node.id, NOTHING)
        if kind is ast.Attribute:
            base = node.value
            if isinstance(base, ast.Name) and base.id == "self":
                return frozenset({("self-attr", node.attr)})
            if node.attr in TENSOR_ATTRS:
                return self.of(base)
            return NOTHING
        if kind is ast.Call:
            return self._call(node)
        if kind is ast.BinOp:
            return self.of(node.left) | self.of(node.right)
        if kind is ast.UnaryOp:
            return NOTHING if isinstance(node.op, ast.Not) else self.of(node.operand)
        if kind is ast.Compare:
            if any(isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)) for op in node.ops):
                return NOTHING
            out = self.of(node.left)
            for comparator in node.comparators:
                out = out | self.of(comparator)
            return out
        if kind is ast.Subscript:
            base = self.of(node.value)
            return base if isinstance(node.slice, ast.Slice) else items_of(base)
        if kind is ast.List or kind is ast.Tuple or kind is ast.Set:
            return _items(self.of(e.value if isinstance(e, ast.Starred) else e) for e in node.elts)
        if kind is ast.Dict:
            return _items(self.of(v) for v in node.values)
        if kind is ast.IfExp:
            return self.of(node.body) | self.of(node.orelse)
        if kind is ast.NamedExpr:
            return self.of(node.value)
        return NOTHING

    def _call(self, node: ast.Call) -> Value:
        func = node.func
        if isinstance(func, ast.Attribute):
            recv = func.value
            if isinstance(recv, ast.Name) and recv.id == "self":
                return frozenset({("self-call", func.attr)})
            head = recv
            while isinstance(head, ast.Attribute):
                head = head.value
            if not (isinstance(head, ast.Name) and head.id in self.aliases and head.id not in self.env):
                method = func.attr
                if method in NON_TENSOR_METHODS or method in SEQUENCE_METHODS or not is_tensor_api(method):
                    return NOTHING
                return self.of(recv)
        qual = resolve(func, self.aliases)
        if qual is not None and torch_call_returns_tensor(qual):
            return _TENSOR_VALUE
        written = dotted(func)
        if written is not None and written.split(".", 1)[0] not in self.env and written not in _BUILTINS:
            # a helper's result: the project model decides from what the helper returns
            return frozenset({("call", written)})
        return NOTHING


def function_values(fn: ast.FunctionDef | ast.AsyncFunctionDef, params: list[str], aliases: dict[str, str],
                    body_nodes: list[ast.AST]) -> LocalValues:
    """The LocalValues of ``fn`` given the nodes of its own body (nested defs excluded)."""
    values = LocalValues(params, aliases)
    pairs: list[tuple[ast.expr, ast.expr]] = []
    for node in body_nodes:
        if isinstance(node, ast.Assign):
            pairs.extend((t, node.value) for t in node.targets)
        elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
            pairs.append((node.target, node.value))
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            pairs.append((node.target, node.iter))
        elif isinstance(node, ast.comprehension):
            pairs.append((node.target, node.iter))
    loops = {id(n.target) for n in body_nodes if isinstance(n, (ast.For, ast.AsyncFor, ast.comprehension))}
    for _ in range(3):
        changed = False
        for target, value in pairs:
            found = values.of(value)
            if id(target) in loops:
                found = items_of(found)  # `for p in parts`: an item (a tensor's row stays a tensor)
            changed |= values.bind(target, found)
        if not changed:
            break
    return values


def _items(values) -> Value:
    inner: Value = NOTHING
    for v in values:
        inner = inner | v
    return frozenset({("items", inner)}) if inner else NOTHING


def _is_items(atom) -> bool:
    return type(atom) is tuple and atom[0] == "items"


def items_of(value: Value) -> Value:
    """What an item of ``value`` may be: a display's items; a tensor's row (or anything else) as itself."""
    if not any(_is_items(atom) for atom in value):
        return value
    out: set = set()
    for atom in value:
        if _is_items(atom):
            out.update(atom[1])
        else:
            out.add(atom)
    return frozenset(out)


def holds_no_tensor(value: Value) -> bool:
    """Not a tensor by any atom (a display of tensors is not one)."""
    return all(_is_items(atom) for atom in value)


def resolves_to_tensor(value: Value, atom_is_tensor: Callable[[object], bool]) -> bool:
    return any(atom == TENSOR or atom_is_tensor(atom) for atom in value)
