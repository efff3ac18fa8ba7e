"""The source text of an annotation-sized expression, without libcst's code generation.

The tensor inference reads every parameter's annotation as text (``Optional[torch.Tensor]``,
``torch.Tensor | None``) several times per compiled function. ``Module.code_for_node`` builds a
code-generation state and enters a context manager per node for that: on transformers 5.24.0 it ran
125,000 times, mostly for annotations. Names, attributes, subscripts with plain indices and ``|`` are
rendered here from their fields, whitespace included, so the text is the same; any other node (a
string annotation, parentheses, whitespace spanning lines) goes to libcst.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

_EMPTY_MODULE = cst.Module([])


def expression_code(expr: cst.CSTNode) -> str:
    """``cst.Module([]).code_for_node(expr)``."""
    text = _render(expr)
    return text if text is not None else _EMPTY_MODULE.code_for_node(expr)


def _space(ws) -> Optional[str]:
    return ws.value if type(ws) is cst.SimpleWhitespace else None


def _render(expr) -> Optional[str]:
    kind = type(expr)
    if kind is cst.Name:
        return None if expr.lpar else expr.value
    if kind is cst.Attribute:
        if expr.lpar:
            return None
        base = _render(expr.value)
        before, after = _space(expr.dot.whitespace_before), _space(expr.dot.whitespace_after)
        if base is None or before is None or after is None:
            return None
        return f"{base}{before}.{after}{expr.attr.value}"
    if kind is cst.Subscript:
        return None if expr.lpar else _subscript(expr)
    if kind is cst.SimpleString:
        return None if expr.lpar else expr.value
    if kind is cst.Ellipsis:
        return None if expr.lpar else "..."

    if kind is cst.BinaryOperation and type(expr.operator) is cst.BitOr:
        if expr.lpar:
            return None
        left, right = _render(expr.left), _render(expr.right)
        before, after = _space(expr.operator.whitespace_before), _space(expr.operator.whitespace_after)
        if left is None or right is None or before is None or after is None:
            return None
        return f"{left}{before}|{after}{right}"
    return None


def _subscript(expr: cst.Subscript) -> Optional[str]:
    base = _render(expr.value)
    gap, opened, closed = _space(expr.whitespace_after_value), _space(expr.lbracket.whitespace_after), _space(expr.rbracket.whitespace_before)
    if base is None or gap is None or opened is None or closed is None:
        return None
    parts = [base, gap, "[", opened]
    last = len(expr.slice) - 1
    for i, element in enumerate(expr.slice):
        index = element.slice
        if type(index) is not cst.Index or index.star is not None:
            return None
        item = _render(index.value)
        if item is None:
            return None
        parts.append(item)
        comma = element.comma
        if type(comma) is cst.Comma:
            before, after = _space(comma.whitespace_before), _space(comma.whitespace_after)
            if before is None or after is None:
                return None
            parts.append(f"{before},{after}")
        elif i != last:  # MaybeSentinel.DEFAULT between elements: libcst writes ", "
            parts.append(", ")
    parts += [closed, "]"]
    return "".join(parts)
