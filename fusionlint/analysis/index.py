"""One traversal of a parsed file: its imports, classes, functions, call graph, and the nodes rules want.

The collector walks the module exactly once. Besides building the FileIndex it records every node
whose type some enabled rule handles, together with its enclosing function and its parent chain,
so rules can run afterwards without a second walk, once we know which functions are compiled.
"""

from __future__ import annotations

import types
from dataclasses import dataclass, field
from typing import Callable, Optional

import libcst as cst

from fusionlint.analysis.init_facts import InitParams, InitWrite, describe_cst, note_init_value, params_cst
from fusionlint.analysis.names import dotted, is_overload_stub, record_import, resolve
from fusionlint.analysis.walk import children

# A parent chain is a linked list (node, rest): recording it for a node costs one tuple.
ParentLink = Optional[tuple]


class Inexact:
    """Set when a rule asked the sparse plan's parse something only the left-out code could answer:
    the engine then lints the full text (fusionlint.sparse)."""

    def __init__(self) -> None:
        self.reasons: list[str] = []

    def hit(self, reason: str) -> None:
        self.reasons.append(reason)


@dataclass(eq=False)
class BlankedMethods:
    """The methods of one class the sparse plan left out of libcst's text, as CPython's tree saw them."""

    inexact: Inexact
    writes: dict[str, list[str]] = field(default_factory=dict)  # attr -> methods writing self.<attr> there


class _GuardedWrites(dict):
    """``ClassInfo.self_attr_writes`` when some writes are in left-out methods: asking for those
    (their statements are not in the parsed tree) makes the sparse parse inexact."""

    def __init__(self, data, blanked: BlankedMethods, cls_name: str) -> None:
        super().__init__(data)
        self._blanked, self._cls = blanked, cls_name

    def _asked(self, attr) -> None:
        if attr in self._blanked.writes:
            self._blanked.inexact.hit(f"{self._cls}: the statements writing self.{attr} were left out")

    def get(self, key, default=None):
        self._asked(key)
        return super().get(key, default)

    def __getitem__(self, key):
        self._asked(key)
        return super().__getitem__(key)

    def __contains__(self, key) -> bool:
        self._asked(key)
        return super().__contains__(key)

    def _all(self) -> None:
        if self._blanked.writes:
            self._blanked.inexact.hit(f"{self._cls}: every self.<attr> write asked for")

    def __iter__(self):
        self._all()
        return super().__iter__()

    def keys(self):
        self._all()
        return super().keys()

    def items(self):
        self._all()
        return super().items()

    def values(self):
        self._all()
        return super().values()


def guard_writes(cls: "ClassInfo") -> None:
    if cls.blanked is not None and cls.blanked.writes and not isinstance(cls.self_attr_writes, _GuardedWrites):
        cls.self_attr_writes = _GuardedWrites(cls.self_attr_writes, cls.blanked, cls.name)


@dataclass(eq=False)
class ClassInfo:
    name: str
    node: cst.ClassDef
    bases: list[str]  # resolved through imports
    kind: Optional[str] = None  # "module" | "autograd_function" | None
    methods: dict[str, "FunctionInfo"] = field(default_factory=dict)
    scalar_attrs: dict[str, str] = field(default_factory=dict)  # self.x = 5.0 in __init__: "int" | "float"
    int_attrs: dict[str, str] = field(default_factory=dict)  # subset of scalar_attrs: ints
    container_attrs: dict[str, str] = field(default_factory=dict)  # self.x = [] / {}: "list" | "dict"
    params: set[str] = field(default_factory=set)
    buffers: set[str] = field(default_factory=set)
    tensor_attrs: set[str] = field(default_factory=set)  # self.x = torch.ones(...) in __init__
    submodules: dict[str, str] = field(default_factory=dict)  # attr -> constructor qualname
    # attr -> the constructor qualnames of every module the class, a base or a subclass (any file) assigns
    # to it: a base's forward calls whatever a subclass's __init__ put there (project model)
    submodule_ctors: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # (attr, constructor) -> "path:line" where it is set (Project.submodule_set_at), when the model is known
    submodule_set_at: Optional[Callable[[str, str], Optional[str]]] = field(default=None, repr=False, compare=False)
    # attr -> (length, positions surely no tensor) of the tuples its class's forward returns
    # (fusionlint.project.model.Project.submodule_items), for `a, b = self.attr(x)`
    submodule_items: dict[str, tuple[int, frozenset[int]]] = field(default_factory=dict)
    # attr -> [(method name, Assign/AugAssign node)] for writes to self.<attr>
    self_attr_writes: dict[str, list[tuple[str, cst.CSTNode]]] = field(default_factory=dict)
    # attr -> the writes of self.<attr> in functions named __init__, described (fusionlint.analysis.init_facts):
    # what the rules ask of __init__, answered the same when the sparse plan left __init__ out of libcst's text
    init_writes: dict[str, list[InitWrite]] = field(default_factory=dict)
    init_params: Optional[InitParams] = None  # the parameters of the class's __init__; None: it has none
    # what the sparse plan left out of this class (None: nothing, or a full parse)
    blanked: Optional["BlankedMethods"] = None

    def writes_outside_init(self, attr: str) -> list[tuple[str, cst.CSTNode]]:
        """(method, statement) of every write of ``self.<attr>`` outside ``__init__``."""
        if self.blanked is not None and any(m != "__init__" for m in self.blanked.writes.get(attr, ())):
            self.blanked.inexact.hit(f"{self.name}: a left-out method writes self.{attr}")
        return [(m, stmt) for m, stmt in dict.get(self.self_attr_writes, attr, ()) if m != "__init__"]

    def write_methods(self) -> dict[str, list[str]]:
        """attr -> the methods writing ``self.<attr>``, in the parsed code and in what the sparse plan left out."""
        out: dict[str, list[str]] = {a: [m for m, _ in ws] for a, ws in dict.items(self.self_attr_writes)}
        if self.blanked is not None:
            for attr, methods in self.blanked.writes.items():
                out.setdefault(attr, []).extend(methods)
        return out


@dataclass(eq=False)
class FunctionInfo:
    name: str
    qualname: str  # "Model.forward", "helper", "Model.forward.<locals>.inner"
    node: cst.FunctionDef
    cls: Optional[ClassInfo]
    parent: Optional["FunctionInfo"] = None  # enclosing function for nested defs
    decorators: list[str] = field(default_factory=list)
    # ("self", "m", the call) or ("name", "f", the call)
    calls: list[tuple[str, str, cst.Call]] = field(default_factory=list)
    kind: str = "function"  # "forward" | "autograd_forward" | "autograd_backward" | "compiled" | "helper" | "function"
    # Set when compiled: the call chain that makes torch.compile trace it, one frame per step,
    # ("Model.forward", "self._mask"); ``chain`` is its display form.
    frames: Optional[tuple[str, ...]] = None
    # parameters the project model knows to be tensors beyond the entry-point defaults, with why
    # ("passed from Net.forward at models/net.py:12"): see fusionlint.project.model
    tensor_params: dict[str, str] = field(default_factory=dict)
    # callees as written ("self.embed", "norm_rows") whose project function returns a tensor (project model)
    tensor_calls: frozenset[str] = frozenset()
    # callees as written -> (tensor positions, boolean tensor positions) of the tuples they return
    # (the project model's FunctionFacts.item_calls)
    item_calls: dict[str, tuple[frozenset[int], frozenset[int]]] = field(default_factory=dict)
    # callees as written that hand back one of their arguments: (parameters, those returned)
    passthrough_calls: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = field(default_factory=dict)
    # parameters every compiled caller passes the same constant (fusionlint.project.model): name -> repr
    constants: dict[str, str] = field(default_factory=dict)
    # parameters whose value changes from one compiled call to another: name -> how (project model)
    varying: dict[str, str] = field(default_factory=dict)
    # calling it breaks the graph, and where (project model: FunctionFacts.splits); the callees as
    # written whose every call breaks (FunctionFacts.breaking_calls); those that break and return a value
    # read from a tensor (FunctionFacts.host_calls)
    splits: Optional[str] = None
    breaking_calls: frozenset[str] = frozenset()
    host_calls: frozenset[str] = frozenset()
    # ... and those that break and return a sparse tensor (FunctionFacts.sparse_calls)
    sparse_calls: frozenset[str] = frozenset()
    # ... and those that break and return tuples with sizes at these positions (FunctionFacts.size_calls)
    size_calls: dict[str, frozenset[int]] = field(default_factory=dict)
    # a decorator's wrapper: the decorated functions that break, when two or more (FunctionFacts.shared_by)
    shared_by: tuple[tuple[str, str, str], ...] = ()
    _facts: object = None  # TensorFacts, computed lazily
    _bindings: object = None  # fusionlint.semantic.bindings.bindings(node), computed lazily

    @property
    def chain(self) -> Optional[str]:
        """"Model.forward → self._mask" when compiled, else None."""
        return None if self.frames is None else " → ".join(self.frames)

    @property
    def compiled(self) -> bool:
        return self.frames is not None


@dataclass
class Record:
    node: cst.CSTNode
    function: Optional[FunctionInfo]
    cls: Optional[ClassInfo]
    parents: ParentLink


@dataclass
class FileIndex:
    aliases: dict[str, str] = field(default_factory=dict)
    classes: dict[str, ClassInfo] = field(default_factory=dict)
    functions: dict[str, FunctionInfo] = field(default_factory=dict)  # by qualname
    compile_targets: set[str] = field(default_factory=set)  # names passed to torch.compile(...)
    records: dict[str, list[Record]] = field(default_factory=dict)  # node type name -> records
    # names (as this file's imports resolve them) of project classes that subclass torch.Tensor
    tensor_classes: frozenset[str] = frozenset()

    def release(self) -> None:
        """Break the links between classes and their methods, and drop the lazily computed facts, once
        the file's rules are done: they are reference cycles, which would keep the libcst tree alive
        until the cyclic collector runs (fusionlint.engine lints a file with it switched off)."""
        for fn in self.functions.values():
            fn.cls = fn.parent = fn._facts = fn._bindings = None
        for cls in self.classes.values():
            cls.methods = {}
        self.records = {}


_BUFFER_CALLS = ("register_buffer",)
_PARAM_CALLS = ("register_parameter",)


class Collector:
    """Builds a FileIndex in one pass and records nodes of the ``wanted`` types.

    Driven by its own walk over ``fusionlint.analysis.walk.children`` (``collect(module)``), not libcst's visitor, which
    rebuilds every node it passes.
    """

    def __init__(self, wanted: frozenset[str]) -> None:
        self.index = FileIndex()
        self.wanted = wanted
        self._func: Optional[FunctionInfo] = None
        self._cls: Optional[ClassInfo] = None
        self._class_stack: list[Optional[ClassInfo]] = []
        for name in wanted:
            self.index.records[name] = []

    def collect(self, module: cst.Module) -> FileIndex:
        """Records every node of a wanted type with its function, class and parent chain, and calls
        the ``_enter_<Type>``/``_exit_<Type>`` handlers. The chain travels with each node on the
        stack and only nodes with an exit handler (classes, functions) come back to be left: generic
        enter/leave hooks cost two calls, a string and two attribute lookups per node, a twentieth of
        a cold run on transformers."""
        dispatch: dict[type, tuple] = {}
        records = self.index.records
        stack: list[tuple] = [(module, None)]
        pop, push, extend = stack.pop, stack.append, stack.extend
        function = types.FunctionType
        while stack:
            node, link = pop()
            kind = type(node)
            if kind is function:  # (an exit handler, the node it leaves)
                node(self, link)
                continue
            found = dispatch.get(kind)
            if found is None:
                name = kind.__name__
                found = dispatch[kind] = (
                    records[name] if name in self.wanted else None,
                    getattr(self, "_enter_" + name, None),
                    getattr(type(self), "_exit_" + name, None),
                )
            target, enter, exit_ = found
            if target is not None:
                target.append(Record(node, self._func, self._cls, link))
            if enter is not None:
                enter(node)
            if exit_ is not None:
                push((exit_, node))
            below = (node, link)
            kids = children(node)
            kids.reverse()
            extend([(kid, below) for kid in kids])
        return self.index

    # imports
    def _enter_Import(self, node: cst.Import) -> None:
        record_import(node, self.index.aliases)

    def _enter_ImportFrom(self, node: cst.ImportFrom) -> None:
        record_import(node, self.index.aliases)

    # classes
    def _enter_ClassDef(self, node: cst.ClassDef) -> None:
        bases = []
        for arg in node.bases:
            if arg.keyword is None:
                bases.append(resolve(arg.value, self.index.aliases) or "")
        info = ClassInfo(node.name.value, node, bases)
        if self._func is None and self._cls is None:
            self.index.classes[info.name] = info
        self._class_stack.append(self._cls)
        self._cls = info

    def _exit_ClassDef(self, node: cst.ClassDef) -> None:
        self._cls = self._class_stack.pop()

    # functions
    def _enter_FunctionDef(self, node: cst.FunctionDef) -> None:
        name = node.name.value
        if self._func is not None:
            qual = f"{self._func.qualname}.<locals>.{name}"
            cls = self._func.cls
        elif self._cls is not None:
            qual = f"{self._cls.name}.{name}"
            cls = self._cls
        else:
            qual, cls = name, None
        decorators = []
        for dec in node.decorators:
            expr = dec.decorator
            if isinstance(expr, cst.Call):
                expr = expr.func
            decorators.append(resolve(expr, self.index.aliases) or "")
        info = FunctionInfo(name, qual, node, cls, parent=self._func, decorators=decorators)
        # an overload stub is never what a call runs: the plain definition after it is (it stays the
        # current function while walked, so that its nested nodes keep their owner)
        if not is_overload_stub(decorators):
            if self._func is None and self._cls is not None:
                if self._cls.methods.setdefault(name, info) is info and name == "__init__":
                    self._cls.init_params = params_cst(node)
            self.index.functions.setdefault(qual, info)
        self._func = info

    def _exit_FunctionDef(self, node: cst.FunctionDef) -> None:
        assert self._func is not None
        self._func = self._func.parent

    # calls: the call graph, torch.compile(fn) targets, register_buffer/parameter
    def _enter_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self":
            method = func.attr.value
            if self._func is not None:
                self._func.calls.append(("self", method, node))
            if self._cls is not None and node.args and method in _BUFFER_CALLS + _PARAM_CALLS:
                first = node.args[0].value
                if isinstance(first, cst.SimpleString):
                    attr = first.evaluated_value
                    if isinstance(attr, str):
                        (self._cls.buffers if method in _BUFFER_CALLS else self._cls.params).add(attr)
            return
        if isinstance(func, cst.Name):
            if self._func is not None:
                self._func.calls.append(("name", func.value, node))
            return
        qual = resolve(func, self.index.aliases)
        if qual == "torch.compile" and node.args:
            target = dotted(node.args[0].value)
            if target:
                self.index.compile_targets.add(target)

    # self.<attr> writes: attribute kinds from __init__, and writes from other methods
    def _enter_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._self_write(target.target, node, node.value)

    def _enter_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._self_write(node.target, node, node.value)

    def _enter_AugAssign(self, node: cst.AugAssign) -> None:
        self._self_write(node.target, node, node.value, augmented=True)

    def _self_write(self, target: cst.BaseExpression, stmt: cst.CSTNode, value, augmented: bool = False) -> None:
        cls, func = self._cls, self._func
        if cls is None or func is None:
            return
        if not (isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name)):
            return
        if target.value.value != "self":
            return
        attr = target.attr.value
        cls.self_attr_writes.setdefault(attr, []).append((func.name, stmt))
        if func.name != "__init__":
            return
        desc = describe_cst(value)
        kind = "augassign" if augmented else "annassign" if isinstance(stmt, cst.AnnAssign) else "assign"
        own = func.parent is None and cls.methods.get("__init__") is func
        cls.init_writes.setdefault(attr, []).append(InitWrite(kind, desc, own))
        if not augmented:  # `self.x += 1` says nothing new about what x holds
            note_init_value(cls, attr, desc, self.index.aliases)
