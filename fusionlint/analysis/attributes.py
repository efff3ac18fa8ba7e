"""Facts about ``self.<attr>`` of a module class: which attributes hold Python numbers, how compiled
code reads one (operator, scalar argument of an op, index...), and where the program changes it.

Shared by FL201 (changed between calls), FL203 (changed inside compiled code) and FL901 (never
changed); the buffer fix FL201 and FL203 offer is ``fusionlint.analysis.buffer_fix``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator, Optional

import libcst as cst

from fusionlint.semantic.tensors import torch_call_returns_tensor
from fusionlint.analysis.walk import children, iter_nodes

# ---------------------------------------------------------------------------------------------
# Which op arguments take a Python *Scalar* (not a tensor operand).
#
# Measured on torch 2.13.0+cpu (mutating a float attribute between 10 calls): a float passed in one
# of these positions cannot be "tensorified" by dynamo, so it stays a guarded constant and every
# new value recompiles until recompile_limit (8), after which the frame runs eager. The same float
# as an operand of `*`, `+`, `-`, `/`, a comparison, `x.mul(t)`, `F.leaky_relu/elu/softplus/threshold`
# became a dynamic input after one recompile (not flagged).
#
# name -> (positional indices, keywords, a 0-d tensor works there without a graph break)
_METHOD_SCALAR_ARGS: dict[str, tuple[tuple[int, ...], tuple[str, ...], bool]] = {
    "clamp": ((0, 1), ("min", "max"), True),
    "clamp_": ((0, 1), ("min", "max"), True),
    "clip": ((0, 1), ("min", "max"), True),
    "clip_": ((0, 1), ("min", "max"), True),
    "pow": ((0,), ("exponent",), True),
    "pow_": ((0,), ("exponent",), True),
    "masked_fill": ((1,), ("value",), True),
    "masked_fill_": ((1,), ("value",), True),
    "lerp": ((1,), ("weight",), True),
    "lerp_": ((1,), ("weight",), True),
    "add": ((), ("alpha",), False),
    "add_": ((), ("alpha",), False),
    "sub": ((), ("alpha",), False),
    "sub_": ((), ("alpha",), False),
}
_FUNCTION_SCALAR_ARGS: dict[str, tuple[tuple[int, ...], tuple[str, ...], bool]] = {
    "torch.clamp": ((1, 2), ("min", "max"), True),
    "torch.clip": ((1, 2), ("min", "max"), True),
    "torch.pow": ((1,), ("exponent",), True),
    "torch.masked_fill": ((2,), ("value",), True),
    "torch.lerp": ((2,), ("weight",), True),
    "torch.add": ((), ("alpha",), False),
    "torch.sub": ((), ("alpha",), False),
    "torch.full_like": ((1,), ("fill_value",), False),
    "torch.nn.functional.hardtanh": ((1, 2), ("min_val", "max_val"), False),
    "torch.nn.functional.dropout": ((1,), ("p",), False),
}
# Bounds of clamp/clip: a tensor bound mixed with a Python-number bound makes dynamo call .item()
# (measured: `x.clamp(0.0, buf)` breaks the graph, GB0033), so the fix needs every bound to be ours.
_BOUND_CALLS = frozenset({"clamp", "clamp_", "clip", "clip_", "torch.clamp", "torch.clip"})

# Receivers of `obj.attr = ...` that are configuration objects (or an autograd ctx), not the module.
_CONFIG_RECEIVERS = frozenset(
    {"args", "cfg", "config", "conf", "opt", "opts", "options", "hparams", "hp", "params", "settings", "ns", "namespace",
     "flags", "FLAGS", "ctx"}
)


@dataclass
class Use:
    """How one read of ``self.<attr>`` meets tensors."""

    site: cst.CSTNode  # the expression to report (call, operator, subscript)
    kind: str  # "scalar-arg" | "arith" | "call-arg" | "index"
    op: str  # short text for messages: "clamp", "*", "indexing"
    derived: bool  # Python arithmetic on the number came first (`1.0 / self.t`)
    fixable: bool  # a 0-d tensor in this place keeps the meaning and traces without a break


def self_attr(node: cst.CSTNode) -> Optional[str]:
    """``attr`` for ``self.attr``, else None."""
    if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == "self":
        return node.attr.value
    return None


def _mentions(expr: cst.CSTNode, attr: str) -> bool:
    if self_attr(expr) == attr:
        return True
    return any(self_attr(n) == attr for n in iter_nodes(expr, (cst.Attribute,), into_nested_defs=True))


def _positional_index(call: cst.Call, arg: cst.Arg) -> Optional[int]:
    i = 0
    for a in call.args:
        if a.keyword is not None or a.star:
            if a is arg:
                return None
            continue
        if a is arg:
            return i
        i += 1
    return None


def _bounds_all_ours(call: cst.Call, attr: str, positions: tuple[int, ...], keywords: tuple[str, ...]) -> bool:
    for a in call.args:
        if a.star:
            return False
        kw = a.keyword.value if a.keyword is not None else None
        in_bounds = kw in keywords if kw is not None else _positional_index(call, a) in positions
        if in_bounds and not (isinstance(a.value, cst.Name) and a.value.value == "None") and not _mentions(a.value, attr):
            return False
    return True


def classify_use(
    node: cst.Attribute,
    parents: tuple[cst.CSTNode, ...],
    is_tensor: Callable[[cst.BaseExpression], bool],
    qualname: Callable[[cst.BaseExpression], Optional[str]],
) -> Optional[Use]:
    """How the read ``node`` (``self.attr``) meets tensor code; None when it stays plain Python."""
    attr = node.attr.value
    cur: cst.CSTNode = node
    derived = False
    for i, parent in enumerate(parents):
        if isinstance(parent, cst.UnaryOperation) and isinstance(parent.operator, (cst.Minus, cst.Plus)):
            cur = parent
            continue
        if isinstance(parent, cst.BinaryOperation):
            other = parent.right if parent.left is cur else parent.left
            if is_tensor(other):
                if isinstance(parent.operator, cst.Power) and parent.right is cur:
                    return Use(parent, "scalar-arg", "**", derived, True)
                return Use(parent, "arith", _op_text(parent.operator), derived, True)
            derived = True
            cur = parent
            continue
        if isinstance(parent, cst.ComparisonTarget):
            continue  # the Comparison above decides
        if isinstance(parent, cst.Comparison):
            operands = [parent.left] + [c.comparator for c in parent.comparisons]
            if any(isinstance(c.operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn)) for c in parent.comparisons):
                return None
            if any(o is not cur and is_tensor(o) for o in operands):
                return Use(parent, "arith", "comparison", derived, True)
            return None
        if isinstance(parent, cst.Arg):
            call = parents[i + 1] if i + 1 < len(parents) else None
            if not isinstance(call, cst.Call) or parent.star:
                return None
            return _classify_arg(call, parent, attr, derived, is_tensor, qualname)
        if isinstance(parent, (cst.Index, cst.Slice)):
            sub_el = parents[i + 1] if i + 1 < len(parents) else None
            sub = parents[i + 2] if i + 2 < len(parents) else None
            if isinstance(sub_el, cst.SubscriptElement) and isinstance(sub, cst.Subscript) and is_tensor(sub.value):
                return Use(sub, "index", "indexing", derived, False)
            return None
        return None
    return None


def _op_text(op: cst.BaseBinaryOp) -> str:
    return {
        cst.Add: "+", cst.Subtract: "-", cst.Multiply: "*", cst.Divide: "/", cst.FloorDivide: "//",
        cst.Modulo: "%", cst.Power: "**", cst.MatrixMultiply: "@",
    }.get(type(op), "operator")


def _classify_arg(call, arg, attr, derived, is_tensor, qualname) -> Optional[Use]:
    kw = arg.keyword.value if arg.keyword is not None else None
    pos = _positional_index(call, arg)
    func = call.func
    table_entry = None
    name = None
    tensor_call = False
    if isinstance(func, cst.Attribute) and is_tensor(func.value):
        name = func.attr.value
        table_entry = _METHOD_SCALAR_ARGS.get(name)
        tensor_call = True
    else:
        qual = qualname(func) or ""
        if qual:
            name = qual
            table_entry = _FUNCTION_SCALAR_ARGS.get(qual)
            tensor_call = torch_call_returns_tensor(qual)
            if table_entry is not None and qual != "torch.full_like":
                # the op must actually get a tensor (`torch.clamp(x, ...)`): check its first argument
                first = call.args[0].value if call.args and not call.args[0].keyword else None
                if first is None or not is_tensor(first):
                    table_entry = None
    short = (name or "call").rsplit(".", 1)[-1]
    if table_entry is not None:
        positions, keywords, fixable = table_entry
        if (kw is not None and kw in keywords) or (kw is None and pos is not None and pos in positions):
            if fixable and name in _BOUND_CALLS:
                fixable = _bounds_all_ours(call, attr, positions, keywords)
            return Use(call, "scalar-arg", short, derived, fixable)
    if tensor_call:
        return Use(call, "call-arg", short, derived, False)
    return None


# ---------------------------------------------------------------------------------------------
# Which attributes hold Python numbers


def scalar_kind(cls, attr: str) -> Optional[str]:
    """"int" / "float" when ``__init__`` sets ``self.attr`` to a Python number, else None.

    A numeric literal (``self.t = 5.0``), or an ``__init__`` parameter with a numeric default
    or an ``int``/``float`` annotation (``def __init__(self, threshold=5.0): self.threshold = threshold``).
    Read from the described writes (fusionlint.analysis.init_facts), not from ``__init__``'s nodes.
    """
    if cls is None:
        return None
    if attr in cls.int_attrs:
        return "int"
    if attr in cls.scalar_attrs:
        return "float"
    if cls.init_params is None:
        return None
    value = next((w.value for w in cls.init_writes.get(attr, ()) if w.stmt != "augassign"), None)
    if value is None or value.kind != "name":
        return None
    param = cls.init_params.get(value.name)
    if param is None:
        return None
    annotation, default = param
    if annotation is not None:
        return annotation if annotation in ("int", "float") else None
    return default


def init_writes(cls, attr: str) -> list[cst.CSTNode]:
    return [node for method, node in cls.self_attr_writes.get(attr, ()) if method == "__init__"]


def function_of(ctx, cls, method: str, node: cst.CSTNode):
    """The FunctionInfo of class ``cls`` named ``method`` whose body holds ``node`` (nested defs too)."""
    candidates = [fn for fn in ctx.file.functions.values() if fn.cls is cls and fn.name == method]
    if len(candidates) == 1:
        return candidates[0]
    for fn in candidates:
        if any(n is node for n in iter_nodes(fn.node, (type(node),), into_nested_defs=True)):
            return fn
    return candidates[0] if candidates else None


@dataclass
class Writes:
    """Every place that changes ``self.attr`` after ``__init__``."""

    in_class: list[tuple[str, cst.CSTNode, bool]] = field(default_factory=list)  # (method, stmt, compiled)
    same_file: list[cst.CSTNode] = field(default_factory=list)  # `model.attr op= ...` statements here
    other_files: list[tuple[str, int]] = field(default_factory=list)

    @property
    def outside_compiled(self) -> bool:
        return any(not c for _, _, c in self.in_class) or bool(self.same_file) or bool(self.other_files)

    def where(self, cls_name: str) -> str:
        """A phrase naming the first write that matters: "in `Model.anneal`", "by `model.t = v`"..."""
        for method, _, compiled in self.in_class:
            if not compiled:
                return f"in `{cls_name}.{method}`"
        if self.same_file:
            return f"by `{code_of(self.same_file[0]).strip()}`"
        if self.other_files:
            path, line = self.other_files[0]
            return f"at {path}:{line}"
        return "in compiled code"


def code_of(node: cst.CSTNode) -> str:
    return cst.Module([]).code_for_node(node)


def write_target(stmt: cst.CSTNode) -> Optional[cst.BaseExpression]:
    if isinstance(stmt, cst.Assign) and len(stmt.targets) == 1:
        return stmt.targets[0].target
    if isinstance(stmt, (cst.AugAssign, cst.AnnAssign)):
        return stmt.target
    return None


def _receiver_root(expr: cst.BaseExpression) -> Optional[str]:
    while isinstance(expr, (cst.Attribute, cst.Subscript, cst.Call)):
        expr = expr.value if not isinstance(expr, cst.Call) else expr.func
    return expr.value if isinstance(expr, cst.Name) else None


class FileFacts:
    """Per file: writes and reads of attribute names on objects other than ``self`` (``model.t = v``),
    and every statement assigning ``self.<name>`` in any class of the file."""

    def __init__(self, sites: Iterable[tuple[cst.Attribute, Optional[cst.CSTNode]]]) -> None:
        self.writes: dict[str, list[cst.CSTNode]] = {}
        self.reads: dict[str, list[cst.Attribute]] = {}
        self.self_writes: dict[str, list[cst.CSTNode]] = {}
        self.unparsed_targets: set[str] = set()
        for node, stmt in sites:
            if self_attr(node) is not None:
                if stmt is not None:
                    self.self_writes.setdefault(node.attr.value, []).append(stmt)
                continue
            if stmt is not None:  # `obj.attr = ...`, `obj.attr op= ...`, `obj.attr: T = ...`
                root = _receiver_root(node.value)
                if root in _CONFIG_RECEIVERS or root == "self":
                    continue  # a config object, or `self.sub.attr = ...` of some other object: not counted
                if isinstance(stmt, cst.Assign) and len(stmt.targets) != 1:
                    self.unparsed_targets.add(node.attr.value)
                self.writes.setdefault(node.attr.value, []).append(stmt)
                continue
            if _receiver_root(node.value) in _CONFIG_RECEIVERS:
                continue
            if isinstance(node.value, cst.Name) and node.value.value in ("torch", "np", "math", "F", "nn"):
                continue  # module attributes (`torch.float32`), never the model
            self.reads.setdefault(node.attr.value, []).append(node)


def _attribute_sites(ctx) -> Iterator[tuple[cst.Attribute, Optional[cst.CSTNode]]]:
    """(every ``x.y`` of the file in walk order, the statement assigning to it when it is a target).

    From the engine's records when it kept ``Attribute`` nodes (FL201 and FL901 ask for them), else
    from one walk. A statement comes before the nodes inside it, so its targets are known in time.
    """
    records = ctx.file.records.get("Attribute")
    if records is not None:
        for rec in records:
            yield rec.node, _assigned_by(rec.node, rec.parents)
        return
    stmt_of: dict[int, cst.CSTNode] = {}
    kinds = (cst.Assign, cst.AugAssign, cst.AnnAssign, cst.Attribute)
    for node in iter_nodes(ctx.module, kinds, into_nested_defs=True):
        if isinstance(node, cst.Attribute):
            yield node, stmt_of.get(id(node))
        elif isinstance(node, cst.Assign):
            for target in node.targets:
                stmt_of[id(target.target)] = node
        else:
            stmt_of[id(node.target)] = node


def _assigned_by(node: cst.Attribute, parents) -> Optional[cst.CSTNode]:
    """The Assign/AugAssign/AnnAssign whose target ``node`` is (``parents``: a ParentLink), else None."""
    if parents is None:
        return None
    parent = parents[0]
    if isinstance(parent, cst.AssignTarget):
        return parents[1][0] if parent.target is node else None
    if isinstance(parent, (cst.AugAssign, cst.AnnAssign)) and parent.target is node:
        return parent
    return None


def file_facts(ctx) -> FileFacts:
    return ctx.memo("attribute-file-facts", lambda: FileFacts(_attribute_sites(ctx)))


def _surgery_methods(ctx, cls) -> frozenset[str]:
    """Methods that also replace a submodule or a parameter (timm's ``prune_intermediate_layers``,
    ``reset_classifier``): they change the model's structure once, before it is compiled or between
    uses, and a new submodule recompiles anyway; a scalar attribute they set is configuration."""
    return ctx.memo(
        ("surgery-methods", id(cls)),
        lambda: frozenset(
            method
            for name, methods in cls.write_methods().items()
            if name in cls.submodules or name in cls.params
            for method in methods
            if method != "__init__"
        ),
    )


def collect_writes(ctx, cls, attr: str) -> Writes:
    """Every change of ``self.attr`` of class ``cls`` after ``__init__`` (computed once per file)."""
    return ctx.memo(("attribute-writes", id(cls), attr), lambda: _collect_writes(ctx, cls, attr))


def _collect_writes(ctx, cls, attr: str) -> Writes:
    out = Writes()
    surgery = _surgery_methods(ctx, cls)
    for method, stmt in cls.writes_outside_init(attr):
        fn = function_of(ctx, cls, method, stmt)
        compiled = bool(fn is not None and fn.compiled)
        if method in surgery and not compiled:
            continue
        out.in_class.append((method, stmt, compiled))
    out.same_file = list(file_facts(ctx).writes.get(attr, ()))
    # `obj.<attr> = ...` in another file of the run. The project index knows only (path, line), and
    # names such as `dim`, `groups`, `min_val` collide all the time (torch 2.13's own sources: all
    # 10 findings they caused were writes to other objects), so another file's write counts only
    # when the index can tell that the file uses this class (ProjectIndex.file_mentions, if any).
    mentions = getattr(ctx.project, "file_mentions", None)
    if mentions is not None:
        for entry in ctx.project.attribute_writes.get(attr, ()):
            path, line = entry[0], entry[1]
            if path != ctx.path and mentions(path, cls.name):
                out.other_files.append((path, line))
    return out


# ---------------------------------------------------------------------------------------------
# Every read of self.attr in a class, classified (for the fix's safety check)


def walk_with_parents(root: cst.CSTNode, want: Callable[[cst.CSTNode], bool]):
    """(node, parents nearest-first, enclosing FunctionDef) for every node ``want`` accepts."""
    out = []
    stack: list[tuple[cst.CSTNode, tuple, Optional[cst.FunctionDef]]] = [(root, (), None)]
    while stack:
        node, parents, fn = stack.pop()
        if want(node):
            out.append((node, parents, fn))
        inner_fn = node if isinstance(node, cst.FunctionDef) else fn
        for kid in children(node):
            stack.append((kid, (node,) + parents, inner_fn))
    return out


def class_reads(ctx, cls, attr: str):
    """[(read node, parents, FunctionInfo or None)] for every ``self.attr`` in the class that is not a write target."""
    if cls.blanked is not None:  # the reads in the methods the sparse plan left out are not in cls.node
        cls.blanked.inexact.hit(f"{cls.name}: every read of self.{attr} asked for")
    by_node = {id(fn.node): fn for fn in ctx.file.functions.values()}
    targets = set()
    for _, stmt in cls.self_attr_writes.get(attr, ()):
        t = write_target(stmt)
        if t is not None:
            targets.add(id(t))
    found = walk_with_parents(cls.node, lambda n: self_attr(n) == attr and id(n) not in targets)
    return [(node, parents, by_node.get(id(fn)) if fn is not None else None) for node, parents, fn in found]


# ---------------------------------------------------------------------------------------------
# The torch version the findings are judged against (gates the one form whose cost differs)


def target_torch(ctx) -> tuple[int, int]:
    """The run's ``target-torch`` (fusionlint.torch_target), handed to the rule context by the engine."""
    return ctx.torch_version


def recompiles_every_value(use: Use, kind: str, ctx) -> bool:
    """Does changing a Python number read this way recompile on every new value (measured)?"""
    if kind == "int":
        return True  # int attributes of an nn.Module are static: guarded by value in any use
    if use.kind == "scalar-arg":
        return True
    if use.kind == "arith" and use.derived:
        return target_torch(ctx) < (2, 13)  # 2.11 (CPU+H200): every call; 2.13: once
    return False
