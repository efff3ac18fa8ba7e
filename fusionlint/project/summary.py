"""One file -> FileSummary, on CPython ``ast`` (about ten times faster than a libcst parse).

Every Python file under the project root is summarised, linted or not, so what a linted file's
analysis learns about its bases, helpers and callers does not depend on which files were named.
A summary keeps only what the project model links: imports, classes (bases, methods, attribute
facts), functions (parameters, call sites with the abstract values of their arguments, names used
as tensors) and ``torch.compile`` targets. No ast node outlives the summary.
"""

from __future__ import annotations

import ast
import dataclasses
import gc
import struct
import sys
from dataclasses import dataclass, field
from typing import Callable, Optional

from fusionlint.analysis.judge import TENSOR_METHODS
from fusionlint.analysis.names import is_overload_stub
from fusionlint.semantic.is_compiling import eager_only_expressions, eager_only_statements
from fusionlint.semantic.tensors import TENSOR_ANNOTATIONS, torch_call_returns_tensor
from fusionlint.outline import Outline, outline_of
from fusionlint.pickling import by_fields
from fusionlint.project.breaks import SOME_PATH, SPARSE_CONSTRUCTORS, break_conditions, every_call_spans, first_break, on_spans, reads_tensor_value
from fusionlint.precheck import MAX_NODES
from fusionlint import pyast
from fusionlint.pyast import child_nodes
from fusionlint.semantic.flags_ast import flag_params_ast
from fusionlint.semantic.values import NOTHING, TENSOR, LocalValues, Value, dotted, function_values, holds_no_tensor, resolve

# Calls into these never reach project code: not worth a call site.
_EXTERNAL_ROOTS = frozenset(
    {"torch", "numpy", "math", "typing", "warnings", "functools", "itertools", "collections", "os", "sys",
     "logging", "re", "copy", "einops", "dataclasses", "inspect", "operator", "contextlib", "builtins"}
)
_BUILTIN_CALLS = frozenset(
    {"len", "range", "isinstance", "int", "float", "bool", "str", "tuple", "list", "dict", "set", "zip", "enumerate",
     "getattr", "setattr", "hasattr", "print", "max", "min", "sum", "abs", "round", "any", "all", "map", "sorted",
     "super", "type", "iter", "next", "reversed", "repr", "id", "callable", "divmod", "pow", "format", "vars"}
)
_MODULE_CONTAINERS = frozenset({"ModuleList", "Sequential", "ModuleDict"})
_COMPILE = ("torch.compile", "torch.compiler.compile")
# One object for each distinct parameter, abstract value and tuple of them (a call's arguments, a
# list of bases or decorators), shared by every summary of the process: on the zoo most are repeats
# (`self`, `("param", "hidden_states")`, `()`), and one copy each took ~20 % of the model's memory.
# None is changed after it is made.
_SHARED: dict = {}
_PARAMS: dict[tuple, "Param"] = {}  # (name, annotation, default kind, literal) -> the one Param


def _shared(value):
    return _SHARED.setdefault(value, value)


def adopt(summary: "FileSummary") -> "FileSummary":
    """``summary``, made in another process (``fusionlint.project.ahead``), with its values shared as this
    process's summaries share theirs: pickling keeps one object per distinct value within what one
    call sends, not across calls, and not interned strings (timm + transformers in two worker slices:
    the model took 48 MiB more without this). Changes ``summary`` in place."""
    return _adopt(summary)


def adopt_values(value):
    """``adopt`` for any value a summary holds (a tuple of call sites, a frozenset of names)."""
    return _adopt(value)


_FIELDS: dict[type, Optional[tuple[str, ...]]] = {}


def _adopt(value):
    kind = type(value)
    if kind is str:
        return sys.intern(value)
    if value is None or kind is bool:
        return value
    if kind is int:
        return _line(value)
    if kind is tuple:
        try:
            # most values are repeats: an equal one shared already is this one, with its parts shared
            # (the tuple is hashed in C; adopting every part first took the cached bodies of
            # transformers 3.1 CPU s instead of about 1)
            known = _SHARED.get(value)
        except TypeError:  # it holds objects compared by contents but not hashed (call sites)
            return tuple([_adopt(item) for item in value])
        if known is not None:
            return known
        value = tuple([_adopt(item) for item in value])
        return _SHARED.setdefault(value, value)
    if kind is frozenset:
        if not value:
            return NO_NAMES  # (every empty frozenset is equal; the summaries' own are this one)
        known = _SHARED.get(value)
        if known is not None:
            return known
        value = frozenset([_adopt(item) for item in value])
        return _SHARED.setdefault(value, value)
    if kind is dict:
        return {_adopt(key): _adopt(item) for key, item in value.items()}
    if kind is list:
        return [_adopt(item) for item in value]
    if kind is CallSite:  # by far the most common object of a body: its fields spelled out (no loop)
        intern = sys.intern
        value.how, value.target, value.written = intern(value.how), intern(value.target), intern(value.written)
        value.args, value.kwargs, value.line = _adopt(value.args), _adopt(value.kwargs), _LINES.setdefault(value.line, value.line)
        if value.consts is not None:
            value.consts = _adopt(value.consts)
        if value.conds:
            value.conds = _adopt(value.conds)
        return value
    if kind is FunctionSummary:  # the commonest object of a summary: its fields spelled out (most are empty)
        return _adopt_function(value)
    if kind is Param:  # (hashable, and most are repeats: `self`, `hidden_states`)
        known = _PARAMS.get((value.name, value.annotation, value.default, value.literal))
        if known is not None:
            return known
    elif kind is AttrFact:
        known = _SHARED.get(value)
        if known is not None:
            return known
    names = _FIELDS.get(kind, ())
    if names == ():
        names = _FIELDS[kind] = tuple(f.name for f in dataclasses.fields(kind)) if dataclasses.is_dataclass(kind) else None
    if names is None:
        return value  # None, bools, floats, anything else: kept
    for name in names:
        object.__setattr__(value, name, _adopt(getattr(value, name)))
    if kind is Param:
        return _PARAMS.setdefault((value.name, value.annotation, value.default, value.literal), value)
    if kind is AttrFact:
        return _SHARED.setdefault(value, value)
    return value


def _adopt_function(fn: "FunctionSummary") -> "FunctionSummary":
    intern = sys.intern
    fn.qualname, fn.name, fn.line, fn.break_line = intern(fn.qualname), intern(fn.name), _line(fn.line), _line(fn.break_line)
    if fn.cls is not None:
        fn.cls = intern(fn.cls)
    if fn.parent is not None:
        fn.parent = intern(fn.parent)
    if fn.star is not None:
        fn.star = intern(fn.star)
    fn.params, fn.decorators, fn.calls, fn.returns = _adopt(fn.params), _adopt(fn.decorators), _adopt(fn.calls), _adopt(fn.returns)
    fn.tensor_uses, fn.bool_items, fn.size_items, fn.flag_params = (
        _adopt(fn.tensor_uses), _adopt(fn.bool_items), _adopt(fn.size_items), _adopt(fn.flag_params))
    if fn.items is not None:
        fn.items = _adopt(fn.items)
    if fn.item_values:
        fn.item_values = _adopt(fn.item_values)
    if fn.wrappers:
        fn.wrappers = _adopt(fn.wrappers)
    if fn.break_conds:
        fn.break_conds = _adopt(fn.break_conds)
    return fn  # (static, breaks, returns_host, returns_sparse: bools and a small int, kept)


def pack_lines(lines: list[int], first: int) -> bytes:
    """``lines`` as two bytes each, counted from ``first`` (a function's own line), or, when one does not
    fit, as four bytes each after one marker byte (an odd length)."""
    if not lines:
        return b""
    deltas = [line - first for line in lines]
    if min(deltas) >= 0 and max(deltas) < 0x10000:
        return struct.pack(f"<{len(deltas)}H", *deltas)
    return b"\xff" + struct.pack(f"<{len(lines)}I", *lines)


def call_line(fn: "FunctionSummary", site: int) -> Optional[int]:
    """The line of ``fn``'s ``site``-th call site (``FunctionSummary.call_lines``), None when it has none."""
    packed = fn.call_lines
    if len(packed) % 2:
        return struct.unpack_from("<I", packed, 1 + 4 * site)[0] if 0 <= site < (len(packed) - 1) // 4 else None
    return fn.line + struct.unpack_from("<H", packed, 2 * site)[0] if 0 <= site < len(packed) // 2 else None


def forget_shared() -> None:
    """Empty the table of shared values (their holders keep them): for a process that has made its
    last summary, where the table would only keep the dropped call sites' values alive."""
    _SHARED.clear()


# Names kept by a summary (call targets, bases, decorators, constructors, import targets) are built
# fresh for every occurrence (``dotted``, ``resolve``, f-strings): interned, each distinct name is one
# string for the whole run (on the zoo most are repeats: "self.norm", "torch.nn.Linear").
_name = sys.intern
# attribute kinds that are no Python flag (fusionlint.semantic.flags: `default(p, self.<attr>)`)
_NOT_FLAG_KINDS = frozenset({"param", "buffer", "tensor", "object", "modules", "container", "ref", "none"})
# Line numbers above 256 are a new int object each (32 bytes); one per distinct number instead.
_LINES: dict[int, int] = {}


def _line(n: int) -> int:
    return _LINES.setdefault(n, n)


# One empty set for every function that uses no name as a tensor (most of them): `frozenset()` makes a
# new 216-byte object each time.
NO_NAMES: frozenset = frozenset()
# ... and for every function that returns no tuple with a boolean tensor (`bool_items`: 9.2 MiB of empty
# sets on timm + transformers, measured with bench/model_memory.py --trace)
NO_POSITIONS: frozenset = NO_NAMES


@by_fields
@dataclass(frozen=True, slots=True)  # hashable: a function's parameters are shared like other values
class Param:
    name: str
    annotation: Optional[str]  # "tensor" | "other" | None
    default: Optional[str]  # None (no default) | "none" | "literal" | "other"
    literal: Optional[str] = None  # repr of a constant default (`value="full"` -> "'full'", `x=None` -> "None")


@by_fields
@dataclass(slots=True)
class CallSite:
    # "self" | "super" | "name" | "dotted" | "self-sub" (``self.sub.method``) | "self-elem" (a method of an
    # element of a module container attribute: ``for layer in self.layers: layer.m()``, ``self.layers[i].m()``;
    # ``layer(h)`` / ``self.layers[i](h)`` are "<container>.__call__", the element's forward);
    # a "name"/"dotted" call may name a class: a constructor call, which runs its ``__init__``
    how: str
    target: str  # method / attribute / name / dotted name (resolved through the imports)
    # tuples, shared between equal call sites (``_shared``): most pass the same few values
    args: tuple[Optional[Value], ...]  # None for *args
    kwargs: tuple[tuple[str, Value], ...]  # (keyword, value) in call order
    line: int
    written: str = ""  # the callee as written: "self.m", "helper", "helpers.norm" (what the libcst side sees)
    # the constants it passes, for the callee's branches: (positional, keyword pairs), each entry the repr
    # of a literal, ("param", name) for a parameter of the caller passed on, or None; None when the call
    # does not show every argument (*args, **kwargs, a function handed to another call)
    consts: Optional[tuple] = None
    # the branches of the caller it sits in that test a parameter against a constant:
    # (param, "==" | "!=" | "is" | "is not", repr of the constant, True in the body / False in the else)
    conds: tuple = ()
    # every call of the function that holds it makes this call (no branch, loop body or early return
    # before it): a callee that breaks then splits the caller's frame here (fusionlint.project.breaks)
    every: bool = False


@by_fields
@dataclass(slots=True, unsafe_hash=True)  # hashed once final: equal facts are one object (_shared)
class AttrFact:
    kind: str  # "param" | "buffer" | "tensor" | "object" | "modules" | "int" | "float" | "bool" | "str" | "none" | "container" | "ref" (a module-level name: `ctor`) | "unknown"
    ctor: str  # resolved constructor for "object"; "" otherwise
    method: str  # the method that assigns it
    line: int
    elements: tuple[str, ...] = ()  # constructors of ModuleList/Sequential elements


@by_fields
@dataclass(slots=True)
class FunctionSummary:
    qualname: str  # "Net.forward", "helper", "Net.forward.<locals>.inner"
    name: str
    cls: Optional[str]
    parent: Optional[str]
    params: tuple[Param, ...]
    star: Optional[str]
    static: bool
    decorators: tuple[str, ...]
    calls: tuple[CallSite, ...]
    tensor_uses: frozenset[str]  # names called with a method only tensors have (`lens.any()`)
    line: int
    # the value of each `return <expr>`: it returns a tensor when every one is a tensor (a forward that
    # returns `x` on one path and a tuple or ModelOutput on another does not count)
    returns: tuple[Value, ...] = ()
    # when every `return` is a tuple of one length: (that length, the positions where every one of
    # them is surely no tensor: `[(h, w)] * b`, a size, None). What `a, b, c = self.sub(x)` binds.
    items: Optional[tuple[int, frozenset[int]]] = None
    # positions of those tuples where every `return` has a boolean tensor (PyG's `to_dense_batch` returns
    # `out, mask`, `mask` made with `dtype=torch.bool`): `h[mask]` on what `h, mask = f(x)` binds is a
    # boolean-mask index
    bool_items: frozenset[int] = frozenset()
    # the value of each position of those tuples, per `return` (the model decides which are tensors)
    item_values: tuple[tuple[Value, ...], ...] = ()
    # the functions defined inside this one (at any depth) that call a parameter of a function around
    # them: what a decorator returns in place of the function it takes (`def wrapper(*a): return func(*a)`)
    wrappers: tuple[str, ...] = ()
    # a call that breaks the graph whatever its arguments (fusionlint.project.breaks): NONE, SOME_PATH or
    # EVERY_CALL, and the line of the first one
    breaks: int = 0
    break_line: int = 0
    # for SOME_PATH: the branch tests around each break, when each is in a branch on a parameter
    # (breaks.break_conditions); a caller passing constants that rule them all out reaches none
    break_conds: tuple = ()
    # a `return` hands back a value read from a tensor (`return int(index.max()) + 1`: _is_host_value)
    returns_host: bool = False
    # a `return` hands back a sparse tensor made here (`return torch.sparse_coo_tensor(...)`, or a local bound
    # to one): the constructor breaks, and the frame the caller resumes in cannot take the sparse tensor
    returns_sparse: bool = False
    # positions of the tuples every `return` gives that hold a size in every one (`padding_len, input_ids, ...`
    # of Longformer's `_pad_to_window_size`), when the function breaks: the caller's resumed frame gets them
    # as Python ints
    size_items: frozenset[int] = frozenset()
    # parameters the function fills in with a Python flag when nothing is passed (`p = default(p,
    # self.training)`: fusionlint.semantic.flags): switches, not tensors, whatever a caller passes
    flag_params: frozenset[str] = frozenset()
    # the line of each call site (``calls``), kept when the bodies are dropped or stored apart: the places the
    # propagated facts name (``fusionlint.project.reasons.At``) are shown with their lines at the time.
    # Packed (``pack_lines``; read with ``site_line``): as a tuple of ints they were 3.3 MiB of transformers' model
    call_lines: bytes = b""


@by_fields
@dataclass(slots=True)
class ClassSummary:
    name: str
    bases: tuple[str, ...]  # resolved through the file's imports
    # the names of its methods, first definitions first; the function of one is ``functions[qual(name)]``
    # (a tuple, not a name -> qualified-name dict per class: 2.9 MiB on the zoo)
    methods: tuple[str, ...]
    attrs: dict[str, tuple[AttrFact, ...]]  # lists while the class is summarised
    decorators: tuple[str, ...]
    line: int

    def qual(self, method: str) -> str:
        """The qualified name of one of its methods, as ``FileSummary.functions`` is keyed."""
        return f"{self.name}.{method}"


@by_fields
@dataclass(slots=True)
class FileSummary:
    path: str  # display path (relative to the root, POSIX)
    module: str
    is_package: bool
    text_hash: int
    aliases: dict[str, str] = field(default_factory=dict)
    classes: dict[str, ClassSummary] = field(default_factory=dict)
    functions: dict[str, FunctionSummary] = field(default_factory=dict)
    # sets while the file is summarised, frozen (empty ones shared) when it is done
    compile_targets: frozenset[str] | set[str] = field(default_factory=set)
    # module-level names bound to `logging.getLogger(...)` / transformers' `logging.get_logger(...)`
    loggers: frozenset[str] | set[str] = field(default_factory=set)
    # size, depth and top-level definitions, for the engine (fusionlint.outline): kept only with ``units``
    # (an editor's summary); a run's engine outlines the files it lints from the parse its sparse plan
    # needs anyway, instead of the model holding one for every file (2.3 MiB on the zoo)
    outline: Optional[Outline] = None
    # (definition text, first line, aliases before it) -> what it added: kept only when asked (an
    # editor re-summarising the same file on every keystroke re-walks only the changed definitions)
    units: Optional[dict] = field(default=None, repr=False, compare=False)
    # the outline's shape of each top-level statement (fusionlint.outline), kept with ``units``
    shapes: Optional[dict] = field(default=None, repr=False, compare=False)


def is_logger_factory(qual: str) -> bool:
    """``logging.getLogger`` and the Hugging Face ``...utils.logging.get_logger`` (returns a std Logger)."""
    return qual == "logging.getLogger" or qual.endswith("logging.get_logger")


def _param(name: str, annotation: Optional[str], default: Optional[ast.expr]) -> Param:
    kind, literal = _default(default), _literal(default)
    key = (name, annotation, kind, literal)
    found = _PARAMS.get(key)
    if found is None:
        found = _PARAMS[key] = Param(name, annotation, kind, literal)
    return found


def _literal(node: Optional[ast.expr]) -> Optional[str]:
    """repr of a constant (``"full"``, ``2``, ``None``, ``-1``), or None for anything else."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (str, int, float, bool, type(None))):
        return repr(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
        if isinstance(node.operand.value, (int, float)) and not isinstance(node.operand.value, bool):
            return repr(-node.operand.value)
    return None


_COMPARISONS = {ast.Eq: "==", ast.NotEq: "!=", ast.Is: "is", ast.IsNot: "is not"}


def _param_test(test: ast.expr, params: frozenset[str]) -> Optional[tuple[str, str, str]]:
    """``value == "full"`` / ``"full" == value`` / ``mask is None`` / ``x is not None`` / ``len(args) == 1``
    on a parameter."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and type(test.ops[0]) in _COMPARISONS):
        return None
    left, right = test.left, test.comparators[0]
    if isinstance(right, ast.Name) and not isinstance(left, ast.Name):
        left, right = right, left
    literal = _literal(right)
    if (
        isinstance(left, ast.Call) and isinstance(left.func, ast.Name) and left.func.id == "len" and len(left.args) == 1
        and isinstance(left.args[0], ast.Name) and left.args[0].id in params and literal is not None
    ):  # `len(caches) == 1` on a `*caches` parameter: the number of extra positional arguments a call passes
        return f"len({left.args[0].id})", _COMPARISONS[type(test.ops[0])], literal
    if not (isinstance(left, ast.Name) and left.id in params and literal is not None):
        return None
    return left.id, _COMPARISONS[type(test.ops[0])], literal


_HOLDS_STATEMENTS = (ast.stmt, ast.excepthandler, ast.match_case)
# statements that call nothing before their own calls: a branch's first one still sees its test hold
_SIMPLE_STATEMENTS = (ast.Expr, ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Return)
# the test of a `self.<attr>` truth (``if self.merged:``), as a branch condition's operator: "@entry"
# when no statement of the function ran before it (what callers know of the attribute still holds)
SELF_TRUTH, SELF_TRUTH_AT_ENTRY = "truthy", "truthy@entry"


def _self_truth_test(test: ast.expr, at_entry: bool) -> Optional[tuple[str, str, str, bool]]:
    """``self.merged`` / ``not self.merged`` -> ("self.merged", operator, "", True / False)."""
    sense = True
    while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test, sense = test.operand, not sense
    if isinstance(test, ast.Attribute) and isinstance(test.value, ast.Name) and test.value.id == "self":
        return f"self.{test.attr}", SELF_TRUTH_AT_ENTRY if at_entry else SELF_TRUTH, "", sense
    return None


def _params_only(conds: tuple) -> tuple:
    """The conditions that hold through a whole branch: a parameter never re-bound keeps its value,
    an attribute of ``self`` may change at the first statement that runs."""
    return tuple(c for c in conds if c[1] not in (SELF_TRUTH, SELF_TRUTH_AT_ENTRY))


def _branch_conditions(body: list[ast.stmt], params: frozenset[str], with_self: bool = False) -> dict[int, tuple]:
    """id(call) -> the tests of the ``if`` branches around it (outermost first): a parameter of
    ``params`` against a constant anywhere in the branch; with ``with_self``, the truth of
    ``self.<attr>`` (peft's ``if self.merged: self.unmerge()``) only for the calls of the branch's
    first statement, before anything can change it."""
    out: dict[int, tuple] = {}

    def walk(nodes, conds: tuple, entry: bool = False, first_only: bool = False) -> None:
        # ``first_only``: ``nodes`` is a statement list, whose first statement alone sees the self
        # tests in ``conds``; ``entry``: no statement of the function ran before ``nodes[0]``
        for i, n in enumerate(nodes):
            here = _params_only(conds) if first_only and i > 0 else conds
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                continue
            if isinstance(n, ast.If):
                at_entry = entry and i == 0
                test = _param_test(n.test, params)
                test = (*test, True) if test else (_self_truth_test(n.test, at_entry) if with_self else None)
                walk([n.test], here)
                if test is None:
                    walk(n.body, here, at_entry, True)
                    walk(n.orelse, here, at_entry, True)
                else:
                    name, op, literal, sense = test
                    walk(n.body, here + ((name, op, literal, sense),), at_entry, True)
                    walk(n.orelse, here + ((name, op, literal, not sense),), at_entry, True)
                continue
            if not here:
                if isinstance(n, _HOLDS_STATEMENTS):
                    # outside every tested branch only an `if` adds a condition, and only statements
                    # hold one: the expressions here need no walk
                    walk([c for c in child_nodes(n) if isinstance(c, _HOLDS_STATEMENTS)], here)
                continue
            if isinstance(n, ast.Call):
                out[id(n)] = here
            if isinstance(n, _HOLDS_STATEMENTS) and not isinstance(n, _SIMPLE_STATEMENTS):
                walk(child_nodes(n), _params_only(here))  # a loop, `with` or `try` runs other code first
            else:
                walk(child_nodes(n), here)

    docstring = body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
    walk(body[1:] if docstring else body, (), True, True)
    # a nested function that calls itself is a reference cycle (the function, its own cell): cleared
    # here, so that what it holds goes as soon as this returns, not at the next cyclic collection
    del walk
    return out


_COUNTING_BUILTINS = frozenset({"len", "int", "float", "bool", "str", "isinstance", "hasattr", "callable"})


def _returned_items(returns: list[ast.expr], values, body_nodes: list[ast.AST]) -> Optional[tuple[int, frozenset[int]]]:
    """``FunctionSummary.items`` of a function whose returns are ``returns``."""
    if not all(isinstance(r, ast.Tuple) and not any(isinstance(e, ast.Starred) for e in r.elts) for r in returns):
        return None
    size = len(returns[0].elts)
    if any(len(r.elts) != size for r in returns):
        return None
    # locals whose every binding the values saw (an augmented assignment or a `with ... as` they do not)
    seen: set[str] = set()
    unseen: set[str] = set()
    for node in body_nodes:
        for target in _targets(node):
            names = set(_target_name_ids(target))
            (unseen if isinstance(node, ast.AugAssign) else seen).update(names)
    plain = seen - unseen - values.params
    surely = frozenset(i for i in range(size) if all(_surely_no_tensor(r.elts[i], values, plain) for r in returns))
    return size, surely


_BOOL_TORCH = frozenset(
    f"torch.{n}" for n in "isnan isinf isfinite isneginf isposinf logical_and logical_or logical_not logical_xor "
    "eq ne lt le gt ge isclose isin".split()
)
_BOOL_FACTORIES = frozenset(
    f"torch.{n}" for n in "zeros ones empty full zeros_like ones_like empty_like full_like tensor".split()
)
_SHAPE_METHODS = frozenset(
    "view reshape flatten unsqueeze squeeze expand expand_as transpose permute contiguous clone detach t "
    "unflatten repeat".split()
)
_COMPARE = (ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE)


def _bool_items(returns: list[ast.expr], values, body_nodes: list[ast.AST], aliases: dict[str, str]) -> frozenset[int]:
    """``FunctionSummary.bool_items``: the positions where every returned tuple has a boolean tensor."""
    plain: dict[str, list[ast.expr]] = {}
    opaque: set[str] = set()
    for node in body_nodes:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            plain.setdefault(node.targets[0].id, []).append(node.value)
        else:
            for target in _targets(node):
                opaque.update(_bound_names(target))
    size = len(returns[0].elts)  # every return is a tuple of this size (`items`)

    visiting: set[str] = set()

    def boolean(node: ast.expr, depth: int = 0) -> bool:
        if depth > 6:
            return False
        if isinstance(node, ast.Name):
            if node.id in visiting:  # `mask = mask.view(b, n)`: what the other bindings say
                return True
            bound = plain.get(node.id)
            if node.id in opaque or node.id in values.params or not bound:
                return False
            visiting.add(node.id)
            try:
                return all(boolean(v, depth + 1) for v in bound)
            finally:
                visiting.discard(node.id)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Invert):
            return boolean(node.operand, depth + 1)
        if isinstance(node, ast.Subscript):  # a slice or an index of a boolean tensor keeps its dtype
            return boolean(node.value, depth + 1)
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.BitAnd, ast.BitOr, ast.BitXor)):
            return boolean(node.left, depth + 1) and boolean(node.right, depth + 1)
        if isinstance(node, ast.Compare):
            # a comparison of tensors; one of Python numbers is a Python bool
            return all(isinstance(op, _COMPARE) for op in node.ops) and any(
                TENSOR in values.of(o) for o in (node.left, *node.comparators))
        if not isinstance(node, ast.Call):
            return False
        qual = resolve(node.func, aliases) or ""
        if qual in _BOOL_TORCH:
            return True
        if qual in _BOOL_FACTORIES:
            return any(k.arg == "dtype" and resolve(k.value, aliases) == "torch.bool" for k in node.keywords)
        func = node.func
        if isinstance(func, ast.Attribute) and not qual.startswith("torch."):
            if func.attr == "bool" and not node.args:
                return True
            if func.attr == "to" and len(node.args) == 1 and resolve(node.args[0], aliases) == "torch.bool":
                return True
            return func.attr in _SHAPE_METHODS and boolean(func.value, depth + 1)
        return False

    found = frozenset(i for i in range(size) if all(boolean(r.elts[i]) for r in returns)) or NO_POSITIONS
    del boolean  # a reference cycle otherwise (see _branch_conditions)
    return found


def _bound_names(target: ast.expr) -> list[str]:
    """The names an assignment target binds: not those of `d[k] = v` or `self.x = v`."""
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [n for e in target.elts for n in _bound_names(e)]
    if isinstance(target, ast.Starred):
        return _bound_names(target.value)
    return []


def _surely_no_tensor(node: ast.expr, values, plain: set[str]) -> bool:
    """A literal, a container of such values, `[x] * n`, `len(...)`, or a local the values found no
    tensor in (`h` of `b, c, h, w = x.size()`)."""
    if isinstance(node, (ast.Constant, ast.JoinedStr)):
        return True
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return all(not isinstance(e, ast.Starred) and _surely_no_tensor(e, values, plain) for e in node.elts)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Add)):
        return _surely_no_tensor(node.left, values, plain) and _surely_no_tensor(node.right, values, plain)
    if isinstance(node, ast.Name):
        return node.id in plain and holds_no_tensor(values.of(node))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        return node.func.id in _COUNTING_BUILTINS
    return False


def _binds_name(target: ast.expr, name: str) -> bool:
    """Does the assignment target ``target`` bind ``name`` itself (``name = ...``, ``a, name = ...``)?"""
    todo = [target]
    while todo:
        t = todo.pop()
        if isinstance(t, ast.Name) and t.id == name:
            return True
        if isinstance(t, (ast.Tuple, ast.List)):
            todo.extend(t.elts)
        elif isinstance(t, ast.Starred):
            todo.append(t.value)
    return False


def _target_name_ids(target: ast.AST):
    """The names in an assignment target, every ``ast.Name`` below it (those of ``self.x`` and ``d[k]``
    too), in no particular order: what its callers count and collect. ``ast.walk`` was a tenth of the
    summaries' cost here (a generator of generators per target); a plain name and ``self.x`` need no
    walk, anything else takes the children without the ``ctx``/operator leaves."""
    kind = type(target)
    if kind is ast.Name:
        return (target.id,)
    if kind is ast.Attribute and type(target.value) is ast.Name:
        return (target.value.id,)
    found: list[str] = []
    stack = [target]
    while stack:
        node = stack.pop()
        if type(node) is ast.Name:  # its only other field is its ctx
            found.append(node.id)
        else:
            stack.extend(child_nodes(node))
    return found


def _binding_counts(body_nodes: list[ast.AST]) -> dict[str, int]:
    """How many times the body's assignments, loops, ``:=`` and comprehensions bind each name."""
    count: dict[str, int] = {}
    for b in body_nodes:
        for target in _targets(b):
            for name in _target_name_ids(target):
                count[name] = count.get(name, 0) + 1
    return count


def _set_once_not_none(body_nodes: list[ast.AST], bound: dict[str, int]) -> frozenset[str]:
    """Local names that one plain assignment binds, to a value that is never None (``_surely_not_none``),
    and nothing else binds (``bound``: ``_binding_counts``)."""
    good = set()
    for b in body_nodes:
        if isinstance(b, (ast.Assign, ast.AnnAssign)) and b.value is not None:
            targets = b.targets if isinstance(b, ast.Assign) else [b.target]
            if len(targets) == 1 and isinstance(targets[0], ast.Name) and _surely_not_none(b.value):
                good.add(targets[0].id)
    return frozenset(n for n in good if bound.get(n) == 1)


def _targets(node: ast.AST) -> list[ast.expr]:
    """What an assignment, ``for``, ``:=`` or comprehension binds."""
    if isinstance(node, ast.Assign):
        return node.targets
    target = getattr(node, "target", None)
    return [target] if target is not None else []


# What a call passes for a parameter when it passes a tensor's size (``x.shape``, ``x.shape[-2:]``,
# ``x.size()``): a ``torch.Size``, a tuple. Not a literal (no ``==`` test can be decided on it), but
# enough to decide ``isinstance(shape, tuple)`` and ``shape is None`` in the callee
# (fusionlint.analysis.dead_branches).
SIZE = "<torch.Size>"


# What a call passes when the value is surely not ``None`` but no constant: a tensor's size along one
# dimension (``x.shape[-1]``), arithmetic, a display. Decides only ``param is None`` / ``is not None``
# in the callee (qwen2.5-omni's ``_length_to_mask(lengths, max_len=seq_length)`` with
# ``seq_length = hidden_states.shape[-1]``: the ``if max_len is None:`` arm is never traced).
NOT_NONE = "<not None>"
# What a call passes when the value is a tensor's size along one dimension (``x.shape[-1]``,
# ``x.size(0)``, ``x.numel()``, arithmetic on one, a local bound only to those): never None, like
# NOT_NONE, and it changes with the input's shape. A function that is a Dynamo frame of its own
# (it breaks the graph) is specialised on it (fusionlint.project.model: ``FunctionFacts.varying``).
DIM_SIZE = "<size of a dimension>"
# What a call passes when the value is the index of a ``for`` loop (``for i, layer in enumerate(...)``,
# ``for i in range(n)``): never None, and another value on every iteration (FL208, like DIM_SIZE)
LOOP_INDEX = "<loop index>"
# ... a tuple or list display holding a tensor's size (``size=(N, N)``): like DIM_SIZE, but Dynamo guards
# on an element where one is read, not where the sequence is tested (``if size is None:``)
DIM_SIZES = "<sizes of dimensions>"
# how FunctionFacts.varying describes a parameter passed a sequence of sizes (DIM_SIZES, SIZE): FL208
# looks for the first read of an element
SIZES_PASSED = "tensor sizes"
# What a call passes when the value was read from a tensor's data by a graph break (``int(i.max()) + 1``,
# ``x.item()``, ``x.tolist()``, a local bound only to those): never None, and it changes with the data
# (FL208, like DIM_SIZE)
HOST_VALUE = "<value read from a tensor>"


def _const(node: ast.expr, params: frozenset[str], set_once: frozenset[str] = frozenset(),
           sized: frozenset[str] = frozenset(), indices: frozenset[str] = frozenset(),
           hosted: frozenset[str] = frozenset(), values: Optional[LocalValues] = None):
    literal = _literal(node)
    if literal is not None:
        return literal
    if _is_size(node):
        return SIZE
    if _is_dim_size(node, sized):
        return DIM_SIZES if isinstance(node, (ast.Tuple, ast.List)) else DIM_SIZE
    if isinstance(node, ast.Name) and node.id in indices:
        return LOOP_INDEX
    if _is_host_value(node, hosted) and (values is None or not values.of(node)):  # not `x * n`: a tensor
        return HOST_VALUE
    if isinstance(node, ast.Name):
        if node.id in params:
            return ("param", node.id)
        return NOT_NONE if node.id in set_once else None
    return NOT_NONE if _surely_not_none(node) else None


_DIM_ARITHMETIC = (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod)


def _is_dim_size(node: ast.expr, sized: frozenset[str] = frozenset()) -> bool:
    """A size along one dimension: ``x.shape[i]``, ``x.size(i)``, ``x.numel()``, arithmetic on one, a
    tuple or list display holding one, or a name in ``sized`` (locals bound only to those: ``_sized_and_hosted_locals``)."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, _DIM_ARITHMETIC):
        return _is_dim_size(node.left, sized) or _is_dim_size(node.right, sized)
    if isinstance(node, (ast.Tuple, ast.List)):  # `size=(N, N)`: a display holding one
        return any(_is_dim_size(e, sized) for e in node.elts)
    if isinstance(node, ast.Subscript) and not isinstance(node.slice, ast.Slice):
        return _is_size(node.value)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and not node.keywords:
        attr = node.func.attr
        return (attr == "size" and len(node.args) == 1) or (attr == "numel" and not node.args)
    return isinstance(node, ast.Name) and node.id in sized


def _is_host_value(node: ast.expr, hosted: frozenset[str] = frozenset()) -> bool:
    """A value a graph break reads from a tensor's data: ``x.item()``, ``x.tolist()``, ``int(i.max())``
    (``fusionlint.project.breaks``), arithmetic or a conditional expression with one, or a name in
    ``hosted`` (locals bound only to those)."""
    if isinstance(node, ast.BinOp):
        return _is_host_value(node.left, hosted) or _is_host_value(node.right, hosted)
    if isinstance(node, ast.IfExp):  # `int(i.max()) + 1 if i.numel() > 0 else 0`
        return _is_host_value(node.body, hosted) or _is_host_value(node.orelse, hosted)
    if isinstance(node, ast.Call):
        return reads_tensor_value(node)
    return isinstance(node, ast.Name) and node.id in hosted


def _loop_indices(body_nodes: list[ast.AST], params: frozenset[str], bound: dict[str, int]) -> frozenset[str]:
    """Names bound only as the index of a ``for`` loop (``bound``: ``_binding_counts``): ``i`` of
    ``for i in range(n)`` and of ``for i, layer in enumerate(self.layers)``."""
    found: set[str] = set()
    for b in body_nodes:
        if isinstance(b, (ast.For, ast.AsyncFor)) and isinstance(b.iter, ast.Call) and isinstance(b.iter.func, ast.Name):
            kind, target = b.iter.func.id, b.target
            if kind == "range" and isinstance(target, ast.Name):
                found.add(target.id)
            elif kind == "enumerate" and isinstance(target, ast.Tuple) and target.elts and isinstance(target.elts[0], ast.Name):
                found.add(target.elts[0].id)
    return frozenset(n for n in found if bound.get(n) == 1 and n not in params)


def _size_items(returns: list[ast.expr], items, sized: frozenset[str]) -> frozenset[int]:
    found = frozenset(i for i in range(items[0]) if all(_is_dim_size(r.elts[i], sized) for r in returns))
    return _shared(found) if found else NO_POSITIONS


def _returns_sparse(returns: list[ast.expr], body_nodes: list[ast.AST], aliases: dict[str, str]) -> bool:
    """Does a ``return`` hand back a sparse tensor the function made: a sparse constructor's result, or a
    local some assignment binds to one (PyG's ``to_torch_csr_tensor``: ``adj = torch.sparse_csr_tensor(...)``,
    ``return adj``)?"""
    def made(value: Optional[ast.expr]) -> bool:
        return isinstance(value, ast.Call) and resolve(value.func, aliases) in SPARSE_CONSTRUCTORS

    if any(made(r) for r in returns):
        return True
    names = {r.id for r in returns if isinstance(r, ast.Name)}
    return bool(names) and any(
        isinstance(b, ast.Assign) and made(b.value) and any(isinstance(t, ast.Name) and t.id in names for t in b.targets)
        for b in body_nodes
    )


def _sized_and_hosted_locals(body_nodes: list[ast.AST], params: frozenset[str], local_values: LocalValues) -> tuple[frozenset[str], frozenset[str]]:
    """(local names every binding of which is a size along one dimension: ``n = x.size(0)``,
    ``B, C, H, W = x.shape``, ``h = H // p``; those every binding of which is a value read from a
    tensor: ``_is_host_value``, not a tensor by ``local_values``), not parameters: what a caller passes is theirs."""
    values: dict[str, list] = {}  # name -> what each binding binds (None: not a size whatever else is)
    shaped = _shape_locals(body_nodes, params)  # `input_shape = x.shape if ... else y.shape`
    for b in body_nodes:
        if isinstance(b, (ast.Assign, ast.AnnAssign)) and b.value is not None:
            for target in (b.targets if isinstance(b, ast.Assign) else [b.target]):
                if isinstance(target, ast.Name):
                    values.setdefault(target.id, []).append(b.value)
                    continue
                if _pairs(target, b.value):  # `N, H = x.size(0), self.heads`: element by element
                    for element, value in zip(target.elts, b.value.elts):
                        values.setdefault(element.id, []).append(value)
                    continue
                whole = isinstance(target, (ast.Tuple, ast.List)) and _is_size(b.value, shaped)
                for n in _names_in(target):  # an element of `B, C, H, W = x.shape` is a size
                    values.setdefault(n.id, []).append(_A_DIM if whole and n in target.elts else None)
        else:
            for target in _targets(b):
                for n in _names_in(target):
                    values.setdefault(n.id, []).append(None)
    candidates = {n for n, vs in values.items() if n not in params and None not in vs}
    def host(node: ast.expr, known: frozenset[str]) -> bool:  # not `y = x * n`: a tensor
        return _is_host_value(node, known) and not local_values.of(node)

    return _bound_only_to(candidates, values, _is_dim_size, True), _bound_only_to(candidates, values, host, False)


def _shape_locals(body_nodes: list[ast.AST], params: frozenset[str]) -> frozenset[str]:
    """Locals every binding of which is a whole shape (``_is_size``): LED's and Longformer's ``input_shape =
    input_ids.shape if input_ids is not None else inputs_embeds.shape``."""
    values: dict[str, list] = {}
    for b in body_nodes:
        if isinstance(b, ast.Assign) and len(b.targets) == 1 and isinstance(b.targets[0], ast.Name):
            values.setdefault(b.targets[0].id, []).append(b.value)
        else:
            for target in _targets(b):
                for n in _names_in(target):
                    values.setdefault(n.id, []).append(None)
    candidates = {n for n, vs in values.items() if n not in params and None not in vs}
    if not candidates:
        return NO_NAMES
    return _bound_only_to(candidates, values, lambda v, known: _is_size(v, known), False)


def _bound_only_to(candidates: set, values: dict[str, list], judge, shape_items: bool) -> frozenset[str]:
    """The largest set of ``candidates`` whose every binding ``judge`` accepts given the others (``h = H // p``);
    ``shape_items``: an element of an unpacked shape is accepted."""
    names = set(candidates)
    while True:
        known = frozenset(names)
        drop = {n for n in names if not all((shape_items if v is _A_DIM else judge(v, known)) for v in values[n])}
        if not drop:
            return known
        names -= drop


_A_DIM = object()  # an element of an unpacked shape


def _names_in(target: ast.expr) -> list[ast.Name]:
    """The plain names an assignment target binds (``a``, ``a, (b, *c)``; not ``x.a`` or ``x[i]``)."""
    if isinstance(target, ast.Name):
        return [target]
    if isinstance(target, ast.Starred):
        return _names_in(target.value)
    if isinstance(target, (ast.Tuple, ast.List)):
        return [n for e in target.elts for n in _names_in(e)]
    return []


def _pairs(target: ast.expr, value: ast.expr) -> bool:
    """``a, b = x, y``: a tuple of plain names bound to a display of as many plain values."""
    return (
        isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List))
        and len(target.elts) == len(value.elts) and all(isinstance(e, ast.Name) for e in target.elts)
        and not any(isinstance(e, ast.Starred) for e in value.elts)
    )


def _surely_not_none(node: ast.expr) -> bool:
    """A form whose value is never ``None``: a size along one dimension (``x.shape[i]``, ``x.size(i)``,
    ``len(x)``, ``x.dim()``, ``x.numel()``), arithmetic or a comparison, a display, an f-string."""
    if isinstance(node, (ast.BinOp, ast.Compare, ast.Tuple, ast.List, ast.Dict, ast.Set, ast.JoinedStr,
                         ast.ListComp, ast.DictComp, ast.SetComp)):
        return True
    if isinstance(node, ast.Subscript):
        return isinstance(node.value, ast.Attribute) and node.value.attr == "shape"
    if isinstance(node, ast.Call) and not node.keywords:
        func = node.func
        if isinstance(func, ast.Attribute):
            return func.attr in ("size", "dim", "numel") and len(node.args) <= 1
        return isinstance(func, ast.Name) and func.id == "len" and len(node.args) == 1
    return False


def _is_size(node: ast.expr, shaped: frozenset[str] = frozenset()) -> bool:
    """``x.shape``, a slice of it (``x.shape[-2:]``), or ``x.size()``: a ``torch.Size``; also a name in
    ``shaped`` (locals bound only to those) and a conditional expression choosing between two."""
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice):
        node = node.value
    if isinstance(node, ast.IfExp):
        return _is_size(node.body, shaped) and _is_size(node.orelse, shaped)
    if isinstance(node, ast.Name):
        return node.id in shaped
    if isinstance(node, ast.Attribute):
        return node.attr == "shape"
    return (
        isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "size"
        and not node.args and not node.keywords
    )


def summarize(
    text: str, path: str, module: str, is_package: bool, previous: Optional[FileSummary] = None, keep_units: bool = False,
    with_tree: Optional[Callable[[ast.Module], None]] = None,
) -> Optional[FileSummary]:
    """The summary of one file, or None when CPython cannot parse it (the engine reports that).

    ``keep_units``: remember what each top-level definition added, and take it from ``previous``
    (an earlier summary of the same file) where the definition's text, line and the aliases before
    it are the same. ``with_tree``: called with CPython's tree once the summary is made (the lint's
    plan inputs are made from it, ``fusionlint.plan_inputs``)."""
    # An ast tree has no reference cycles: the cyclic collector, run again and again while its many
    # objects are allocated, would only re-scan every long-lived object of the run (measured: the
    # summaries cost twice as much with it on).
    enabled = gc.isenabled()
    gc.disable()
    try:
        tree = pyast.parse(text)
        out = FileSummary(path, module, is_package, hash(text))
        if keep_units:
            reuse = previous.units if previous is not None and previous.module == module and previous.units else {}
            out.units = {}
            _Summarizer(out, text, reuse).module(tree)
        else:
            _Summarizer(out).module(tree)
        if keep_units:
            out.shapes = dict(previous.shapes) if previous is not None and previous.shapes else {}
            out.outline = outline_of(tree, text, MAX_NODES, out.shapes)
        out.compile_targets = frozenset(out.compile_targets) or NO_NAMES
        out.loggers = frozenset(out.loggers) or NO_NAMES
    except (SyntaxError, ValueError, MemoryError):
        return None
    except RecursionError:  # pathological nesting: the file's own lint reports it
        return None
    finally:
        if enabled:
            gc.enable()
    if with_tree is not None:  # (outside the try: what it raises is not the text's failure to parse)
        with_tree(tree)
    return out


# What the walk of a function body (``_Summarizer._function``) does with each kind of node, looked up
# by its exact type (the parser makes no subclasses of these): most nodes are none of them, and a
# chain of isinstance tests cost each of them eight calls.
_NESTED, _SKIPPED, _CALL, _BINDING, _IMPORT, _RETURN, _TEST, _BOOL_OP = (
    "nested", "skipped", "call", "binding", "import", "return", "test", "bool-op")
_BODY_ROLES: dict[type, str] = {
    ast.FunctionDef: _NESTED, ast.AsyncFunctionDef: _NESTED, ast.ClassDef: _SKIPPED, ast.Call: _CALL,
    **dict.fromkeys((ast.Assign, ast.AnnAssign, ast.AugAssign, ast.NamedExpr, ast.For, ast.AsyncFor, ast.comprehension), _BINDING),
    ast.Import: _IMPORT, ast.ImportFrom: _IMPORT, ast.Return: _RETURN,
    **dict.fromkeys((ast.If, ast.While, ast.Assert, ast.IfExp), _TEST), ast.BoolOp: _BOOL_OP,
}


class _Summarizer:
    def __init__(self, out: FileSummary, text: Optional[str] = None, reuse: Optional[dict] = None) -> None:
        self.out = out
        self._text = text  # set when out.units is kept
        self._starts: Optional[list[int]] = None
        self._reuse = reuse or {}

    def _unit(self, stmt) -> None:
        """A top-level def/class, through ``out.units``: what it adds depends only on its text, its
        first line (line numbers are recorded), and the aliases and loggers before it."""
        from fusionlint.lines import line_starts

        if self._starts is None:
            self._starts = line_starts(self._text)
        starts = self._starts
        first = min([stmt.lineno, *(d.lineno for d in stmt.decorator_list)])
        last = stmt.end_lineno or stmt.lineno
        key = (self._text[starts[first - 1] : starts[last] if last < len(starts) else len(self._text)], first,
               tuple(self.out.aliases.items()), frozenset(self.out.loggers))
        added = self._reuse.get(key)
        if added is None:
            # what the definition reads of the module before it: the imports, and the loggers bound so far
            # (`logger.warning_once(...)` breaks the graph: without them an editor's summary missed it)
            scratch = FileSummary(self.out.path, self.out.module, self.out.is_package, 0, aliases=dict(self.out.aliases),
                                  loggers=set(self.out.loggers))
            inner = _Summarizer(scratch)
            if isinstance(stmt, ast.ClassDef):
                inner._class(stmt)
            else:
                inner._function(stmt, stmt.name, None, None)
            added = (scratch.classes, scratch.functions, scratch.compile_targets, scratch.aliases)
        self.out.units[key] = added
        classes, functions, targets, aliases = added
        for name, cls in classes.items():
            self.out.classes.setdefault(name, cls)
        for qual, fn in functions.items():
            self.out.functions.setdefault(qual, fn)
        self.out.compile_targets |= targets
        self.out.aliases.update(aliases)

    # -- imports ---------------------------------------------------------------------------------
    def _import(self, node: ast.Import | ast.ImportFrom) -> None:
        aliases = self.out.aliases
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    aliases[alias.asname] = _name(alias.name)
                else:
                    head = _name(alias.name.split(".", 1)[0])
                    aliases.setdefault(head, head)
            return
        base = node.module or ""
        if node.level:
            parts = self.out.module.split(".")
            if not self.out.is_package:
                parts = parts[:-1]
            if node.level > 1:
                parts = parts[: len(parts) - (node.level - 1)] if len(parts) >= node.level - 1 else []
            base = ".".join([*parts, base] if base else parts)
        for alias in node.names:
            if alias.name == "*":
                # `from .conv import *` in a package's __init__: the model looks names up there too
                # (PyG's `torch_geometric.nn.MessagePassing`); `*0`, `*1`... are no identifiers
                if base:
                    aliases.setdefault(f"*{sum(1 for k in aliases if k[:1] == '*')}", _name(base))
                continue
            aliases[alias.asname or alias.name] = _name(f"{base}.{alias.name}" if base else alias.name)

    # -- module ----------------------------------------------------------------------------------
    def module(self, tree: ast.Module) -> None:
        # a stack in reverse source order: statements are taken in source order (the first binding of
        # a name wins), and a 160,000-definition file costs no quadratic ``pop(0)``
        todo: list[ast.stmt] = tree.body[::-1]
        top = set(map(id, tree.body)) if self.out.units is not None else set()
        while todo:
            stmt = todo.pop()
            if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                self._import(stmt)
            elif self.out.units is not None and id(stmt) in top and isinstance(stmt, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                self._unit(stmt)
            elif isinstance(stmt, ast.ClassDef):
                self._class(stmt)
            elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self._function(stmt, stmt.name, None, None)
            elif isinstance(stmt, (ast.If, ast.Try)):
                todo += [*stmt.body, *getattr(stmt, "orelse", []), *getattr(stmt, "finalbody", []),
                         *(s for h in getattr(stmt, "handlers", []) for s in h.body)][::-1]
            elif isinstance(stmt, (ast.Assign, ast.Expr)):
                if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Call) and is_logger_factory(
                    resolve(stmt.value.func, self.out.aliases) or ""
                ):
                    self.out.loggers.update(t.id for t in stmt.targets if isinstance(t, ast.Name))
                for node in ast.walk(stmt.value):
                    if isinstance(node, ast.Call) and node.args:
                        self._compile_target(node)

    def _compile_target(self, call: ast.Call) -> None:
        """``torch.compile(fn)`` anywhere in the file (as the per-file pass reads it): ``fn`` is compiled."""
        if resolve(call.func, self.out.aliases) in _COMPILE:
            target = dotted(call.args[0])
            if target:
                self.out.compile_targets.add(target)

    def _class(self, node: ast.ClassDef) -> None:
        aliases = self.out.aliases
        bases = _names(resolve(b, aliases) or "" for b in node.bases)
        info = ClassSummary(node.name, bases, (), {}, _decorators(node, aliases), _line(node.lineno))
        self.out.classes.setdefault(node.name, info)
        methods: dict[str, None] = {}
        for stmt in node.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                methods.setdefault(stmt.name, None)
                self._function(stmt, info.qual(stmt.name), info, None)
        info.methods = _shared(tuple(methods))
        # every method is in: the facts are final (tuples, constructor names shared)
        for attr, facts in info.attrs.items():
            for fact in facts:
                fact.ctor, fact.line = _name(fact.ctor), _line(fact.line)
            # final now: an equal fact (`self.dropout = nn.Dropout(...)` on the same line of another file,
            # a modular_*.py and its generated modeling_*.py) and an equal tuple of them are kept once
            info.attrs[attr] = _shared(tuple(_shared(fact) for fact in facts))

    # -- functions -------------------------------------------------------------------------------
    def _function(self, node, qual: str, cls: Optional[ClassSummary], parent: Optional[str]) -> None:
        aliases = self.out.aliases
        args = node.args
        positional = [*args.posonlyargs, *args.args]
        defaults: list[Optional[ast.expr]] = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
        params = [_param(a.arg, _annotation(a.annotation), d) for a, d in zip(positional, defaults)]
        params += [_param(a.arg, _annotation(a.annotation), d) for a, d in zip(args.kwonlyargs, args.kw_defaults)]
        decorators = _decorators(node, aliases)
        if is_overload_stub(decorators):  # the plain definition of the name that follows is the one called
            return
        static = "staticmethod" in decorators
        body_nodes: list[ast.AST] = []
        calls: list[ast.Call] = []
        tests: list[ast.AST] = []  # `if`/`while`/`assert` and conditional expressions: breaks on a tensor's data
        bool_ops: list[ast.BoolOp] = []  # `a and b`: an operand Dynamo may never evaluate (is_compiling)
        returns: list[ast.expr] = []
        return_lines: list[int] = []
        uses: set[str] = set()
        nested: list = []
        stack: list[ast.AST] = list(node.body)
        role = _BODY_ROLES.get
        while stack:
            n = stack.pop()
            what = role(type(n))
            if what is not None:
                if what is _NESTED:
                    nested.append(n)
                    continue
                if what is _SKIPPED:
                    continue
                if what is _CALL:
                    calls.append(n)
                    func = n.func
                    if isinstance(func, ast.Attribute) and func.attr in TENSOR_METHODS and isinstance(func.value, ast.Name):
                        uses.add(func.value.id)
                    elif getattr(func, "attr", getattr(func, "id", None)) == "compile" and n.args:
                        self._compile_target(n)
                elif what is _BINDING:
                    body_nodes.append(n)
                elif what is _IMPORT:
                    self._import(n)
                elif what is _RETURN:
                    return_lines.append(n.lineno)
                    if n.value is not None:
                        returns.append(n.value)
                elif what is _TEST:
                    tests.append(n)
                else:
                    bool_ops.append(n)
            stack.extend(child_nodes(n))
        names = [p.name for p in params] + ([args.vararg.arg] if args.vararg else [])
        values = function_values(node, names, aliases, body_nodes)
        elements = _loop_elements(body_nodes)
        # parameters never re-bound in the body: what a caller passes is what the branches test
        bound = _binding_counts(body_nodes)
        fixed = frozenset([*(p.name for p in params), *([args.vararg.arg] if args.vararg else ())]) - bound.keys()
        # locals bound once, by a value that is never None: passed on, they still decide `is None` tests
        set_once = _set_once_not_none(body_nodes, bound) - {p.name for p in params}
        # `self.x = ...` and `self[i] = ...` change the object, not the name: its attributes' tests
        # are known (up to the first statement) unless `self` itself is bound to another object
        with_self = bool(params) and params[0].name == "self" and not static and not any(
            _binds_name(t, "self") for b in body_nodes for t in _targets(b)
        )
        conds = _branch_conditions(node.body, fixed, with_self) if fixed or with_self else {}
        traced = calls
        eager = eager_only_statements(node.body, lambda f: resolve(f, aliases))
        # and the arms of expressions it never evaluates (`None if is_compiling() else self._snapshot(p)`)
        eager += eager_only_expressions([*(t for t in tests if isinstance(t, ast.IfExp)), *bool_ops],
                                        lambda f: resolve(f, aliases))
        if eager:  # Dynamo never traces these calls (`if torch.jit.is_tracing(): return _onnx_loop(...)`)
            skipped = {id(n) for st in eager for n in ast.walk(st) if isinstance(n, ast.Call)}
            traced = [c for c in calls if id(c) not in skipped]
        traced_tests = tests
        if eager:
            inside = {id(n) for st in eager for n in ast.walk(st)}
            traced_tests = [t for t in tests if id(t) not in inside]
        spans = every_call_spans(node.body, frozenset(id(st) for st in eager), return_lines)
        every = frozenset(id(c) for c in traced if on_spans(c.lineno, spans))
        env = values.env  # a parameter's value holds its ("param", name) atom: never a tensor alone
        tensor_local = lambda name: env.get(name) == _TENSOR_VALUE  # noqa: E731
        breaks, break_line = first_break(
            every, traced, traced_tests, spans, lambda f: resolve(f, aliases), self.out.loggers, tensor_local
        )
        break_conds = (
            break_conditions(traced, traced_tests, conds, lambda f: resolve(f, aliases), self.out.loggers, tensor_local)
            if breaks == SOME_PATH and conds else ()
        )
        names = frozenset(p.name for p in params)
        (sized, hosted), indices = _sized_and_hosted_locals(body_nodes, names, values), _loop_indices(body_nodes, names, bound)
        sites = [s for s in (self._site(c, values, elements, fixed, conds, set_once, sized, indices, every, hosted)
                             for c in traced) if s is not None]
        sites += [s for s in (self._reference(c, values) for c in traced) if s is not None]
        if _returns_tensor_annotation(node.returns):
            # `def scatter(...) -> Tensor`: the signature says so, whatever its body's returns are
            # (PyG's `scatter` ends in `torch_scatter.scatter(...)`, a package that may be absent)
            returned: tuple[Value, ...] = (_TENSOR_VALUE,)
        else:
            returned = tuple(_shared(values.of(value)) for value in returns)
        items = _shared(_returned_items(returns, values, body_nodes)) if returns else None
        signature = _shared(tuple(params))  # `(self, hidden_states)`: shared by many functions
        info = FunctionSummary(
            qual, node.name, cls.name if cls else None, parent, signature, args.vararg.arg if args.vararg else None,
            static, decorators, tuple(sites), frozenset(uses) or NO_NAMES, _line(node.lineno), returned,
            items, _bool_items(returns, values, body_nodes, aliases) if items is not None else NO_POSITIONS,
            tuple(tuple(_shared(values.of(r.elts[i])) for r in returns) for i in range(items[0])) if items else (),
            breaks=breaks, break_line=_line(break_line), break_conds=_shared(break_conds) if break_conds else (),
            returns_host=bool(breaks) and any(_is_host_value(r, hosted) and not values.of(r) for r in returns),
            returns_sparse=bool(breaks) and _returns_sparse(returns, body_nodes, aliases),
            flag_params=self._flag_params(params, body_nodes, tests, cls),
            size_items=_size_items(returns, items, sized) if breaks and items else NO_POSITIONS,
            call_lines=pack_lines([s.line for s in sites], node.lineno),
        )
        self.out.functions.setdefault(qual, info)
        if cls is not None and parent is None:
            # a parameter whose default is a module-level name (`gumbel_sample=gumbel_sample`) stands for it
            # (defaults are evaluated outside the function: the parameter may share the name)
            referred = {a.arg: d.id for a, d in zip([*positional, *args.kwonlyargs], [*defaults, *args.kw_defaults])
                        if isinstance(d, ast.Name)}
            self._attr_facts(cls, node.name, body_nodes, calls, values, frozenset(names) | bound.keys(), referred)
        for inner in nested:
            self._function(inner, f"{qual}.<locals>.{inner.name}", cls, qual)
        if nested:
            info.wrappers = _wrappers(self.out.functions, qual)

    def _site(self, call: ast.Call, values: LocalValues, elements: dict[str, str], fixed: frozenset[str] = frozenset(),
              conds: Optional[dict] = None, set_once: frozenset[str] = frozenset(),
              sized: frozenset[str] = frozenset(), indices: frozenset[str] = frozenset(),
              every: frozenset[int] = frozenset(), hosted: frozenset[str] = frozenset()) -> Optional[CallSite]:
        func = call.func
        if isinstance(func, ast.Attribute):
            recv = func.value
            container = _self_attr(recv.value) if isinstance(recv, ast.Subscript) else None
            if isinstance(recv, ast.Name) and recv.id in elements:
                how, target = "self-elem", f"{elements[recv.id]}.{func.attr}"
            elif container is not None:  # `self.layers[i].set_mode(x)`
                how, target = "self-elem", f"{container}.{func.attr}"
            elif isinstance(recv, ast.Name) and recv.id == "self":
                how, target = "self", func.attr
            elif isinstance(recv, ast.Call) and isinstance(recv.func, ast.Name) and recv.func.id == "super":
                how, target = "super", func.attr
            elif isinstance(recv, ast.Attribute) and isinstance(recv.value, ast.Name) and recv.value.id == "self":
                # `self.encoder.set_mode(x)`: a method of a submodule (or attribute object), traced in place
                how, target = "self-sub", f"{recv.attr}.{func.attr}"
            else:
                name = dotted(func)
                if name is None or name.split(".", 1)[0] in values.env:
                    return None
                qual = resolve(func, self.out.aliases) or ""
                if qual.split(".", 1)[0] in _EXTERNAL_ROOTS:
                    return None
                how, target = "dotted", qual
        elif isinstance(func, ast.Name) and func.id in elements:
            # `for layer in self.layers: h = layer(h, mask)`: the element's forward, called with these arguments
            how, target = "self-elem", f"{elements[func.id]}.__call__"
        elif isinstance(func, ast.Name):
            if func.id in _BUILTIN_CALLS and func.id not in self.out.aliases:
                return None
            how, target = "name", func.id
        elif isinstance(func, ast.Subscript) and _self_attr(func.value) is not None:
            how, target = "self-elem", f"{_self_attr(func.value)}.__call__"  # `self.layers[i](h)`
        else:
            return None
        args, kwargs = _arguments(call.args, call.keywords, values)
        consts = None
        if not any(isinstance(a, ast.Starred) for a in call.args) and all(k.arg is not None for k in call.keywords):
            consts = _shared((
                tuple(_const(a, fixed, set_once, sized, indices, hosted, values) for a in call.args),
                tuple((k.arg, _const(k.value, fixed, set_once, sized, indices, hosted, values)) for k in call.keywords),
            ))
        found = (conds or {}).get(id(call), ())
        return CallSite(how, _name(target), args, kwargs, _line(call.lineno), _name(dotted(func) or ""), consts, found,
                        id(call) in every)

    def _reference(self, call: ast.Call, values: LocalValues) -> Optional[CallSite]:
        """A function handed to a call rather than called: ``functools.partial(f, a)`` (a call of ``f``
        with ``a`` first) or ``run(self.block, x)`` / ``checkpoint(fn, x)`` (``fn`` is traced when the
        callee calls it; its arguments are not known here). Dynamo traces it in the caller's context."""
        if not call.args:
            return None
        if isinstance(call.func, ast.Name) and call.func.id in _BUILTIN_CALLS and call.func.id != "map":
            return None  # isinstance(self.norm, ...), getattr(self.cfg, ...): the object is not called
        first = call.args[0]
        partial = (resolve(call.func, self.out.aliases) or "") == "functools.partial"
        if isinstance(first, ast.Attribute) and isinstance(first.value, ast.Name) and first.value.id == "self":
            how, target = "self", first.attr
        elif isinstance(first, ast.Name) and first.id not in values.env and first.id not in _BUILTIN_CALLS:
            how, target = "name", first.id
        else:
            return None
        args, kwargs = _arguments(call.args[1:], call.keywords, values) if partial else ((), ())
        return CallSite(how, _name(target), args, kwargs, _line(call.lineno), "")

    def _flag_params(self, params, body_nodes, tests, cls: Optional[ClassSummary]) -> frozenset[str]:
        optional = frozenset(p.name for p in params if p.default == "none")
        if not optional:
            return NO_NAMES

        def attr_is_flag(attr: str) -> bool:  # what the class's methods summarised so far assign there
            facts = cls.attrs.get(attr, ()) if cls is not None else ()
            return bool(facts) and all(f.method == "__init__" and f.kind not in _NOT_FLAG_KINDS for f in facts)

        found = flag_params_ast(body_nodes, tests, optional, attr_is_flag)
        return _shared(found) if found else NO_NAMES

    def _attr_facts(self, cls: ClassSummary, method: str, body_nodes, calls, values: LocalValues,
                    local_names: frozenset[str] = frozenset(), referred: Optional[dict[str, str]] = None) -> None:
        for n in body_nodes:
            if isinstance(n, ast.Assign):
                for target in n.targets:
                    self._attr_write(cls, method, target, n.value, n.lineno, local_names, referred)
            elif isinstance(n, ast.AnnAssign) and n.value is not None:
                self._attr_write(cls, method, n.target, n.value, n.lineno, local_names, referred)
        for call in calls:
            func = call.func
            if (
                isinstance(func, ast.Attribute) and func.attr in ("register_buffer", "register_parameter")
                and isinstance(func.value, ast.Name) and func.value.id == "self" and call.args
                and isinstance(call.args[0], ast.Constant) and isinstance(call.args[0].value, str)
            ):
                kind = "buffer" if func.attr == "register_buffer" else "param"
                cls.attrs.setdefault(call.args[0].value, []).append(AttrFact(kind, "", method, call.lineno))

    def _attr_write(self, cls: ClassSummary, method: str, target: ast.expr, value: ast.expr, line: int,
                    local_names: frozenset[str] = frozenset(), referred: Optional[dict[str, str]] = None) -> None:
        if (
            isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List))
            and len(target.elts) == len(value.elts)
            and not any(isinstance(e, ast.Starred) for e in (*target.elts, *value.elts))
        ):  # `self.scale, self.shift = Scale(), Shift()`: each target gets its value
            for one, each in zip(target.elts, value.elts):
                self._attr_write(cls, method, one, each, line, local_names, referred)
            return
        if not (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self"):
            return
        named = value.id if isinstance(value, ast.Name) else None
        if named is not None and named in local_names:
            named = (referred or {}).get(named)  # a parameter: the module-level name its default is
        if named is not None:
            # `self.gumbel_sample = gumbel_sample`: a module-level name (a function, the model decides), called
            # as `self.gumbel_sample(...)` (vector-quantize-pytorch's codebooks take it as an `__init__` default)
            ref = _name(self.out.aliases.get(named, named))
            cls.attrs.setdefault(target.attr, []).append(AttrFact("ref", ref, method, line))
            return
        cls.attrs.setdefault(target.attr, []).append(self._fact(value, method, line))

    def _fact(self, value: ast.expr, method: str, line: int) -> AttrFact:
        if isinstance(value, ast.UnaryOp) and isinstance(value.op, (ast.USub, ast.UAdd)):
            value = value.operand
        if isinstance(value, ast.Constant):
            v = value.value
            kind = ("bool" if isinstance(v, bool) else "int" if isinstance(v, int) else "float" if isinstance(v, float)
                    else "str" if isinstance(v, str) else "none" if v is None else "unknown")
            return AttrFact(kind, "", method, line)
        if isinstance(value, (ast.List, ast.Dict)):
            return AttrFact("container", "", method, line)
        if isinstance(value, ast.Call):
            ctor = resolve(value.func, self.out.aliases) or ""
            last = ctor.rsplit(".", 1)[-1]
            if last == "Parameter":
                return AttrFact("param", ctor, method, line)
            if last in _MODULE_CONTAINERS:
                return AttrFact("modules", ctor, method, line, self._elements(value))
            if last[:1].isupper():
                return AttrFact("object", ctor, method, line)
            if torch_call_returns_tensor(ctor):
                return AttrFact("tensor", ctor, method, line)
        return AttrFact("unknown", "", method, line)

    def _elements(self, call: ast.Call) -> tuple[str, ...]:
        out = []
        items: list[ast.expr] = list(call.args)
        if len(items) == 1 and isinstance(items[0], (ast.List, ast.Tuple)):
            items = list(items[0].elts)
        elif len(items) == 1 and isinstance(items[0], (ast.ListComp, ast.GeneratorExp)):
            items = [items[0].elt]
        for item in items:
            if isinstance(item, ast.Call):
                out.append(resolve(item.func, self.out.aliases) or "")
        return tuple(out)


def _arguments(args: list[ast.expr], keywords: list[ast.keyword], values: LocalValues) -> tuple[tuple, tuple]:
    """A call's (positional values, (keyword, value) pairs), shared with every equal call's."""
    positional = _shared(tuple(None if isinstance(a, ast.Starred) else _shared(values.of(a)) for a in args))
    named = _shared(tuple(_shared((k.arg, _shared(values.of(k.value)))) for k in keywords if k.arg is not None))
    return positional, named


def _names(names) -> tuple[str, ...]:
    """A tuple of names (bases, decorators), shared with every equal one (most are ``()``)."""
    return _shared(tuple(_name(n) for n in names))


def _decorators(node, aliases: dict[str, str]) -> tuple[str, ...]:
    return _names(resolve(d.func if isinstance(d, ast.Call) else d, aliases) or "" for d in node.decorator_list)


def _wrappers(functions: dict[str, FunctionSummary], qual: str) -> tuple[str, ...]:
    """The functions nested in ``qual`` that call a parameter of an enclosing function up to ``qual``
    (``checked(func)`` -> ``checked.<locals>.wrapper``, which calls ``func``; also two levels down, as in
    ``capture_outputs(func=None, *, flag)`` -> ``wrapped_fn(func)`` -> ``wrapper``)."""
    prefix = f"{qual}.<locals>."
    found = []
    for name, fn in functions.items():
        if not name.startswith(prefix):
            continue
        outer: set[str] = set()
        parent = fn.parent
        while parent is not None:
            around = functions.get(parent)
            if around is None:
                break
            outer.update(p.name for p in around.params)
            if parent == qual:
                break
            parent = around.parent
        outer -= {p.name for p in fn.params}
        if any(site.how == "name" and site.target in outer for site in fn.calls):
            found.append(name)
    return _names(sorted(found))


def _self_attr(node: ast.expr) -> Optional[str]:
    """``self.layers`` -> "layers"."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return node.attr
    return None


def _loop_elements(body_nodes) -> dict[str, str]:
    """Loop variables bound to the elements of a ``self`` attribute: ``for layer in self.layers``,
    ``for i, layer in enumerate(self.layers)``, ``for block in self.blocks.values()`` -> {"layer": "layers"}.
    A name also bound some other way in the function is left out (it may not be an element there)."""
    out: dict[str, str] = {}
    other: set[str] = set()
    for n in body_nodes:
        if isinstance(n, (ast.For, ast.AsyncFor)):
            it, target = n.iter, n.target
            if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id in ("enumerate", "reversed") and len(it.args) == 1:
                if it.func.id == "enumerate":
                    target = target.elts[1] if isinstance(target, ast.Tuple) and len(target.elts) == 2 else None
                it = it.args[0]
            if isinstance(it, ast.Call) and isinstance(it.func, ast.Attribute) and it.func.attr == "values" and not it.args:
                it = it.func.value  # a ModuleDict's values
            attr = _self_attr(it)
            if attr is not None and isinstance(target, ast.Name):
                if out.setdefault(target.id, attr) != attr:
                    other.add(target.id)
                continue
            targets = [n.target]
        elif isinstance(n, ast.Assign):
            targets = n.targets
        elif isinstance(n, (ast.AnnAssign, ast.AugAssign, ast.NamedExpr, ast.comprehension)):
            targets = [n.target]
        else:
            continue
        for t in targets:
            other.update(_target_name_ids(t))
    return {name: attr for name, attr in out.items() if name not in other}


_TENSOR_VALUE: Value = frozenset({TENSOR})


def _returns_tensor_annotation(node: Optional[ast.expr]) -> bool:
    """``-> Tensor`` / ``-> torch.Tensor`` / ``-> "torch.LongTensor"``: a plain tensor, not Optional
    nor a union (those may return None or something else)."""
    if node is None:
        return False
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        text = node.value.strip()
    else:
        text = dotted(node) or ""
    return text.rsplit(".", 1)[-1] in TENSOR_ANNOTATIONS


def _annotation(node: Optional[ast.expr]) -> Optional[str]:
    if node is None:
        return None
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        text = node.value.replace(" ", "")
        text = text.removeprefix("Optional[").removesuffix("]") if text.startswith("Optional[") else text
        first = next((p for p in text.split("|") if p != "None"), text)
        return "tensor" if first.rsplit(".", 1)[-1] in TENSOR_ANNOTATIONS else "other"
    if isinstance(node, ast.Subscript) and (dotted(node.value) or "").rsplit(".", 1)[-1] == "Optional":
        return _annotation(node.slice)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        left = node.left
        if isinstance(left, ast.Constant) and left.value is None:
            return _annotation(node.right)
        return _annotation(left)
    name = dotted(node) or ""
    return "tensor" if name.rsplit(".", 1)[-1] in TENSOR_ANNOTATIONS else "other"


def _default(node: Optional[ast.expr]) -> Optional[str]:
    if node is None:
        return None
    if isinstance(node, ast.UnaryOp):
        node = node.operand
    if isinstance(node, ast.Constant):
        return "none" if node.value is None else "literal"
    return "other"


__all__ = ["FileSummary", "ClassSummary", "FunctionSummary", "CallSite", "AttrFact", "Param", "summarize", "NOTHING"]
