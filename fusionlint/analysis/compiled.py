"""Which functions of a file would ``torch.compile`` trace, and through which call chain.

Entry points: ``forward`` of ``nn.Module`` subclasses (bases resolved through imports and through
the other files of the run), ``forward``/``backward`` of ``torch.autograd.Function`` subclasses,
functions decorated with ``torch.compile`` or passed to ``torch.compile(...)``. From there the
chain follows ``self.method(...)`` calls within the class (and its same-file bases) and calls of
module-level functions of the same file. Nested functions inherit their parent's chain.
"""

from __future__ import annotations

from collections import deque
from typing import Optional

import libcst as cst

from fusionlint.analysis.index import ClassInfo, FileIndex, FunctionInfo
from fusionlint.analysis.names import resolve
from fusionlint.analysis.project import ProjectIndex, is_autograd_function_base, is_torch_module_base
from fusionlint.analysis.walk import iter_nodes
from fusionlint.semantic.is_compiling import cst_eager_only_expressions, cst_eager_only_statements

_COMPILE_DECORATORS = ("torch.compile", "torch.compiler.compile")
_DISABLE_DECORATORS = ("torch.compiler.disable", "torch._dynamo.disable", "torch._disable_dynamo")
# Class decorators that replace ``forward`` with a dispatcher, so the body written in the class is not
# what torch.compile traces by default. transformers >= 5 ``@use_experts_implementation``: MoE experts
# run ``grouped_mm`` unless ``experts_implementation="eager"`` is chosen (found auditing 5.24.0).
_FORWARD_REPLACING_DECORATORS = frozenset({"use_experts_implementation"})


def _forward_replaced(cls: ClassInfo, index: FileIndex) -> bool:
    for dec in cls.node.decorators:
        expr = dec.decorator.func if isinstance(dec.decorator, cst.Call) else dec.decorator
        qual = resolve(expr, index.aliases) or ""
        if qual.rsplit(".", 1)[-1] in _FORWARD_REPLACING_DECORATORS:
            return True
    return False


def classify_classes(index: FileIndex, project: Optional[ProjectIndex]) -> None:
    """Set ClassInfo.kind for every top-level class of the file."""
    for cls in index.classes.values():
        cls.kind = _kind_of(index, project, cls, frozenset({cls.name}))


def _kind_of(index: FileIndex, project: Optional[ProjectIndex], cls: ClassInfo, seen: frozenset[str]) -> Optional[str]:
    # module-level, not a closure: a nested function calling itself is a reference cycle that kept the
    # file's index and libcst tree alive until the cyclic collector ran
    for base in cls.bases:
        if is_torch_module_base(base):
            return "module"
        if is_autograd_function_base(base):
            return "autograd_function"
        local = index.classes.get(base)
        if local is not None and local.name not in seen:
            found = _kind_of(index, project, local, seen | {local.name})
            if found:
                return found
            continue
        if project is not None and local is None:
            found = project.class_kind(base.rsplit(".", 1)[-1])
            if found:
                return found
    return None


def _method(index: FileIndex, cls: ClassInfo, name: str, seen: frozenset[str] = frozenset()) -> Optional[FunctionInfo]:
    """``cls.name`` or the same method inherited from a base class defined in this file."""
    found = cls.methods.get(name)
    if found is not None:
        return found
    for base in cls.bases:
        local = index.classes.get(base)
        if local is not None and local.name not in seen:
            found = _method(index, local, name, seen | {cls.name})
            if found is not None:
                return found
    return None


def _untraced_calls(fn: FunctionInfo, index: FileIndex) -> set[int]:
    """ids of the calls in ``fn`` that sit in code Dynamo never traces (fusionlint.semantic.is_compiling)."""
    qualname = lambda f: resolve(f, index.aliases)  # noqa: E731
    # the arms of conditional expressions and boolean operands Dynamo never evaluates
    # (`self.snap = None if is_compiling() else self._snapshot(params)`)
    skipped = cst_eager_only_expressions(iter_nodes(fn.node, (cst.IfExp, cst.BooleanOperation)), qualname)
    body = fn.node.body.body if isinstance(fn.node.body, cst.IndentedBlock) else ()
    if any(isinstance(stmt, cst.If) or isinstance(getattr(stmt, "body", None), cst.IndentedBlock) for stmt in body):
        skipped += cst_eager_only_statements(body, qualname)
    return {id(n) for part in skipped for n in iter_nodes(part, (cst.Call,))} | {
        id(part) for part in skipped if isinstance(part, cst.Call)}


def mark_compiled(index: FileIndex, project: Optional[ProjectIndex]) -> None:
    """Set FunctionInfo.chain/kind for everything torch.compile would trace."""
    classify_classes(index, project)
    queue: deque[FunctionInfo] = deque()

    def enter(fn: FunctionInfo, frames: tuple[str, ...], kind: str) -> None:
        if fn.frames is None and not any(d in _DISABLE_DECORATORS for d in fn.decorators):
            fn.frames, fn.kind = frames, kind
            queue.append(fn)

    for cls in index.classes.values():
        if cls.kind == "module" and "forward" in cls.methods and not _forward_replaced(cls, index):
            enter(cls.methods["forward"], (f"{cls.name}.forward",), "forward")
        elif cls.kind == "autograd_function":
            for name in ("forward", "backward"):
                if name in cls.methods:
                    enter(cls.methods[name], (f"{cls.name}.{name}",), f"autograd_{name}")
    for fn in index.functions.values():
        if fn.parent is None and any(d in _COMPILE_DECORATORS for d in fn.decorators):
            enter(fn, (fn.qualname,), "compiled")
    for target in sorted(index.compile_targets):  # a set: sorted, so chains do not follow the hash seed
        fn = index.functions.get(target)
        if fn is not None:
            enter(fn, (fn.qualname,), "compiled")
        elif target in index.classes and "forward" in index.classes[target].methods:
            enter(index.classes[target].methods["forward"], (f"{target}.forward",), "forward")

    while queue:
        fn = queue.popleft()
        assert fn.frames is not None
        untraced = _untraced_calls(fn, index)
        for how, name, call in fn.calls:
            if id(call) in untraced:
                continue  # `if torch.jit.is_tracing(): return _onnx_loop(x)`: Dynamo never makes it
            callee: Optional[FunctionInfo] = None
            if how == "self" and fn.cls is not None:
                callee = _method(index, fn.cls, name)
                label = f"self.{name}"
            else:
                callee = index.functions.get(name)
                label = name
            if callee is not None:
                enter(callee, (*fn.frames, label), "helper")
    # Nested functions (closures, local helpers) are traced with their parent.
    for fn in index.functions.values():
        if fn.frames is None:
            parent = fn.parent
            while parent is not None and parent.frames is None:
                parent = parent.parent
            if parent is not None:
                fn.frames, fn.kind = parent.frames, "helper"
