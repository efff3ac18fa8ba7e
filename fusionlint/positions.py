"""Line/column ranges of libcst nodes, the same as libcst's ``PositionProvider`` gives, at a quarter of its cost.

``PositionProvider`` re-renders the module and, for every token, splits it on newlines to move a
(line, column) cursor, then builds two ``CodePosition`` objects per node: about twice the parse.
Here the render only adds token lengths to an offset and keeps ``(start, end)`` offsets per node;
offsets become lines and columns only for the nodes a report asks about, by bisecting the line
starts of the rendered text. The rules for which whitespace a range includes are libcst's own: the
node's ``_codegen`` calls ``record_syntactic_position`` exactly as it does for ``PositionProvider``.
(tests/test_positions.py checks node for node that both agree.)
"""

from __future__ import annotations

from bisect import bisect_right
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator, Optional

import libcst as cst
from libcst._nodes.internal import CodegenState
from libcst._position import CodePosition, CodeRange

from fusionlint.lines import line_starts


@dataclass
class _OffsetState(CodegenState):
    offset: int = 0
    ranges: dict = field(default_factory=dict)  # node -> (start offset, end offset)
    popped: str = ""  # the module's final newline, which libcst renders and then drops
    _starts: list = field(default_factory=list)

    def add_indent_tokens(self) -> None:
        self.tokens.extend(self.indent_tokens)
        for token in self.indent_tokens:
            self.offset += len(token)

    def add_token(self, value: str) -> None:
        self.tokens.append(value)
        self.offset += len(value)

    def pop_trailing_newline(self) -> None:
        # PositionProvider counts this newline (its cursor moved past it before the pop), so a file
        # without a final newline still ends its last nodes on the line after; keep it to agree.
        self.popped = self.tokens[-1] if self.tokens else ""
        super().pop_trailing_newline()

    def before_codegen(self, node: cst.CSTNode) -> None:
        self._starts.append(self.offset)

    def after_codegen(self, node: cst.CSTNode) -> None:
        start = self._starts.pop()
        if node not in self.ranges:  # a syntactic range recorded inside the node wins
            self.ranges[node] = (start, self.offset)

    @contextmanager
    def record_syntactic_position(
        self, node: cst.CSTNode, *, start_node: Optional[cst.CSTNode] = None, end_node: Optional[cst.CSTNode] = None
    ) -> Iterator[None]:
        start = self.offset
        try:
            yield
        finally:
            end = self.offset
            if start_node is not None:
                start = self.ranges[start_node][0]
            if end_node is not None:
                end = self.ranges[end_node][1]
            self.ranges[node] = (start, end)


class Positions:
    """``positions[node]`` -> ``CodeRange`` (1-based lines, 0-based code-point columns), like PositionProvider.

    With ``text`` (what libcst parsed) and ``statements`` (top-level statements of the module), only
    those statements are rendered: a finding's range needs the statement around it, not the file.
    A statement's render is its exact text (libcst round-trips), so where that text occurs once in
    ``text`` is where the statement starts. When it does not (the same statement written twice, the
    last line without its newline), or a node outside those statements is asked for, the whole module
    is rendered instead: the answer is the same either way, only the cost differs. A class whose
    reports all sit in methods goes one level further: those methods are rendered alone, with the
    class body's indentation in force, and found by their text the same way.
    """

    def __init__(
        self,
        module: cst.Module,
        text: Optional[str] = None,
        statements: Optional[list[cst.CSTNode]] = None,
        methods: Optional[list[tuple[cst.FunctionDef, cst.ClassDef]]] = None,
    ) -> None:
        """``statements``: the top-level statements to render; ``methods``: (method, its top-level
        class) pairs, for a class of ``statements`` whose reports are all inside methods. Such a
        class is not rendered whole: each method is rendered alone, at the class's indentation (its
        text, found once in ``text``, is where it starts). A node outside what was rendered renders
        the whole statements, then the module."""
        self._module = module
        self._text = text
        self._statements = statements
        self._whole = False
        self._ranges: dict = {}
        self._starts: list[int] = []
        self._level = "module"
        if text is not None and statements:
            alone = {id(c) for _, c in methods or ()}
            pieces = [(st, []) for st in dict.fromkeys(statements) if id(st) not in alone]
            if alone:
                pieces += [(m, [self._indent_of(c)]) for m, c in methods]
                if self._render_alone(text, pieces):
                    self._level = "methods"
                    return
            if self._render_statements(text, statements):
                self._level = "statements"
                return
        self._render_module()

    def _indent_of(self, cls: cst.ClassDef) -> str:
        indent = cls.body.indent if isinstance(cls.body, cst.IndentedBlock) else None
        return self._module.default_indent if indent is None else indent

    def _render_module(self) -> None:
        module = self._module
        state = _OffsetState(default_indent=module.default_indent, default_newline=module.default_newline)
        module._codegen(state)
        self._ranges = state.ranges
        self._starts = line_starts("".join(state.tokens) + state.popped)
        self._whole = True

    def _render_statements(self, text: str, statements: list[cst.CSTNode]) -> bool:
        return self._render_alone(text, [(statement, []) for statement in dict.fromkeys(statements)])

    def _render_alone(self, text: str, pieces: list[tuple[cst.CSTNode, list[str]]]) -> bool:
        """Render each (node, indent tokens in force there) once; False when a render is not found
        exactly once in ``text``."""
        module = self._module
        ranges: dict = {}
        done: set = set()
        for node, indents in pieces:  # in order, once each
            if id(node) in done:
                continue
            done.add(id(node))
            state = _OffsetState(default_indent=module.default_indent, default_newline=module.default_newline)
            state.indent_tokens = list(indents)
            node._codegen(state)
            rendered = "".join(state.tokens)
            at = text.find(rendered)
            if not rendered or at < 0 or text.find(rendered, at + 1) >= 0:
                return False
            for inner, (start, end) in state.ranges.items():
                ranges[inner] = (start + at, end + at)
        self._ranges = ranges
        self._starts = line_starts(text)
        return True

    def _position(self, offset: int) -> CodePosition:
        line = bisect_right(self._starts, offset)
        return CodePosition(line, offset - self._starts[line - 1])

    def _known(self, node: cst.CSTNode) -> bool:
        if node not in self._ranges and not self._whole:
            # a node outside the rendered methods: their statements; outside those: the module
            if self._level == "methods" and self._render_statements(self._text, self._statements):
                self._level = "statements"
            if node not in self._ranges:
                self._render_module()
        return node in self._ranges

    def __getitem__(self, node: cst.CSTNode) -> CodeRange:
        self._known(node)
        start, end = self._ranges[node]
        return CodeRange(self._position(start), self._position(end))

    def __contains__(self, node: cst.CSTNode) -> bool:
        return self._known(node)

    def get(self, node: cst.CSTNode) -> Optional[CodeRange]:
        return self[node] if self._known(node) else None
