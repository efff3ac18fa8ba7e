"""Code Dynamo never traces: the eager-only branch of an ``is_compiling()`` test."""

from __future__ import annotations

import libcst as cst

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
