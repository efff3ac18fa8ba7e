"""In-place writes: which tensor methods write elements, which expressions are parameters, and the
``with torch.no_grad():`` rewrite and the test for code already under it. Shared by FL401, FL402, FL403
and FL405.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from fusionlint.analysis.walk import iter_nodes

# In-place methods that change metadata or bookkeeping, not the elements.
_NOT_WRITES = frozenset(
    {"requires_grad_", "retain_grad_", "share_memory_", "detach_", "set_", "resize_", "resize_as_", "rename_",
     "unsqueeze_", "squeeze_", "t_", "transpose_", "swapdims_", "swapaxes_", "as_strided_", "record_stream_",
     "untyped_storage_"}
)
_PARAM_ITERATORS = frozenset({"parameters", "named_parameters"})
_GRAD_OFF = frozenset({"torch.no_grad", "torch.inference_mode"})


def _turns_grad_off(expr: cst.BaseExpression, ctx) -> bool:
    """``torch.no_grad()``, ``torch.inference_mode()`` or ``torch.set_grad_enabled(False)``."""
    func = expr.func if isinstance(expr, cst.Call) else expr
    qual = ctx.qualname(func) or ""
    if qual in _GRAD_OFF:
        return True
    if qual == "torch.set_grad_enabled" and isinstance(expr, cst.Call) and expr.args:
        first = expr.args[0].value
        return isinstance(first, cst.Name) and first.value == "False"
    return False


def under_no_grad(ctx) -> bool:
    """The current node runs with autograd off: inside ``with torch.no_grad():`` (or inference_mode,
    ``set_grad_enabled(False)``), or in a function decorated with one of them."""
    for parent in ctx.iter_parents():
        if isinstance(parent, cst.With) and any(_turns_grad_off(item.item, ctx) for item in parent.items):
            return True
        if isinstance(parent, cst.FunctionDef):
            if any(_turns_grad_off(dec.decorator, ctx) for dec in parent.decorators):
                return True
    return False


def is_inplace_write(method: str) -> bool:
    """``add_``, ``fill_``, ``clamp_``...: a tensor method that writes elements in place."""
    return method.endswith("_") and not method.endswith("__") and not method.startswith("_") and method not in _NOT_WRITES


def param_loop_names(fn: cst.FunctionDef) -> set[str]:
    """Names bound by ``for p in self.parameters()`` / ``for n, p in self.<sub>.named_parameters()``."""
    found: set[str] = set()
    for node in iter_nodes(fn, (cst.For,), into_nested_defs=True):
        it = node.iter
        if not (isinstance(it, cst.Call) and isinstance(it.func, cst.Attribute)):
            continue
        if it.func.attr.value not in _PARAM_ITERATORS:
            continue
        root = it.func.value
        while isinstance(root, cst.Attribute):
            root = root.value
        if not (isinstance(root, cst.Name) and root.value == "self"):
            continue
        target = node.target
        if it.func.attr.value == "named_parameters":
            if isinstance(target, cst.Tuple) and len(target.elements) == 2:
                target = target.elements[1].value
            else:
                continue
        if isinstance(target, cst.Name):
            found.add(target.value)
    return found


def param_loops(ctx) -> set[str]:
    """``param_loop_names`` of the current function (computed once per function)."""
    fn = ctx.function
    if fn is None:
        return set()
    return ctx.memo(("param-loops", id(fn.node)), lambda: param_loop_names(fn.node))


def is_parameter(expr: cst.BaseExpression, ctx, loop_names: set[str]) -> bool:
    """``self.<param>``, ``self.<submodule>.weight/bias`` or a loop variable over ``self.parameters()``."""
    if isinstance(expr, cst.Name):
        return expr.value in loop_names
    if not isinstance(expr, cst.Attribute):
        return False
    cls = ctx.cls
    if cls is None:
        return False
    base = expr.value
    if isinstance(base, cst.Name) and base.value == "self":
        return expr.attr.value in cls.params
    if (
        expr.attr.value in ("weight", "bias")
        and isinstance(base, cst.Attribute)
        and isinstance(base.value, cst.Name)
        and base.value.value == "self"
    ):
        return base.attr.value in cls.submodules
    return False


def no_grad_wrap(ctx, node: cst.CSTNode, statement: str) -> Optional[str]:
    """``with torch.no_grad():`` + ``statement`` on the next line, for replacing ``node`` when it is the only
    small statement of its line (None otherwise, or when torch is not imported as a module)."""
    torch_name = ctx.alias_for("torch")
    if torch_name is None:
        return None
    parents = ctx.parents
    if isinstance(node, cst.BaseSmallStatement):
        owner, rest = node, parents
    elif parents and isinstance(parents[0], cst.Expr) and parents[0].value is node:
        owner, rest = parents[0], parents[1:]
    else:
        return None  # an expression inside a larger statement: no statement to wrap
    if not rest or not isinstance(rest[0], cst.SimpleStatementLine):
        return None  # `if c: p.data.zero_()` on one line
    if len(rest[0].body) != 1 or rest[0].body[0] is not owner:
        return None
    unit = ctx.module.default_indent
    return f"with {torch_name}.no_grad():\n{ctx.indent()}{unit}{statement}"


# `y op= v` -> `y = y op v`: the out-of-place spelling of each augmented assignment.
AUG_OPS = {
    cst.AddAssign: "+", cst.SubtractAssign: "-", cst.MultiplyAssign: "*", cst.DivideAssign: "/",
    cst.FloorDivideAssign: "//", cst.ModuloAssign: "%", cst.PowerAssign: "**",
}


def inplace_call_target(node: cst.Call, ctx) -> Optional[tuple[cst.BaseExpression, str, bool]]:
    """The tensor an in-place call writes: ``y.add_(1)`` -> (y, "add_", True);
    ``torch.relu_(y)`` -> (y, "torch.relu_", False); anything else -> None."""
    func = node.func
    if not isinstance(func, cst.Attribute) or not is_inplace_write(func.attr.value):
        return None
    qual = ctx.qualname(func) or ""
    if qual.startswith("torch.") and qual.count(".") == 1:
        if not node.args or node.args[0].keyword is not None:
            return None
        return node.args[0].value, qual, False
    return func.value, func.attr.value, True


def out_of_place_call(node: cst.Call, name: str, method: str, ctx) -> str:
    """``name.add_(1, alpha=2)`` rewritten as ``name = name.add(1, alpha=2)``."""
    args = ", ".join(ctx.code(a).strip().rstrip(",").strip() for a in node.args)
    return f"{name} = {name}.{method[:-1]}({args})"
