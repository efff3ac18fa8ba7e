"""libcst's parse of a file the engine lints: without validating each node twice, and a long text
in pieces, each piece's tree the same as the whole text's.

libcst validates every node as it is constructed (``CSTNode.__post_init__`` calls ``_validate``:
whitespace, parentheses, identifiers). The nodes its parser builds come from source text that has
just parsed, so each check passes by construction; they cost about a tenth of the parse (30
transformers modeling files, 35,571 lines: 2.07-2.11 s -> 1.84-1.90 CPU s). libcst's own comment on
``__post_init__`` names this cost. Nodes built any other way (fix edits, ``with_changes``) are still
validated: the check is switched off only while ``parse`` runs (the class attribute is process-wide,
so parses hold a lock, and the static pass builds no nodes in other threads), and a fix's result is
parsed again with validation (``fusionlint.fixes``).

libcst's native parser holds its tokens and its own tree of the whole text until it has made the
Python one: parsing transformers' ``modeling_utils.py`` as the sparse pass cuts it (4,001 lines) took the
process's peak 35.6 MiB up, of which the Python tree it keeps is 8.1 MiB; in pieces of about 300 lines
13.1 MiB (0.33 against 0.43 CPU s).
That peak is the lint workers' peak memory. So a long text is parsed in the pieces
``fusionlint.pieces`` cuts it into, and the pieces' statements make one ``Module``, equal
(``deep_equals``) to the whole text's parse:

- a cut is only where the piece before it parses on its own: a line starting with ``def`` inside a
  string or brackets leaves that piece unterminated, which does not parse, and it is parsed again
  with the next one;
- the blank and comment lines before a cut end the piece before it, where libcst gives those
  indented deeper than the next statement to the block above them (as in the whole text) and the
  rest to the module's footer, which becomes the next statement's leading lines (as in the whole
  text);
- libcst writes a block's indentation only where it is not the module's default, which it takes
  from the text's first indented line: once a piece has shown it, each later piece is parsed after
  a first statement indented with it (``if 1:`` + ``pass``), taken out again;
- a text with a carriage return is parsed whole (a newline is written where it is not the
  module's default, taken from the text's first line end), as is one whose default is not known
  yet when a ``match`` comes (libcst takes a case's body's indentation there).
"""

from __future__ import annotations

import threading
from typing import Optional

import libcst as cst
from libcst._nodes.base import CSTNode

from fusionlint import pieces

_LOCK = threading.Lock()
_VALIDATING = CSTNode.__post_init__


def _trusted(self: CSTNode) -> None:
    return None


def parse(text: str) -> cst.Module:
    """``cst.parse_module(text)``, its nodes unvalidated; raises what it raises."""
    with _LOCK:
        CSTNode.__post_init__ = _trusted  # type: ignore[method-assign]
        try:
            cuts = pieces.cuts(text)
            if cuts:
                module = _in_pieces(text, cuts)
                if module is not None:
                    return module
            return cst.parse_module(text)
        finally:
            CSTNode.__post_init__ = _VALIDATING  # type: ignore[method-assign]


def _in_pieces(text: str, cuts: list[tuple[int, str]]) -> Optional[cst.Module]:
    """The module made from the pieces of ``text`` starting at ``cuts``, or None where the text must
    be parsed whole (the last piece does not parse, a ``match`` before the default indentation)."""
    bounds = [0, *(at for at, _ in cuts), len(text)]
    inner = dict(cuts)  # offset -> indentation of a method's cut ("" at a top-level one)
    body: list[cst.BaseStatement] = []
    indent: Optional[str] = None  # the module's default indentation, once a piece has shown it
    footer: tuple = ()  # the lines after the last piece's statements (its module's footer)
    module: Optional[cst.Module] = None
    header: tuple = ()
    i = 0
    while i < len(bounds) - 1:
        piece = text[bounds[i] : bounds[i + 1]]
        within = inner.get(bounds[i], "")  # the piece starts inside the class the last one ended with
        ends_within = inner.get(bounds[i + 1], "")
        try:
            if within:
                module = cst.parse_module(f"if 1:\n{indent}pass\nclass _:\n{piece}")
                methods = list(module.body[1].body.body)
                statements = list(module.body[2:])
            elif indent is None:
                module = cst.parse_module(piece)
                methods, statements = [], list(module.body)
                if any(isinstance(s, cst.Match) for s in statements):
                    return None
            else:
                module = cst.parse_module(f"if 1:\n{indent}pass\n{piece}")
                methods, statements = [], list(module.body[1:])
            # (only a piece kept shows the default: a joined one is parsed again, with its header)
            shown = module.default_indent if indent is None and any(_has_block(s) for s in statements) else indent
            if ends_within and (shown is None or not _ends_in_class(body, statements, shown, ends_within)):
                raise _NotThere
        except (cst.ParserSyntaxError, _NotThere):
            if i + 2 >= len(bounds):
                return None
            del bounds[i + 1]  # the cut was inside a statement (a string, brackets) or not a class's: one piece with the next
            continue
        except RecursionError:
            return None
        indent = shown
        if i == 0:
            header = tuple(module.header)
        elif module.header or not (methods or statements):
            return None  # (a piece starts with its statement: nothing can come before it)
        if within:
            cls = body[-1]
            assert isinstance(cls, cst.ClassDef) and isinstance(cls.body, cst.IndentedBlock)
            block = module.body[1].body
            # the lines between the last piece's last method and this one's first: those the class's
            # block took (its footer) and those at the module's level, as in the class
            methods[0] = methods[0].with_changes(
                leading_lines=(*cls.body.footer, *(_in_block(line, within) for line in footer), *methods[0].leading_lines)
            )
            body[-1] = cls.with_changes(body=cls.body.with_changes(body=(*cls.body.body, *methods), footer=block.footer))
        elif footer:
            statements[0] = statements[0].with_changes(leading_lines=(*footer, *statements[0].leading_lines))
        body.extend(statements)
        footer = tuple(module.footer)
        i += 1
    assert module is not None
    return cst.Module(
        body=body, header=header, footer=footer, encoding=module.encoding,
        default_indent=indent if indent is not None else module.default_indent,
        default_newline=module.default_newline, has_trailing_newline=module.has_trailing_newline,
    )


class _NotThere(Exception):
    """A method's cut after a piece that does not end inside a class at that indentation."""


def _ends_in_class(body: list, statements: list, indent: str, within: str) -> bool:
    """Does the class the piece ends with (its last statement, else the class it continues) hold
    its statements at ``within``, the indentation of the method cut after it?"""
    last = statements[-1] if statements else (body[-1] if body else None)
    if not isinstance(last, cst.ClassDef) or not isinstance(last.body, cst.IndentedBlock):
        return False
    return (last.body.indent if last.body.indent is not None else indent) == within


def _in_block(line: cst.EmptyLine, indentation: str) -> cst.EmptyLine:
    """A line libcst read at the module's level, as it reads it in a block of ``indentation``."""
    space = line.whitespace.value
    if space.startswith(indentation):
        return line.with_changes(indent=True, whitespace=cst.SimpleWhitespace(space[len(indentation):]))
    return line.with_changes(indent=False)


def _has_block(statement: cst.BaseStatement) -> bool:
    """Does a top-level statement hold an indented block (the tokenizer's INDENT)? One is at the
    first level of a statement's suites if anywhere: a one-line suite holds no compound statement."""
    suites = [getattr(statement, "body", None)]
    orelse = getattr(statement, "orelse", None)
    while orelse is not None:  # if / elif / else chains
        suites.append(orelse.body)
        orelse = getattr(orelse, "orelse", None)
    suites += [handler.body for handler in getattr(statement, "handlers", ())]
    finalbody = getattr(statement, "finalbody", None)
    if finalbody is not None:
        suites.append(finalbody.body)
    return any(isinstance(suite, cst.IndentedBlock) for suite in suites)
