"""Resolve names through a file's imports without libcst's QualifiedNameProvider.

QualifiedNameProvider costs several times a parse; rules only need "is this `torch.nn.functional.relu`?",
which a plain alias map answers: ``F`` -> ``torch.nn.functional``, ``np`` -> ``numpy``.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst


def dotted(expr: cst.BaseExpression) -> Optional[str]:
    """``a.b.c`` as written, or None for anything that is not a plain dotted name."""
    # exact types: libcst's node classes are ABCs, and an isinstance test against one goes through
    # ABCMeta for every other type (this runs for most calls and attributes of the linted code)
    kind = type(expr)
    if kind is cst.Name:
        return expr.value
    parts: list[str] = []
    while kind is cst.Attribute:
        parts.append(expr.attr.value)
        expr = expr.value
        kind = type(expr)
    if kind is not cst.Name:
        return None
    parts.append(expr.value)
    return ".".join(reversed(parts))


def resolve(expr: cst.BaseExpression, aliases: dict[str, str]) -> Optional[str]:
    """The dotted name of ``expr`` with its first component replaced through ``aliases``."""
    name = dotted(expr)
    return None if name is None else through_aliases(name, aliases)


def through_aliases(name: str, aliases: dict[str, str]) -> str:
    """``F.relu`` -> ``torch.nn.functional.relu`` when ``aliases`` maps ``F`` (libcst and ast callers)."""
    head, _, rest = name.partition(".")
    target = aliases.get(head)
    if target is None:
        return name
    return f"{target}.{rest}" if rest else target


# Decorators that make a definition a typing stub: the name is bound at run time by the last, plain
# definition (``typing.overload`` stubs; TorchScript's ``torch.jit._overload``, which PyTorch Geometric
# imports as ``overload`` for its ``remove_self_loops``-style utilities).
OVERLOAD_DECORATORS = frozenset(
    {
        "typing.overload", "typing_extensions.overload", "overload",
        "torch.jit._overload", "torch.jit._overload_method", "torch._jit_internal._overload",
        "torch._jit_internal._overload_method",
    }
)


def is_overload_stub(decorators) -> bool:
    """Whether resolved decorator names mark a definition as an overload stub, never the one called."""
    return any(d in OVERLOAD_DECORATORS for d in decorators)


def _module_name(node: cst.BaseExpression | cst.ImportStar | None) -> str:
    if node is None:
        return ""
    return dotted(node) or ""  # type: ignore[arg-type]


def record_import(node: cst.Import | cst.ImportFrom, aliases: dict[str, str]) -> None:
    """Add the names an import statement binds to ``aliases``."""
    if isinstance(node, cst.Import):
        for alias in node.names:
            full = dotted(alias.name) or ""
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                aliases[alias.asname.name.value] = full
            else:
                # `import torch.nn` binds `torch`
                head = full.split(".", 1)[0]
                aliases.setdefault(head, head)
        return
    if isinstance(node.names, cst.ImportStar):
        return
    base = "." * len(node.relative) + _module_name(node.module)
    for alias in node.names:
        name = dotted(alias.name) or ""
        local = name
        if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
            local = alias.asname.name.value
        sep = "" if base.endswith(".") else "."
        aliases[local] = f"{base}{sep}{name}" if base else name
