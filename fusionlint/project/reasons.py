"""Why a propagated fact holds, as structured text whose lines are looked up when it is shown.

The propagation explains its facts ("`x` is a tensor: passed from Net.forward at model.py:48", "breaks
the graph (`self.pad` at line 120, which breaks)", "'sum' at a.py:12, 'max' at b.py:40"). Each place it
names is a call site of a compiled function, or the function's own first sure break: ``At`` names it
by what stays when lines move (the file, the function, which of its call sites), and the line is read
from the file's current summary when the reason is rendered (``Project.site_line``, a question the
findings cache records on its own). So a line inserted in compiled code, or above it, leaves the
propagated facts as they were: the findings cache keeps them and the entries that read them instead
of propagating the whole project again (transformers: a line inserted at the top of
``LlamaAttention.forward`` re-propagated every compiled function for lines that only messages show).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional, Union

from fusionlint.pickling import by_fields

BREAK = -1  # ``At.site`` of a function's own first sure break (``FunctionSummary.break_line``)


@by_fields
@dataclass(frozen=True, slots=True)
class At:
    """A place in a compiled function: its ``site``-th call site (``FunctionSummary.calls``), or BREAK."""

    path: str
    qualname: str
    site: int
    with_path: bool  # shown as "path:line" (another file's place) or "line N" (the function's own file)


@by_fields
@dataclass(frozen=True, slots=True)
class Reason:
    """Text with places in it: ``parts`` are strings, ``At``s and nested reasons, shown one after the other."""

    parts: tuple


@by_fields
@dataclass(frozen=True, slots=True)
class TwoCalls:
    """Two calls passing different constants: "'a' at p:3, 'b' at p:9", or "'a' and 'b' at p:3" when both
    calls are on one line (which only the lines at the time of showing tell)."""

    first: str
    first_at: At
    second: str
    second_at: At


Why = Union[str, Reason, TwoCalls]
LineOf = Callable[[At], Optional[int]]


def render(why, line_of: LineOf) -> str:
    """The text of ``why`` with each place's current line (``line_of``); a plain string as it is."""
    kind = type(why)
    if kind is str:
        return why
    if kind is At:
        return _place(why, line_of(why))
    if kind is TwoCalls:
        first, second = line_of(why.first_at), line_of(why.second_at)
        if why.first_at.path == why.second_at.path and first == second:
            return f"{why.first} and {why.second} at {_place(why.second_at, second)}"
        return f"{why.first} at {_place(why.first_at, first)}, {why.second} at {_place(why.second_at, second)}"
    if kind is Reason:
        return "".join([render(part, line_of) for part in why.parts])
    return str(why)


def _place(at: At, line: Optional[int]) -> str:
    shown = "?" if line is None else str(line)
    return f"{at.path}:{shown}" if at.with_path else f"line {shown}"

