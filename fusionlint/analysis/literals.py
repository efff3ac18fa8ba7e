"""Values of int literals, as rules read them (dims, indices, loop bounds).

libcst keeps a literal's source text (``0x1``, ``1_000``, ``0o7``, a 5,000-digit number), and a
plain ``int(node.value)`` raised on all of those: on ``0x1`` because base 10 is not the literal's
base, on the long one because of CPython's 4,300-digit limit on str -> int conversion. One helper
reads them all the way Python does, and answers None for what is no literal worth reasoning about.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

# No dimension, index or loop bound needs more digits; longer literals are data, not shapes, and
# refusing them keeps clear of CPython's str -> int digit limit.
MAX_DIGITS = 40


def int_literal(expr: Optional[cst.BaseExpression]) -> Optional[int]:
    """The value of an int literal, or of a negated one (``-1``); None for anything else."""
    negative = False
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        negative, expr = True, expr.expression
    if not isinstance(expr, cst.Integer):
        return None
    text = expr.value
    if len(text) > MAX_DIGITS:
        return None
    try:
        value = int(text, 0)  # base 0: the literal's own prefix (0x, 0o, 0b) and underscores
    except ValueError:  # libcst checks a parsed literal's form; this guards nodes built by hand
        return None
    return -value if negative else value
