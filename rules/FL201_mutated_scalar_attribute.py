"""FL201 mutated-scalar-attribute: a Python number attribute that torch.compile guards on, changed between calls.

Also home of the helpers FL203 and FL901 share: which ``self.<attr>`` are Python numbers, how a read
of one is used (operator, scalar argument of an op, index...), and the buffer fix.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Callable, Optional

import libcst as cst

from fusionlint.analysis.tensors import torch_call_returns_tensor
from fusionlint.analysis.walk import children, iter_nodes
from fusionlint.rule import Applicability, Effect, Invalid, Rule

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
_AUG_METHODS = {cst.AddAssign: "add_", cst.SubtractAssign: "sub_", cst.MultiplyAssign: "mul_", cst.DivideAssign: "div_"}


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


_IS_COMPILING = frozenset(
    {"torch.compiler.is_compiling", "torch._dynamo.is_compiling", "torch.compiler.is_dynamo_compiling", "torch._utils.is_compiling"}
)


def skipped_while_compiling(parents: tuple[cst.CSTNode, ...], qualname) -> bool:
    """True inside ``if not torch.compiler.is_compiling():`` (or the ``else`` of ``if is_compiling():``):
    dynamo takes the other branch, so the code there is never traced."""
    child = None
    for parent in parents:
        if isinstance(parent, cst.If) and child is not None:
            test = parent.test
            negated = isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not)
            call = test.expression if negated else test
            if isinstance(call, cst.Call) and qualname(call.func) in _IS_COMPILING:
                in_body = child is parent.body
                if in_body == negated:
                    return True
        child = parent
    return False


# ---------------------------------------------------------------------------------------------
# Which attributes hold Python numbers


def scalar_kind(cls, attr: str) -> Optional[str]:
    """"int" / "float" when ``__init__`` sets ``self.attr`` to a Python number, else None.

    A numeric literal (``self.t = 5.0``), or an ``__init__`` parameter with a numeric default
    or an ``int``/``float`` annotation (``def __init__(self, threshold=5.0): self.threshold = threshold``).
    """
    if cls is None:
        return None
    if attr in cls.int_attrs:
        return "int"
    if attr in cls.scalar_attrs:
        return "float"
    init = cls.methods.get("__init__")
    if init is None:
        return None
    value = init_value(cls, attr)
    if isinstance(value, cst.Name):
        param = _init_param(init.node, value.value)
        if param is None:
            return None
        if param.annotation is not None:
            text = cst.Module([]).code_for_node(param.annotation.annotation).strip()
            if text in ("int", "float"):
                return text
            return None
        default = param.default
        if isinstance(default, cst.UnaryOperation) and isinstance(default.operator, cst.Minus):
            default = default.expression
        if isinstance(default, cst.Float):
            return "float"
        if isinstance(default, cst.Integer):
            return "int"
    return None


def _init_param(fn: cst.FunctionDef, name: str) -> Optional[cst.Param]:
    params = fn.params
    for p in list(params.posonly_params) + list(params.params) + list(params.kwonly_params):
        if p.name.value == name:
            return p
    return None


def init_writes(cls, attr: str) -> list[cst.CSTNode]:
    return [node for method, node in cls.self_attr_writes.get(attr, ()) if method == "__init__"]


def init_value(cls, attr: str) -> Optional[cst.BaseExpression]:
    for node in init_writes(cls, attr):
        if isinstance(node, (cst.Assign, cst.AnnAssign)) and node.value is not None:
            return node.value
    return None


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
            return f"by `{_code(self.same_file[0]).strip()}`"
        if self.other_files:
            path, line = self.other_files[0]
            return f"at {path}:{line}"
        return "in compiled code"


def _code(node: cst.CSTNode) -> str:
    return cst.Module([]).code_for_node(node)


def _write_target(stmt: cst.CSTNode) -> Optional[cst.BaseExpression]:
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
    """Per-file, per-rule-instance cache: non-self writes/reads of attribute names in this file."""

    def __init__(self, module: cst.Module) -> None:
        self.writes: dict[str, list[cst.CSTNode]] = {}
        self.reads: dict[str, list[cst.Attribute]] = {}
        self.unparsed_targets: set[str] = set()
        targets: set[int] = set()
        for stmt in iter_nodes(module, (cst.Assign, cst.AugAssign, cst.AnnAssign), into_nested_defs=True):
            tgts = stmt.targets if isinstance(stmt, cst.Assign) else [stmt]
            for t in tgts:
                target = t.target
                if isinstance(target, cst.Attribute) and self_attr(target) is None:
                    root = _receiver_root(target.value)
                    if root in _CONFIG_RECEIVERS or root == "self":
                        # a config object, or `self.sub.attr = ...` of some other object: not counted
                        targets.add(id(target))
                        continue
                    targets.add(id(target))
                    if isinstance(stmt, cst.Assign) and len(stmt.targets) != 1:
                        self.unparsed_targets.add(target.attr.value)
                    self.writes.setdefault(target.attr.value, []).append(stmt)
        for node in iter_nodes(module, (cst.Attribute,), into_nested_defs=True):
            if id(node) in targets or self_attr(node) is not None:
                continue
            if _receiver_root(node.value) in _CONFIG_RECEIVERS:
                continue
            if isinstance(node.value, cst.Name) and node.value.value in ("torch", "np", "math", "F", "nn"):
                continue  # module attributes (`torch.float32`), never the model
            self.reads.setdefault(node.attr.value, []).append(node)


def file_facts(rule: Rule, ctx) -> FileFacts:
    facts = getattr(rule, "_fl2_file_facts", None)
    if facts is None:
        facts = FileFacts(ctx.module)
        rule._fl2_file_facts = facts  # type: ignore[attr-defined]
    return facts


def _surgery_methods(cls) -> frozenset[str]:
    """Methods that also replace a submodule or a parameter (timm's ``prune_intermediate_layers``,
    ``reset_classifier``): they change the model's structure once, before it is compiled or between
    uses, and a new submodule recompiles anyway; a scalar attribute they set is configuration."""
    found = getattr(cls, "_fl2_surgery", None)
    if found is None:
        found = frozenset(
            method
            for name, writes in cls.self_attr_writes.items()
            if name in cls.submodules or name in cls.params
            for method, _ in writes
            if method != "__init__"
        )
        cls._fl2_surgery = found
    return found


def collect_writes(rule: Rule, ctx, cls, attr: str) -> Writes:
    out = Writes()
    surgery = _surgery_methods(cls)
    for method, stmt in cls.self_attr_writes.get(attr, ()):
        if method == "__init__":
            continue
        fn = function_of(ctx, cls, method, stmt)
        compiled = bool(fn is not None and fn.compiled)
        if method in surgery and not compiled:
            continue
        out.in_class.append((method, stmt, compiled))
    out.same_file = list(file_facts(rule, ctx).writes.get(attr, ()))
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


def _walk_with_parents(root: cst.CSTNode, want: Callable[[cst.CSTNode], bool]):
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
    by_node = {id(fn.node): fn for fn in ctx.file.functions.values()}
    targets = set()
    for _, stmt in cls.self_attr_writes.get(attr, ()):
        t = _write_target(stmt)
        if t is not None:
            targets.add(id(t))
    found = _walk_with_parents(cls.node, lambda n: self_attr(n) == attr and id(n) not in targets)
    return [(node, parents, by_node.get(id(fn)) if fn is not None else None) for node, parents, fn in found]


# ---------------------------------------------------------------------------------------------
# The buffer fix


def _simple_rhs(expr: cst.BaseExpression, allow_float: bool) -> bool:
    """Numbers, names, attributes and arithmetic on them: safe as an argument of fill_/mul_/add_."""
    if isinstance(expr, cst.Integer):
        return True
    if isinstance(expr, cst.Float):
        return allow_float
    if isinstance(expr, (cst.Name, cst.Attribute)):
        return allow_float  # a name's type is unknown: an int buffer must not swallow a float
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, (cst.Minus, cst.Plus)):
        return _simple_rhs(expr.expression, allow_float)
    if isinstance(expr, cst.BinaryOperation):
        if not allow_float and isinstance(expr.operator, (cst.Divide, cst.Power)):
            return False
        if isinstance(expr.operator, (cst.Add, cst.Subtract, cst.Multiply, cst.Divide, cst.Power)):
            return _simple_rhs(expr.left, allow_float) and _simple_rhs(expr.right, allow_float)
    return False


def _int_rhs(expr: cst.BaseExpression, target_text: str) -> bool:
    """For an int buffer: integer literals and the attribute itself, + - * only."""
    if isinstance(expr, cst.Integer):
        return True
    if isinstance(expr, cst.Attribute):
        return _code(expr) == target_text
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        return _int_rhs(expr.expression, target_text)
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, (cst.Add, cst.Subtract, cst.Multiply)):
        return _int_rhs(expr.left, target_text) and _int_rhs(expr.right, target_text)
    return False


def _rewrite_write(stmt: cst.CSTNode, kind: str) -> Optional[str]:
    """``self.t *= 0.9`` -> ``self.t.mul_(0.9)``; ``self.t = v`` -> ``self.t.fill_(v)``; None if unsafe."""
    if getattr(stmt, "semicolon", cst.MaybeSentinel.DEFAULT) is not cst.MaybeSentinel.DEFAULT:
        return None
    target = _write_target(stmt)
    if target is None:
        return None
    target_text = _code(target)
    if isinstance(stmt, cst.AugAssign):
        method = _AUG_METHODS.get(type(stmt.operator))
        if method is None or (kind == "int" and method == "div_"):
            return None
        ok = _int_rhs(stmt.value, target_text) if kind == "int" else _simple_rhs(stmt.value, True)
        return f"{target_text}.{method}({_code(stmt.value).strip()})" if ok else None
    if isinstance(stmt, cst.Assign):
        value = stmt.value
        ok = _int_rhs(value, target_text) if kind == "int" else _simple_rhs(value, True)
        return f"{target_text}.fill_({_code(value).strip()})" if ok else None
    return None


def _inside(node: cst.CSTNode, parents: tuple, stmts: list[cst.CSTNode]) -> bool:
    ids = {id(s) for s in stmts}
    return any(id(p) in ids for p in parents)


def _super_init_before(init_fn: cst.FunctionDef, stmt: cst.CSTNode) -> bool:
    body = init_fn.body
    if not isinstance(body, cst.IndentedBlock):
        return False
    for line in body.body:
        if any(n is stmt for n in iter_nodes(line, (type(stmt),), into_nested_defs=False)) or line is stmt:
            return False
        if "__init__(" in _code(line):
            return True
    return False


def buffer_fix(rule: Rule, ctx, cls, attr: str, writes: Writes, *, allow_compiled_writes: bool, title: str):
    """The unsafe buffer fix for ``self.attr``, or None when it could change the program's meaning."""
    if cls is None or cls.kind != "module" or writes.other_files:
        return None
    torch_name = ctx.alias_for("torch")
    if torch_name is None:
        return None
    kind = scalar_kind(cls, attr)
    if kind is None:
        return None
    inits = init_writes(cls, attr)
    init_fn = cls.methods.get("__init__")
    if len(inits) != 1 or init_fn is None:
        return None
    init = inits[0]
    if not isinstance(init, (cst.Assign, cst.AnnAssign)) or init.value is None or _write_target(init) is None:
        return None
    if getattr(init, "semicolon", cst.MaybeSentinel.DEFAULT) is not cst.MaybeSentinel.DEFAULT:
        return None
    if not _super_init_before(init_fn.node, init):
        return None
    value = init.value
    if isinstance(value, cst.Name):
        if kind != "float":
            return None
        value_text = f"float({value.value})"
    else:
        value_text = _code(value).strip()
    edits = [ctx.replace(init, f'self.register_buffer("{attr}", {torch_name}.tensor({value_text}), persistent=False)')]
    write_stmts: list[cst.CSTNode] = []
    for method, stmt, compiled in writes.in_class:
        if compiled and not allow_compiled_writes:
            return None
        text = _rewrite_write(stmt, kind)
        if text is None:
            return None
        edits.append(ctx.replace(stmt, text))
        write_stmts.append(stmt)
    for stmt in writes.same_file:
        text = _rewrite_write(stmt, kind)
        if text is None:
            return None
        edits.append(ctx.replace(stmt, text))
        write_stmts.append(stmt)
    facts = file_facts(rule, ctx)
    if attr in facts.unparsed_targets:
        return None
    # Every read must keep its meaning with a 0-d tensor: in compiled code as a tensor operand /
    # clamp bound / pow exponent..., or inside the right-hand side of a write we rewrite.
    for node, parents, fn in class_reads(ctx, cls, attr):
        if _inside(node, parents, write_stmts):
            continue
        if fn is None or not fn.compiled:
            return None
        facts_fn = ctx.facts(fn)
        use = classify_use(node, parents, facts_fn.is_tensor, ctx.qualname)
        if use is None or not use.fixable:
            return None
    # reads of `model.attr` elsewhere in this file (a training loop printing it...) would see a tensor
    read_ids = {id(n) for n in facts.reads.get(attr, ())}
    all_reads = _walk_with_parents(ctx.module, lambda n: id(n) in read_ids) if read_ids else []
    for node, parents, _ in all_reads:
        if not _inside(node, parents, write_stmts):
            return None
    return ctx.fix(Applicability.UNSAFE, *edits, title=title)


# ---------------------------------------------------------------------------------------------
# The torch version the user runs (gates the one form whose cost differs between versions)


@functools.lru_cache(maxsize=1)
def _installed_torch() -> Optional[tuple[int, int]]:
    try:
        from importlib.metadata import PackageNotFoundError, version
    except ImportError:  # pragma: no cover
        return None
    try:
        text = version("torch")
    except PackageNotFoundError:
        return None
    except Exception:  # broken metadata: behave as if unknown
        return None
    parts = text.split("+", 1)[0].split(".")
    try:
        return int(parts[0]), int(parts[1])
    except (ValueError, IndexError):
        return None


def target_torch(ctx) -> Optional[tuple[int, int]]:
    """The torch version findings are judged against: the context's if it has one, else the installed one."""
    explicit = getattr(ctx, "torch_version", None)
    if isinstance(explicit, tuple) and len(explicit) >= 2:
        return int(explicit[0]), int(explicit[1])
    return _installed_torch()


def recompiles_every_value(use: Use, kind: str, ctx) -> bool:
    """Does changing a Python number read this way recompile on every new value (measured)?"""
    if kind == "int":
        return True  # int attributes of an nn.Module are static: guarded by value in any use
    if use.kind == "scalar-arg":
        return True
    if use.kind == "arith" and use.derived:
        version = target_torch(ctx)
        return version is not None and version < (2, 13)  # 2.11 (CPU+H200): every call; 2.13: once
    return False


# ---------------------------------------------------------------------------------------------


_DOCS = """
## What it does
Flags a Python-number attribute of an `nn.Module` (`self.threshold = 5.0` in `__init__`) that
compiled code feeds to a tensor op, when the program also changes it after construction: in
another method of the class (`def anneal(self): self.threshold *= 0.99`) or from outside
(`model.threshold = ...` / `model.threshold *= ...` in the same file; writes through
`args.`/`cfg.`/`config.`-style objects are ignored). It reports the op that reads it.

Writes in *other* files are not counted: the project index knows only where `obj.threshold = ...`
occurs, not what `obj` is, and attribute names collide: counting them gave 10 findings on torch
2.13's own sources, and every one came from a write to some other object in another file
(`ctx.groups = ...` in an autograd Function, `new.dim = ...`, an observer's `min_val`).

It flags only the uses measured to recompile on **every** new value:
- any use of an `int` attribute (dynamo treats `int` attributes of an `nn.Module` as static);
- a `float` passed where the op takes a Python scalar: `clamp`/`clip` bounds, `pow`/`**`
  exponent, `masked_fill` value, `lerp` weight, `alpha=`, `F.hardtanh` bounds,
  `F.dropout` `p`, `torch.full_like` fill value;
- with torch < 2.13 only (the installed torch decides): a float that goes through Python
  arithmetic first, e.g. `x * (1.0 / self.temperature)`.

## Why is this bad?
Dynamo compiles a Python number into the graph as a constant and guards on its value
(`self.threshold == 5.0`). Each new value fails the guard, so the next call recompiles. After
`torch._dynamo.config.recompile_limit` (8) recompiles dynamo stops compiling that frame: it runs
**eagerly** from then on, without any error.

Measured with torch 2.13.0+cpu (the fixture: `scores.clamp(-self.threshold, self.threshold)`
with `self.threshold *= 0.9` between 10 calls): 1 compile and 8 recompiles, the `recompile_limit`
warning, then 0 compiled regions per forward (eager). The buffer version: 1 compile, 0 recompiles.
The same fixture on torch 2.11.0+cu130 (H200): 8 recompiles, limit hit, 0 compiled regions; buffer 0.
The same happened with `pow`, `**`, `masked_fill`, `lerp`, `add(alpha=)`, `F.hardtanh`,
`F.dropout(p=)`, `full_like`, and with an `int` attribute in `x * self.k`, `x + self.k` or
`x[:, :self.k]`. torch 2.11.0 (CPU and H200) gave the same for `clamp` and `pow`.

Not flagged, because it is cheap: a `float` used directly as an operand of `*`, `+`, `-`, `/`,
a comparison, `x.mul(t)`, `F.leaky_relu`, `F.elu`, `F.softplus` or `F.threshold` recompiled
**once** on torch 2.13.0 CPU (the float then becomes a dynamic graph input). `x * (1.0 / t)`
also recompiled once on 2.13, but on torch 2.11 (CPU and H200) it recompiled on every call up
to the limit, hence the version gate above.

## Example
```python
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.threshold = 5.0

    def anneal(self):
        self.threshold *= 0.99

    def forward(self, x):
        return x.clamp(-self.threshold, self.threshold)
```

## Use instead
Keep the value in a (non-persistent) buffer and update it in place; the buffer is a graph
input, so new values need no recompile:
```python
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("threshold", torch.tensor(5.0), persistent=False)

    def anneal(self):
        self.threshold.mul_(0.99)

    def forward(self, x):
        return x.clamp(-self.threshold, self.threshold)
```
If the value never changes, a Python number is fine (see FL901).

## Fix safety
Unsafe. The fix replaces the `__init__` assignment with
`self.register_buffer(name, torch.tensor(value), persistent=False)` and rewrites every mutation
in place: `*=`→`.mul_()`, `+=`→`.add_()`, `-=`→`.sub_()`, `/=`→`.div_()`, `=`→`.fill_()`
(also `model.threshold = v` when it is in the same file). `persistent=False` keeps the
`state_dict` unchanged. It is offered only when every read of the attribute still means the same
with a 0-d tensor: tensor operands, comparisons with tensors, `clamp` bounds that are all this
attribute (a tensor bound next to a Python-number bound breaks the graph, measured GB0033),
`pow` exponents, `masked_fill` values and `lerp` weights in compiled code. Any other read (an
`if self.threshold > 1:`, an f-string, `math.*`, a shape argument, `alpha=`) or a write in
another file means no fix. Reads in other files cannot be seen: there `model.threshold` becomes a
tensor (it prints as `tensor(4.5)`), and `model.half()`/`.to()` now convert and move it.

## PyTorch reference
No graph-break id (this is a recompile, not a break). Guards and recompiles:
https://docs.pytorch.org/docs/main/user_guide/torch_compiler/compile/programming_model.recompilation.html
"""


def _cls_src(body: str) -> str:
    return "import torch\nfrom torch import nn\n\n\nclass Model(nn.Module):\n" + body


class MutatedScalarAttribute(Rule):
    code = "FL201"
    name = "mutated-scalar-attribute"
    message = "a Python-number attribute used in compiled tensor code is changed between calls: recompiles on every new value"
    effects = (Effect.RECOMPILE,)
    fix_applicability = Applicability.UNSAFE
    triggers = ("self.",)
    measured_on = ("torch 2.13.0 CPU", "torch 2.11.0 CPU", "torch 2.11.0 H200")
    docs = _DOCS

    VALID = [
        # constant threshold, never changed: harmless (FL901's business, off by default)
        _cls_src(
            "    def __init__(self):\n        super().__init__()\n        self.threshold = 5.0\n\n"
            "    def forward(self, x):\n        return x.clamp(-self.threshold, self.threshold)\n"
        ),
        # mutated float used only as a multiplication operand: one recompile on 2.13, then dynamic
        _cls_src(
            "    def __init__(self):\n        super().__init__()\n        self.scale = 1.0\n\n"
            "    def decay(self):\n        self.scale *= 0.5\n\n"
            "    def forward(self, x):\n        return x * self.scale\n"
        ),
        # already a buffer updated in place
        _cls_src(
            "    def __init__(self):\n        super().__init__()\n"
            '        self.register_buffer("threshold", torch.tensor(5.0), persistent=False)\n\n'
            "    def anneal(self):\n        self.threshold.mul_(0.9)\n\n"
            "    def forward(self, x):\n        return x.clamp(-self.threshold, self.threshold)\n"
        ),
        # mutated, but only read in Python code outside the compiled forward
        _cls_src(
            "    def __init__(self):\n        super().__init__()\n        self.threshold = 5.0\n\n"
            "    def anneal(self):\n        self.threshold *= 0.9\n\n"
            "    def extra_repr(self):\n        return f'threshold={self.threshold}'\n\n"
            "    def forward(self, x):\n        return x.relu()\n"
        ),
        # `self.sub.threshold = ...` in another class sets some other object's attribute
        _cls_src(
            "    def __init__(self):\n        super().__init__()\n        self.threshold = 5.0\n\n"
            "    def forward(self, x):\n        return x.clamp(max=self.threshold)\n\n\n"
            "class Trainer:\n    def __init__(self, gate):\n        self.gate = gate\n\n"
            "    def relax(self):\n        self.gate.threshold = 9.0\n"
        ),
        # set by a method that rebuilds the model (here: prunes blocks and the head), as timm 1.0.31's
        # `prune_intermediate_layers` sets `num_prefix_tokens`: configuration, not a per-call change
        _cls_src(
            "    def __init__(self):\n        super().__init__()\n        self.num_prefix_tokens = 1\n"
            "        self.blocks = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 4))\n        self.head = nn.Linear(4, 2)\n\n"
            "    def prune(self, n):\n        self.blocks = self.blocks[:n]\n        self.head = nn.Identity()\n"
            "        self.num_prefix_tokens = 0\n\n"
            "    def forward(self, x):\n        return self.head(self.blocks(x[:, self.num_prefix_tokens:]).mean(1))\n"
        ),
        # `args.threshold = ...` is a config object, not the module
        _cls_src(
            "    def __init__(self):\n        super().__init__()\n        self.threshold = 5.0\n\n"
            "    def forward(self, x):\n        return x.clamp(max=self.threshold)\n\n\n"
            "def main(args):\n    args.threshold = 3.0\n"
        ),
    ]
    INVALID = [
        # the seed story: schedule method annealing a clamp threshold -> buffer fix
        Invalid(
            _cls_src(
                "    def __init__(self):\n        super().__init__()\n        self.threshold = 5.0\n\n"
                "    def anneal(self):\n        self.threshold *= 0.99\n\n"
                "    def forward(self, x):\n        return x.clamp(-self.threshold, self.threshold)\n"
            ),
            expected_fix=_cls_src(
                "    def __init__(self):\n        super().__init__()\n"
                '        self.register_buffer("threshold", torch.tensor(5.0), persistent=False)\n\n'
                "    def anneal(self):\n        self.threshold.mul_(0.99)\n\n"
                "    def forward(self, x):\n        return x.clamp(-self.threshold, self.threshold)\n"
            ),
            line=14,
            count=1,
        ),
        # written from a training loop in the same file (`=` and `*=`) -> fill_/mul_
        Invalid(
            _cls_src(
                "    def __init__(self):\n        super().__init__()\n        self.p = 2.0\n\n"
                "    def forward(self, x):\n        return x.abs().pow(self.p)\n\n\n"
                "def train(model, batches):\n    for step, x in enumerate(batches):\n        model(x)\n"
                "        model.p *= 0.99\n        if step == 100:\n            model.p = 2.0\n"
            ),
            expected_fix=_cls_src(
                "    def __init__(self):\n        super().__init__()\n"
                '        self.register_buffer("p", torch.tensor(2.0), persistent=False)\n\n'
                "    def forward(self, x):\n        return x.abs().pow(self.p)\n\n\n"
                "def train(model, batches):\n    for step, x in enumerate(batches):\n        model(x)\n"
                "        model.p.mul_(0.99)\n        if step == 100:\n            model.p.fill_(2.0)\n"
            ),
            line=11,
        ),
        # int attribute in plain arithmetic: ints are static, every value recompiles
        Invalid(
            _cls_src(
                "    def __init__(self):\n        super().__init__()\n        self.k = 3\n\n"
                "    def grow(self):\n        self.k += 1\n\n"
                "    def forward(self, x):\n        return x * self.k\n"
            ),
            expected_fix=_cls_src(
                "    def __init__(self):\n        super().__init__()\n"
                '        self.register_buffer("k", torch.tensor(3), persistent=False)\n\n'
                "    def grow(self):\n        self.k.add_(1)\n\n"
                "    def forward(self, x):\n        return x * self.k\n"
            ),
            line=14,
        ),
        # read as a Python number elsewhere (`if`, f-string): reported, but no fix
        Invalid(
            _cls_src(
                "    def __init__(self):\n        super().__init__()\n        self.threshold = 5.0\n\n"
                "    def anneal(self):\n        if self.threshold > 1.0:\n            self.threshold *= 0.9\n\n"
                "    def forward(self, x):\n        return torch.clamp(x, min=-self.threshold, max=self.threshold)\n"
            ),
            line=15,
        ),
        # int attribute as a slice bound (curriculum length), changed from outside the class
        Invalid(
            _cls_src(
                "    def __init__(self, max_len: int = 4):\n        super().__init__()\n        self.max_len = max_len\n\n"
                "    def forward(self, x):\n        return x[:, : self.max_len].sum(1)\n\n\n"
                "def curriculum(model):\n    model.max_len += 1\n"
            ),
            line=11,
        ),
        # clamp bound mixed with a Python number: reported, but the buffer fix would break the graph
        Invalid(
            _cls_src(
                "    def __init__(self):\n        super().__init__()\n        self.cap = 6.0\n\n"
                "    def set_cap(self, value):\n        self.cap = value\n\n"
                "    def forward(self, x):\n        return x.clamp(0.0, self.cap)\n"
            ),
            line=14,
        ),
    ]

    def visit_Attribute(self, node: cst.Attribute, ctx) -> None:
        attr = self_attr(node)
        cls = ctx.cls
        if attr is None or cls is None or cls.kind != "module":
            return
        kind = scalar_kind(cls, attr)
        if kind is None:
            return
        use = classify_use(node, ctx.parents, ctx.is_tensor, ctx.qualname)
        if use is None or not recompiles_every_value(use, kind, ctx):
            return
        if skipped_while_compiling(ctx.parents, ctx.qualname):
            return
        writes = collect_writes(self, ctx, cls, attr)
        if not writes.outside_compiled or any(compiled for _, _, compiled in writes.in_class):
            return  # never changed (FL901), or changed inside compiled code (FL203's finding)
        where = writes.where(cls.name)
        if kind == "int":
            why = f"`self.{attr}` is a Python int (an int attribute of an nn.Module is guarded by value)"
        elif use.kind == "scalar-arg":
            why = f"`self.{attr}` is a Python float passed as a scalar argument of `{use.op}` (burned in as a guarded constant)"
        else:
            why = f"`self.{attr}` is a Python float turned into a constant by Python arithmetic before `{use.op}`"
        message = (
            f"{why} and is changed {where}: every new value recompiles, and after 8 recompiles "
            "(recompile_limit) the forward runs eagerly; keep it in a buffer updated in place"
        )
        fix = buffer_fix(
            self, ctx, cls, attr, writes, allow_compiled_writes=False,
            title=f"store `{attr}` in a non-persistent buffer and update it in place",
        )
        ctx.report(use.site, message, fix=fix)
