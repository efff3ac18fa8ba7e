"""The unsafe fix FL201 and FL203 offer: keep a Python-number attribute in a non-persistent buffer
(``self.register_buffer(name, torch.tensor(v), persistent=False)``) and rewrite every write to an
in-place update (``*=`` -> ``.mul_()``, ``=`` -> ``.fill_()``), when no read changes meaning.

A registered buffer accepts only tensors (``model.threshold = 3.0`` raises TypeError) and a 0-d tensor
is no Python number (``round(t, 2)``, ``json.dumps(t)`` raise; ``str(t)`` is ``"tensor(3.)"``), so
writes and such uses anywhere in the run's files withhold the fix, and the finding says why.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from fusionlint.analysis.attributes import (
    Writes,
    class_reads,
    classify_use,
    code_of,
    file_facts,
    init_writes,
    scalar_kind,
    walk_with_parents,
    write_target,
)
from fusionlint.analysis.walk import iter_nodes
from fusionlint.rule import Applicability

_AUG_METHODS = {cst.AddAssign: "add_", cst.SubtractAssign: "sub_", cst.MultiplyAssign: "mul_", cst.DivideAssign: "div_"}


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
        return code_of(expr) == target_text
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        return _int_rhs(expr.expression, target_text)
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, (cst.Add, cst.Subtract, cst.Multiply)):
        return _int_rhs(expr.left, target_text) and _int_rhs(expr.right, target_text)
    return False


def _rewrite_write(stmt: cst.CSTNode, kind: str) -> Optional[str]:
    """``self.t *= 0.9`` -> ``self.t.mul_(0.9)``; ``self.t = v`` -> ``self.t.fill_(v)``; None if unsafe."""
    if getattr(stmt, "semicolon", cst.MaybeSentinel.DEFAULT) is not cst.MaybeSentinel.DEFAULT:
        return None
    target = write_target(stmt)
    if target is None:
        return None
    target_text = code_of(target)
    if isinstance(stmt, cst.AugAssign):
        method = _AUG_METHODS.get(type(stmt.operator))
        if method is None or (kind == "int" and method == "div_"):
            return None
        ok = _int_rhs(stmt.value, target_text) if kind == "int" else _simple_rhs(stmt.value, True)
        return f"{target_text}.{method}({code_of(stmt.value).strip()})" if ok else None
    if isinstance(stmt, cst.Assign):
        value = stmt.value
        ok = _int_rhs(value, target_text) if kind == "int" else _simple_rhs(value, True)
        return f"{target_text}.fill_({code_of(value).strip()})" if ok else None
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
        if "__init__(" in code_of(line):
            return True
    return False


def _outside_writes(ctx, cls, attr: str) -> Optional[str]:
    """Where ``attr`` is assigned outside ``cls`` (a subclass, a training script...): "at path:line"."""
    own = {id(stmt) for _, stmt in cls.self_attr_writes.get(attr, ())}
    own.update(id(stmt) for stmt in file_facts(ctx).writes.get(attr, ()))  # rewritten by the fix
    for stmt in file_facts(ctx).self_writes.get(attr, ()):
        if id(stmt) not in own:
            return f"by `{code_of(stmt).strip()}` in another class of this file"
    project = ctx.project
    for table in (project.attribute_writes, project.self_attribute_writes):
        for path, line in table.get(attr, ()):
            if path != ctx.path:
                return f"at {path}:{line}"
    return None


def _number_use(ctx, attr: str) -> Optional[str]:
    """The first place in the run's files that needs ``attr`` as a Python number ("`round(` at path:line")."""
    for path, line, how in ctx.project.python_number_uses(attr):
        return f"{how if how.startswith('an ') else '`' + how + '`'} at {path}:{line}"
    return None


def buffer_fix(ctx, cls, attr: str, writes: Writes, *, allow_compiled_writes: bool, title: str):
    """``(fix, None)``: the unsafe buffer fix for ``self.attr``; ``(None, why)`` when it could change the
    program's meaning in a way worth telling (``why`` completes "no automatic fix: ..."); ``(None, None)``
    when the code has a form the fix does not handle."""
    if cls is None or cls.kind != "module":
        return None, None
    kind = scalar_kind(cls, attr)
    if kind is None:
        return None, None
    where = _outside_writes(ctx, cls, attr)
    if where is not None:
        return None, f"`{attr}` is also assigned {where}, and a buffer accepts only tensors (assigning a number raises TypeError)"
    use = _number_use(ctx, attr)
    if use is not None:
        return None, f"{use} needs `{attr}` as a Python number, and a buffer is a 0-d tensor"
    torch_name = ctx.alias_for("torch")
    if torch_name is None:
        return None, None
    inits = init_writes(cls, attr)
    init_fn = cls.methods.get("__init__")
    if len(inits) != 1 or init_fn is None:
        return None, None
    init = inits[0]
    if not isinstance(init, (cst.Assign, cst.AnnAssign)) or init.value is None or write_target(init) is None:
        return None, None
    if getattr(init, "semicolon", cst.MaybeSentinel.DEFAULT) is not cst.MaybeSentinel.DEFAULT:
        return None, None
    if not _super_init_before(init_fn.node, init):
        return None, None
    value = init.value
    if isinstance(value, cst.Name):
        if kind != "float":
            return None, None
        value_text = f"float({value.value})"
    else:
        value_text = code_of(value).strip()
    edits = [ctx.replace(init, f'self.register_buffer("{attr}", {torch_name}.tensor({value_text}), persistent=False)')]
    write_stmts: list[cst.CSTNode] = []
    for method, stmt, compiled in writes.in_class:
        if compiled and not allow_compiled_writes:
            return None, None
        text = _rewrite_write(stmt, kind)
        if text is None:
            return None, None
        edits.append(ctx.replace(stmt, text))
        write_stmts.append(stmt)
    for stmt in writes.same_file:
        text = _rewrite_write(stmt, kind)
        if text is None:
            return None, None
        edits.append(ctx.replace(stmt, text))
        write_stmts.append(stmt)
    facts = file_facts(ctx)
    if attr in facts.unparsed_targets:
        return None, None
    # Every read must keep its meaning with a 0-d tensor: in compiled code as a tensor operand /
    # clamp bound / pow exponent..., or inside the right-hand side of a write we rewrite.
    for node, parents, fn in class_reads(ctx, cls, attr):
        if _inside(node, parents, write_stmts):
            continue
        if fn is None or not fn.compiled:
            return None, f"`self.{attr}` is read outside compiled code, where it would become a tensor"
        facts_fn = ctx.facts(fn)
        use = classify_use(node, parents, facts_fn.is_tensor, ctx.qualname)
        if use is None or not use.fixable:
            return None, f"a read of `self.{attr}` in `{fn.qualname}` would change meaning with a 0-d tensor"
    # reads of `model.attr` elsewhere in this file (a training loop printing it...) would see a tensor
    read_ids = {id(n) for n in facts.reads.get(attr, ())}
    all_reads = walk_with_parents(ctx.module, lambda n: id(n) in read_ids) if read_ids else []
    for node, parents, _ in all_reads:
        if not _inside(node, parents, write_stmts):
            return None, f"`{code_of(node)}` is read outside the class, where it would become a tensor"
    return ctx.fix(Applicability.UNSAFE, *edits, title=title), None


