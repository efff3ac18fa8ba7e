"""What a class's ``__init__`` assigns to ``self``, in a form both parsers can produce.

The rules ask a few questions about ``__init__`` on nearly every attribute compiled code reads: is
``self.eps`` a Python number (``scalar_kind``), is ``self.proj`` a ``torch.jit.script``'d module, a
``torch.Generator``, a ``torch.compiler.disable``'d callable, a torch object that is no tensor. Each
write is described by an ``InitValue`` (the kind of the assigned expression, the callee as written),
and ``__init__``'s parameters by their annotation and default. The libcst collector
(``fusionlint.analysis.index``) describes the ``__init__`` it parsed; the sparse plan
(``fusionlint.sparse``) describes, from CPython's tree, an ``__init__`` it leaves out of libcst's
text. ``note_init_value`` turns a description into the class's attribute kinds for both, so an
``__init__`` answers the same whichever parser read it.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Optional

import libcst as cst

from fusionlint.analysis.names import dotted as cst_dotted
from fusionlint.analysis.names import through_aliases
from fusionlint.analysis.render import expression_code
from fusionlint.pickling import by_fields


@by_fields
@dataclass(frozen=True, slots=True)
class InitValue:
    """The expression of one ``self.<attr> = <expr>``."""

    # "int" | "float" (a numeric literal, optionally negated) | "name" (``True``/``None`` included, as
    # libcst reads them) | "call" | "list" | "dict" | "other"
    kind: str
    name: str = ""  # "name": the identifier; "call": the callee as written ("" when not a dotted name)
    # "call": its first argument as written: "" (none) | "keyword" | "positional" | "positional-call"
    first_arg: str = ""
    # "call": the callee under a ``.manual_seed(...)`` chain (``torch.Generator().manual_seed(0)``:
    # "torch.Generator"), "" when what is under the chain is no call of a dotted name
    seeded: str = ""


OTHER = InitValue("other")


@by_fields
@dataclass(frozen=True, slots=True)
class InitWrite:
    stmt: str  # "assign" | "annassign" | "augassign"
    value: InitValue  # the right-hand side (of ``+=`` too)
    own: bool  # written in the body of the class's (first) ``__init__`` itself, not in a def nested in it


# ``__init__``'s parameters: name -> (annotation "int" | "float" | "other" | None, default "int" | "float" | None)
InitParams = dict[str, tuple[Optional[str], Optional[str]]]


# -- libcst ----------------------------------------------------------------------------------------
def _cst_number(expr: cst.BaseExpression) -> Optional[str]:
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        expr = expr.expression
    if isinstance(expr, cst.Integer):
        return "int"
    if isinstance(expr, cst.Float):
        return "float"
    return None


def describe_cst(expr: cst.BaseExpression) -> InitValue:
    number = _cst_number(expr)
    if number:
        return InitValue(number)
    if isinstance(expr, cst.Name):
        return InitValue("name", expr.value)
    if isinstance(expr, cst.List):
        return InitValue("list")
    if isinstance(expr, cst.Dict):
        return InitValue("dict")
    if isinstance(expr, cst.Call):
        first = ""
        if expr.args:
            arg = expr.args[0]
            if arg.keyword is not None:
                first = "keyword"
            else:
                first = "positional-call" if isinstance(arg.value, cst.Call) else "positional"
        inner: cst.BaseExpression = expr
        while isinstance(inner, cst.Call) and isinstance(inner.func, cst.Attribute) and inner.func.attr.value == "manual_seed":
            inner = inner.func.value
        seeded = (cst_dotted(inner.func) or "") if isinstance(inner, cst.Call) else ""
        return InitValue("call", cst_dotted(expr.func) or "", first, seeded)
    return OTHER


def params_cst(fn: cst.FunctionDef) -> InitParams:
    out: InitParams = {}
    params = fn.params
    for p in (*params.posonly_params, *params.params, *params.kwonly_params):
        annotation = None
        if p.annotation is not None:
            text = expression_code(p.annotation.annotation).strip()
            annotation = text if text in ("int", "float") else "other"
        out.setdefault(p.name.value, (annotation, _cst_number(p.default) if p.default is not None else None))
    return out


# -- CPython ast -----------------------------------------------------------------------------------
def _ast_dotted(node: ast.expr) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return ""
    parts.append(node.id)
    return ".".join(reversed(parts))


def _ast_number(node: Optional[ast.expr]) -> Optional[str]:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        node = node.operand
    if isinstance(node, ast.Constant) and not isinstance(node.value, bool):
        if isinstance(node.value, int):
            return "int"
        if isinstance(node.value, float):
            return "float"
    return None


def _first_arg(call: ast.Call) -> str:
    written = [(a.lineno, a.col_offset, a) for a in call.args] + [(k.lineno, k.col_offset, k) for k in call.keywords]
    if not written:
        return ""
    first = min(written, key=lambda t: (t[0], t[1]))[2]
    if isinstance(first, ast.keyword):
        if first.arg is not None:
            return "keyword"
        value = first.value  # `**kw`: libcst's Arg has no keyword
    else:
        value = first.value if isinstance(first, ast.Starred) else first
    return "positional-call" if isinstance(value, ast.Call) else "positional"


def describe_ast(node: ast.expr) -> InitValue:
    number = _ast_number(node)
    if number:
        return InitValue(number)
    if isinstance(node, ast.Constant) and (node.value is None or isinstance(node.value, bool)):
        return InitValue("name", repr(node.value))  # libcst reads True/False/None as names
    if isinstance(node, ast.Name):
        return InitValue("name", node.id)
    if isinstance(node, ast.List):
        return InitValue("list")
    if isinstance(node, ast.Dict):
        return InitValue("dict")
    if isinstance(node, ast.Call):
        inner: ast.expr = node
        while isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute) and inner.func.attr == "manual_seed":
            inner = inner.func.value
        seeded = _ast_dotted(inner.func) if isinstance(inner, ast.Call) else ""
        return InitValue("call", _ast_dotted(node.func), _first_arg(node), seeded)
    return OTHER


def params_ast(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> InitParams:
    args = fn.args
    positional = [*args.posonlyargs, *args.args]
    defaults: list[Optional[ast.expr]] = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    pairs = list(zip(positional, defaults)) + list(zip(args.kwonlyargs, args.kw_defaults))
    out: InitParams = {}
    for arg, default in pairs:
        annotation = None
        if arg.annotation is not None:
            a = arg.annotation
            annotation = a.id if isinstance(a, ast.Name) and a.id in ("int", "float") else "other"
        out.setdefault(arg.arg, (annotation, _ast_number(default)))
    return out


# -- the attribute kinds a description gives (the collector's rules, shared by both parsers) --------
def note_init_value(cls, attr: str, value: InitValue, aliases: dict[str, str]) -> None:
    """Record on ``cls`` (a ClassInfo) what ``self.<attr> = value`` in ``__init__`` makes the attribute."""
    if value.kind in ("int", "float"):
        cls.scalar_attrs.setdefault(attr, value.kind)
        if value.kind == "int":
            cls.int_attrs.setdefault(attr, value.kind)
        return
    if value.kind in ("list", "dict"):
        cls.container_attrs.setdefault(attr, value.kind)
        return
    if value.kind != "call":
        return
    ctor = through_aliases(value.name, aliases) if value.name else ""
    if ctor.endswith(("nn.Parameter", "nn.parameter.Parameter")):
        cls.params.add(attr)
    elif ctor and ctor.rsplit(".", 1)[-1][:1].isupper():
        cls.submodules[attr] = ctor
    elif ctor.startswith("torch."):
        from fusionlint.semantic.tensors import torch_call_returns_tensor  # (cycle: tensors imports index)

        if torch_call_returns_tensor(ctor):  # torch.ones(...) yes; torch.device(...) no
            cls.tensor_attrs.add(attr)
