"""CPython's ``ast`` of a long text in pieces, and the children of a node, cheaply.

``ast.iter_child_nodes`` is a generator over ``ast.iter_fields``, and it also yields the ``ctx``
(``Load``/``Store``) and operator leaves of every name, attribute and expression: about a third of
what a walk pops. The project model's summaries and the sparse plan walk every node of every file,
so they take the children from here: the same nodes in the same order, less those leaves.

CPython's parser holds its own tree of the whole text (in a C arena) while it makes the Python one:
timm's ``vision_transformer.py`` (5,308 lines) took the process's peak 18.2 MiB up, 9.7 in pieces. ``parse`` parses a
long text in ``fusionlint.pieces``' pieces, each compiled after as many newlines as lines come
before it (the same line numbers; columns are per line), and their statements make the module: an
``ast`` tree records no layout, so it is the whole text's tree (``ast.dump`` equal, positions
included). A piece that does not parse is parsed with the next one; a text whose last piece does
not is compiled whole, which raises what the whole text raises.
"""

from __future__ import annotations

import ast

from fusionlint import pieces

# fields that never hold a node worth visiting: strings, ints, and the ctx/operator singletons
NOT_CHILDREN = frozenset(
    {"id", "arg", "name", "attr", "kind", "type_comment", "ctx", "op", "ops", "level", "module", "conversion",
     "is_async", "simple"}
)
_FIELDS: dict[type, tuple[str, ...]] = {}


def child_nodes(node: ast.AST) -> list[ast.AST]:
    """``list(ast.iter_child_nodes(node))`` without ``ctx`` and operator nodes."""
    kind = type(node)
    fields = _FIELDS.get(kind)
    if fields is None:
        fields = _FIELDS[kind] = tuple(f for f in kind._fields if f not in NOT_CHILDREN)
    out: list[ast.AST] = []
    for name in fields:
        value = getattr(node, name, None)
        if type(value) is list:
            for item in value:
                if isinstance(item, ast.AST):
                    out.append(item)
        elif isinstance(value, ast.AST):
            out.append(value)
    return out


def parse(text: str, filename: str = "<unknown>") -> ast.Module:
    """``compile(text, filename, "exec", PyCF_ONLY_AST, dont_inherit=True)``, a long text in pieces."""
    cuts = pieces.cuts(text)
    if cuts:
        tree = _in_pieces(text, cuts, filename)
        if tree is not None:
            return tree
    return compile(text, filename, "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)


def _in_pieces(text: str, cuts: list[tuple[int, str]], filename: str) -> "ast.Module | None":
    bounds = [0, *(at for at, _ in cuts), len(text)]
    inner = dict(cuts)  # offset -> indentation of a method's cut ("" at a top-level one)
    body: list[ast.stmt] = []
    lines_before = 0
    i = 0
    while i < len(bounds) - 1:
        piece = text[bounds[i] : bounds[i + 1]]
        within = inner.get(bounds[i], "")  # the piece starts inside the class the last one ended with
        ends_within = inner.get(bounds[i + 1], "")
        # a method's piece is the body of a class on the (blank) line before it
        code = "\n" * (lines_before - 1) + "class _:\n" + piece if within else "\n" * lines_before + piece
        try:
            module = compile(code, filename, "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
            methods, statements = (module.body[0].body, module.body[1:]) if within else ([], module.body)
            if ends_within and not _ends_in_class(statements or body, ends_within):
                raise SyntaxError("not a class's method")
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            if i + 2 >= len(bounds):
                return None
            del bounds[i + 1]  # the cut was inside a statement (a string, brackets) or not a class's: one piece with the next
            continue
        if within:
            cls = body[-1]
            cls.body.extend(methods)
            cls.end_lineno, cls.end_col_offset = methods[-1].end_lineno, methods[-1].end_col_offset
        body.extend(statements)
        lines_before += piece.count("\n")
        i += 1
    return ast.Module(body=body, type_ignores=[])


def _ends_in_class(statements: list[ast.stmt], within: str) -> bool:
    """Does the last statement, a class, hold its statements at ``within`` (a method's cut after it)?"""
    last = statements[-1] if statements else None
    return isinstance(last, ast.ClassDef) and last.body[0].col_offset == len(within.encode("utf-8"))
