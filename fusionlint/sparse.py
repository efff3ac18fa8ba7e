"""The sparse source: the file as libcst should see it, with top-level definitions no finding can
come from, or depend on, replaced by empty lines.

libcst's parse is most of the static pass's cost, and most of a model file is code torch.compile
never traces (configuration classes, weight initialisation, utilities). The project model (CPython
``ast``) already knows which functions are compiled, so a top-level ``def``/``class`` is *blanked*
(each of its lines becomes an empty line with its own line ending) when all of these hold:

- the project model marks none of its functions compiled, it is not a class defining ``forward``/
  ``backward`` (the per-file pass's entry points), and it uses no name bound to ``compile``
  (``@torch.compile``, ``torch.compile(f)``, ``from torch import compile as tc``);
- its name is not used by the kept code (an identifier of CPython's tree: a name, attribute,
  import, parameter or definition), closed to a fixpoint: whatever the rules look up by name in the
  file (a same-file base class, a helper a compiled function calls, a ``torch.compiler.disable``'d
  function, a context-manager class, a checkpointed function, a second definition of a name, which
  ``setdefault`` would keep first) stays;
- it holds no ``import`` (the file's aliases are collected from everywhere) and none of the
  triggers of an active rule that looks at the whole file (``scope = "file"``).

Inside a kept class, a method is blanked too when the model does not compile it, nothing kept
names it, it holds no import, ``compile`` name or trigger, and it is not one the per-file pass reads
of every class: ``forward``/``backward``, a ``__dunder__`` other than ``__init__`` (``__enter__``...),
or one of two definitions of a name. ``__init__`` and the methods writing ``self.<attr>`` or
registering a buffer or parameter (a class's attribute facts) go too when CPython's tree describes
them as the collector would read them (``method_facts``: the writes, each value described by
``fusionlint.analysis.init_facts``, the registrations, ``__init__``'s parameters); ``apply_facts``
hands those to the parsed class (on timm 1.0.31 the sparse texts went from 95,678 to 58,200 lines).

libcst parses the text with the blanked lines cut out (an empty line still costs it a node), and
positions are mapped back to the source's lines (``CutPositions``): lines and columns of everything
kept are unchanged, so positions and fix edits are the same as with the full parse. Three facts the
rules read from the whole file are checked after the rules ran (``SparseContext`` records the
questions): the attribute reads/writes of ``file_facts`` (a blanked definition touching one of the
attributes asked about), ``ctx.nodes`` (only the logger assignments of the side-effects analysis are
understood; any other kind asked for), the methods looked up in a class's ``methods`` (a blanked
one asked for, or the methods iterated), the classes and functions looked up by name (a blanked
one), and the statements of a described method's writes (``ClassInfo.self_attr_writes`` of an
attribute it writes, ``writes_outside_init``, every read of an attribute). When a check fails, or
libcst infers another default indentation, the engine lints the full text instead.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from bisect import bisect_right
from dataclasses import dataclass, field
from typing import Iterable, Optional

import libcst as cst
from libcst.metadata import CodePosition, CodeRange

from fusionlint.analysis.context import RuleContext
from fusionlint.analysis.index import BlankedMethods, FileIndex, Inexact, guard_writes
from fusionlint.analysis.init_facts import InitParams, InitValue, InitWrite, describe_ast, note_init_value, params_ast
from fusionlint.lines import line_starts
from fusionlint.outline import Outline, Unit
from fusionlint.analysis.names import through_aliases
from fusionlint.project.summary import is_logger_factory
from fusionlint import pyast
from fusionlint.pyast import child_nodes
from fusionlint.semantic.values import dotted, resolve

# the memo key of fusionlint.analysis.attributes.file_facts
_FILE_FACTS_KEY = "attribute-file-facts"
_FILE_FACT_FIELDS = ("writes", "reads", "self_writes", "unparsed_targets")


@dataclass
class SparsePlan:
    text: str  # same lines as the source; blanked definitions are empty lines
    blanked: list[Unit]
    default_indent: str  # what libcst infers from the full text (the sparse text must agree)
    blanked_text: str = field(default="", repr=False)
    # what libcst parses: the source with the blanked definitions' lines cut out (an empty line
    # still costs libcst a node and a position), and where its lines are in the source
    cut_text: Optional[str] = field(default=None, repr=False)
    lines: Optional["LineMap"] = field(default=None, repr=False)
    # class name -> [(what a left-out __init__ / self-writing method does, the imports in force there)]
    class_facts: dict = field(default_factory=dict, repr=False)
    # the attributes the left-out code assigns on objects other than self (`model.t = v`), for file_facts' writes
    others_assigned: Optional[set] = field(default=None, repr=False)
    # does the left-out code assign a logger (what the side-effects analysis reads Assigns for)? None: unknown
    assigns_logger: Optional[bool] = field(default=None, repr=False)
    # blanked_text as the blanked definitions' own texts, where the caller has them (an editor's
    # projections: each re-lint asks about every projection, and each definition is in most of them)
    blanked_pieces: tuple[str, ...] = field(default=(), repr=False)

    def blanked_lines(self) -> int:
        return sum(u.end - u.start + 1 for u in self.blanked)

    def parsed_text(self) -> str:
        return self.cut_text if self.cut_text is not None else self.text


class LineMap:
    """Line numbers of a text with whole lines cut out -> line numbers of the source."""

    def __init__(self, runs: list[tuple[int, int]]) -> None:
        self._cut = [c for c, _ in runs]  # first line of each run of kept lines, in the cut text
        self._source = [s for _, s in runs]  # ... and in the source

    def line(self, line: int) -> int:
        i = bisect_right(self._cut, line) - 1
        return self._source[i] + line - self._cut[i]

    def position(self, pos: CodePosition, end: bool = False) -> CodePosition:
        if end and pos.column == 0 and pos.line > 1:  # just past a line end: past that line's end in the source
            return CodePosition(self.line(pos.line - 1) + 1, 0)
        return CodePosition(self.line(pos.line), pos.column)


class CutPositions:
    """``fusionlint.positions.Positions`` of the cut text, answering in the source's lines."""

    def __init__(self, positions, lines: LineMap) -> None:
        self._positions, self._lines = positions, lines

    def __getitem__(self, node: cst.CSTNode) -> CodeRange:
        rng = self._positions[node]
        return CodeRange(self._lines.position(rng.start), self._lines.position(rng.end, end=True))

    def __contains__(self, node: cst.CSTNode) -> bool:
        return node in self._positions

    def get(self, node: cst.CSTNode) -> Optional[CodeRange]:
        return self[node] if node in self._positions else None


def cut(source: str, spans: list[tuple[int, int]], units, blanked: Iterable[int]) -> tuple[str, str, LineMap]:
    """(the text with the ``blanked`` units as empty lines, the text with them cut out, its LineMap)."""
    return cut_pieces(source, [(*spans[i], units[i]) for i in blanked])


def cut_pieces(source: str, pieces: list[tuple[int, int, Unit]]) -> tuple[str, str, LineMap]:
    """``cut`` for (start offset, end offset, the Unit of its lines) pieces in source order."""
    blank_pieces, cut_texts, runs, previous, removed = [], [], [(1, 1)], 0, 0
    for a, b, unit in pieces:
        kept = source[previous:a]
        blank_pieces.append(kept)
        blank_pieces.append(_only_line_ends(source[a:b]))
        cut_texts.append(kept)
        removed += unit.end - unit.start + 1
        runs.append((unit.end + 1 - removed, unit.end + 1))
        previous = b
    blank_pieces.append(source[previous:])
    cut_texts.append(source[previous:])
    return "".join(blank_pieces), "".join(cut_texts), LineMap(runs)


def plan(source: str, outline: Outline, model, path: str, file_triggers,
         tree: "ast.Module | CodeNames | None" = None) -> Optional[SparsePlan]:
    """The sparse text of ``source`` (outlined as ``outline``), or None when nothing can be blanked.
    ``tree``: CPython's tree of ``source`` when the caller has it, or what this reads of it (``prepare``)."""
    units = outline.units
    if not units or outline.default_indent is None:
        return None
    if isinstance(tree, CodeNames):  # made ahead from CPython's tree of this very text (``prepare``)
        used = tree
    else:
        if tree is None:
            try:  # CPython's tree, for the names the code uses (~a tenth of a libcst parse)
                tree = pyast.parse(source)
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                return None
        used = code_names(tree)
    if len(used.units) != len(units):
        return None
    compiled_roots, compiled_methods = _compiled(model, path)
    compile_names = {"compile"} | _compile_aliases(model, path)
    # what the whole-file rules need kept: (text, identifiers) -> bool, or their triggers
    if callable(file_triggers):
        file_pins = file_triggers
    else:
        triggers = tuple(file_triggers)

        def file_pins(text: str, names: set) -> bool:
            return any(t in text for t in triggers)
    starts = line_starts(source)

    def span(first: int, last: int) -> tuple[int, int]:
        return starts[first - 1], starts[last] if last < len(starts) else len(source)

    spans = [span(u.start, u.end) for u in units]
    texts = [source[a:b] for a, b in spans]

    def pinned(names: _UnitNames, text: str) -> bool:
        return names.imports or not compile_names.isdisjoint(names.names) or file_pins(text, names.names)

    keep = [
        unit.name in compiled_roots or names.entry or pinned(names, text)
        for unit, names, text in zip(units, used.units, texts)
    ]
    # the methods of a kept class that can go too (fusionlint.sparse's docstring says which)
    method_texts = {(i, j): source[slice(*span(m.start, m.end))] for i, u in enumerate(used.units) for j, m in enumerate(u.methods)}
    method_keep = {
        (i, j): m.pinned or f"{units[i].name}.{m.name}" in compiled_methods or pinned(m, method_texts[(i, j)])
        for i, u in enumerate(used.units)
        for j, m in enumerate(u.methods)
    }
    # __init__ and methods writing self.<attr> go only when CPython's tree describes them as the
    # per-file pass would (fusionlint.analysis.init_facts); a class named twice keeps them (the
    # per-file pass keeps the last class of a name, the descriptions would go to the wrong one)
    class_counts: dict[str, int] = {}
    for unit in units:
        class_counts[unit.name] = class_counts.get(unit.name, 0) + 1
    described: dict[tuple[int, int], MethodFacts] = {}
    for (i, j), k in method_keep.items():
        m = used.units[i].methods[j]
        if k or not m.describable():
            continue
        facts = m.describe(units[i].name, source, method_texts[(i, j)], starts) if class_counts[units[i].name] == 1 else None
        if facts is None:
            method_keep[(i, j)] = True
        else:
            described[(i, j)] = facts
    # module-level statements go when nothing kept uses what they bind (timm's `default_cfgs` tables);
    # what the rules read of them by walking the module stays: a `compile` name, a trigger, a
    # `disable` (FL105's module-level `f = torch.compiler.disable(g)`), a logger (the side-effects analysis)
    summary = model.files.get(path) if model is not None else None
    loggers = summary.loggers if summary is not None else set()
    statement_texts = [source[slice(*span(st.start, st.end))] for st in used.statements]
    statement_keep = [
        not compile_names.isdisjoint(st.names) or "disable" in text or file_pins(text, st.names)
        or not loggers.isdisjoint(st.binds)
        for st, text in zip(used.statements, statement_texts)
    ]
    # names the kept code uses: the module-level code, then kept definitions and methods, to a fixpoint
    mentioned = set(used.outside)
    # what a left-out method's described writes name (a constructor, a function assigned to self.<attr>)
    # stays: the rules look those names up in the file
    for facts in described.values():
        for _, _, _, value in facts.writes:
            if value.name:
                mentioned.add(value.name.split(".", 1)[0])
    counted: set = set()
    changed = True
    while changed:
        changed = False
        for i, k in enumerate(keep):
            if k and i not in counted:
                counted.add(i)
                mentioned |= used.units[i].own
                changed = True
        for (i, j), k in method_keep.items():
            if k and keep[i] and (i, j) not in counted:
                counted.add((i, j))
                mentioned |= used.units[i].methods[j].names
                changed = True
        for n, k in enumerate(statement_keep):
            if k and ("stmt", n) not in counted:
                counted.add(("stmt", n))
                mentioned |= used.statements[n].names
                changed = True
            elif not k and not used.statements[n].binds.isdisjoint(mentioned):
                statement_keep[n] = changed = True
        for i, unit in enumerate(units):
            if not keep[i] and unit.name in mentioned:
                keep[i] = changed = True
        for (i, j), k in method_keep.items():
            # `super().__init__()` in kept code names every __init__: not a reason to keep one (a rule
            # looking a class's __init__ up is recorded by SparseContext and lints the file whole)
            name = used.units[i].methods[j].name
            if not k and name in mentioned and (name != "__init__" or (i, j) not in described):
                method_keep[(i, j)] = changed = True
    # a class keeps at least one statement (an empty body does not parse)
    for i, u in enumerate(used.units):
        if keep[i] and u.methods and u.body_size == sum(1 for j in range(len(u.methods)) if not method_keep[(i, j)]):
            for j in range(len(u.methods)):
                method_keep[(i, j)] = True
    gone_units = [i for i, k in enumerate(keep) if not k]
    gone_methods = [key for key, k in method_keep.items() if not k and keep[key[0]]]
    gone_statements = [n for n, k in enumerate(statement_keep) if not k]
    if not gone_units and not gone_methods and not gone_statements:
        return None
    pieces = [(*spans[i], units[i]) for i in gone_units]
    pieces += [
        (*span(st.start, st.end), Unit(f"<module statement at line {st.start}>", st.start, st.end))
        for st in (used.statements[n] for n in gone_statements)
    ]
    pieces += [
        (*span(m.start, m.end), Unit(f"{units[i].name}.{m.name}", m.start, m.end))
        for i, j in gone_methods
        for m in (used.units[i].methods[j],)
    ]
    pieces.sort(key=lambda p: p[0])
    text, cut_text, lines = cut_pieces(source, pieces)
    # blanked methods are wrapped in a class so that the logger check can parse them on their own
    blanked_text = "".join(map(_line_ended, [*(texts[i] for i in gone_units), *(statement_texts[n] for n in gone_statements)]))
    blanked_text += "".join("class _:\n" + _line_ended(method_texts[key]) for key in gone_methods)
    class_facts: dict[str, list] = {}
    imports = sorted(used.imports, key=lambda n: (n.lineno, n.col_offset))
    aliases: dict[str, str] = {}
    taken = 0
    for key in sorted(k for k in gone_methods if k in described):
        facts = described[key]
        while taken < len(imports) and imports[taken].lineno < facts.start:  # the collector's aliases there
            record_import_ast(imports[taken], aliases)
            taken += 1
        class_facts.setdefault(facts.cls, []).append((facts, dict(aliases)))
    others: set = set()
    callees: set = set()
    for piece in [*(used.units[i] for i in gone_units), *(used.statements[n] for n in gone_statements),
                  *(used.units[i].methods[j] for i, j in gone_methods)]:
        others |= piece.others
        callees |= piece.calls_assigned
    everything = dict(aliases)
    for node in imports[taken:]:
        record_import_ast(node, everything)
    loggers = any(is_logger_factory(through_aliases(c, everything)) for c in callees)
    return SparsePlan(
        text, [p[2] for p in pieces], outline.default_indent, blanked_text, cut_text, lines, class_facts, others, loggers
    )


@dataclass
class _UnitNames:
    names: set  # every identifier its code uses or binds (names, attributes, imports, parameters, defs)
    imports: bool  # holds an import (the file's aliases are collected from everywhere)
    entry: bool  # a class defining forward/backward (entry points of the per-file pass)
    own: set = field(default_factory=set)  # a class's names outside its methods (all names otherwise)
    methods: list = field(default_factory=list)  # a class's methods that may be blanked (_MethodNames)
    body_size: int = 0  # a class's statements
    others: set = field(default_factory=set)  # attributes it assigns on anything but self
    calls_assigned: set = field(default_factory=set)  # callees of its `x = f(...)` (a logger factory?)


@dataclass
class _MethodNames:
    name: str
    start: int  # first line (decorators included)
    end: int
    names: set
    imports: bool
    pinned: bool  # kept whenever its class is: what the per-file pass reads of every method
    others: set = field(default_factory=set)  # attributes it assigns on anything but self
    calls_assigned: set = field(default_factory=set)  # callees of its `x = f(...)` (a logger factory?)
    node: Optional[ast.AST] = None  # __init__ or a method writing self.<attr>: described when left out
    # ``node``'s description made ahead (``prepare``, which drops the node): ``facts`` (None where it
    # cannot be described) when ``made``
    facts: Optional["MethodFacts"] = None
    made: bool = False

    def describable(self) -> bool:
        return self.node is not None or self.made

    def describe(self, cls_name: str, source: str, text: str, starts: list[int]) -> Optional["MethodFacts"]:
        if self.node is not None:
            return method_facts(cls_name, self.node, source, text, starts)
        return self.facts


@dataclass
class _StmtNames:
    """A module-level statement that can be left out: an assignment to names, a docstring or a call."""

    start: int
    end: int
    names: set  # the identifiers it uses or binds
    binds: set  # the names it assigns
    others: set = field(default_factory=set)  # attributes it assigns on anything but self
    calls_assigned: set = field(default_factory=set)  # callees of its `x = f(...)` (a logger factory?)


@dataclass
class CodeNames:
    units: list[_UnitNames]  # per top-level def/class, in order
    outside: set  # identifiers of the module-level code around them that always stays
    imports: list = field(default_factory=list)  # every import statement of the file (any depth)
    statements: list = field(default_factory=list)  # module-level statements that may be left out (_StmtNames)


# Methods kept whenever their class is: entry points, protocol methods Python calls without naming
# them (__init__, __enter__, __call__...), and any method writing self.<attr> or registering a buffer
# or parameter, since the per-file pass collects a class's attribute facts from every method.
_REGISTERS = frozenset({"register_buffer", "register_parameter"})


def prepare(tree: ast.Module, source: str) -> CodeNames:
    """What ``plan`` reads of CPython's ``tree`` of ``source``, with no node of it kept but the imports:
    the names, and the description of each method that may be left out (made whatever the plan
    decides; whether a description is used is decided from the model, which is not built yet)."""
    used = code_names(tree)
    definitions = [s for s in tree.body if isinstance(s, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))]
    starts = line_starts(source)
    for definition, unit in zip(definitions, used.units):
        for m in unit.methods:
            if m.node is not None:
                text = source[starts[m.start - 1] : starts[m.end] if m.end < len(starts) else len(source)]
                m.facts, m.made, m.node = m.describe(definition.name, source, text, starts), True, None
    return used


def code_names(tree: ast.Module) -> CodeNames:
    units: list[_UnitNames] = []
    outside: set = set()
    imports: list = []
    statements: list[_StmtNames] = []
    body = tree.body
    for k, stmt in enumerate(body):
        if isinstance(stmt, ast.ClassDef):
            units.append(_class_names(stmt, imports))
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            others: set = set()
            calls: set = set()
            names, holds_import, _entry, _writes = _walk(stmt, imports, others, calls)
            units.append(_UnitNames(names, holds_import, False, own=names, others=others, calls_assigned=calls))
        else:
            others, calls = set(), set()
            names = _walk(stmt, imports, others, calls)[0]
            binds = _statement_binds(stmt)
            last = stmt.end_lineno or stmt.lineno
            alone = (k == 0 or (body[k - 1].end_lineno or body[k - 1].lineno) < stmt.lineno) and (
                k + 1 == len(body) or last < _first_line(body[k + 1])
            )
            if binds is not None and alone:
                statements.append(_StmtNames(stmt.lineno, last, names, binds, others, calls))
            else:
                outside |= names
    return CodeNames(units, outside, imports, statements)


def _first_line(stmt: ast.stmt) -> int:
    return min([stmt.lineno, *(d.lineno for d in getattr(stmt, "decorator_list", ()))])


def _statement_binds(stmt: ast.stmt) -> Optional[set]:
    """The names a module-level statement that may be left out binds (``x = ...``, ``a, b = ...``,
    ``x: T = ...``, a docstring or a call on its own: none), or None for any other statement."""
    if isinstance(stmt, ast.Expr):
        return set() if isinstance(stmt.value, (ast.Constant, ast.Call)) else None
    if isinstance(stmt, ast.AnnAssign):
        return {stmt.target.id} if isinstance(stmt.target, ast.Name) and stmt.value is not None else None
    if not isinstance(stmt, ast.Assign):
        return None
    out: set = set()
    todo = list(stmt.targets)
    while todo:
        target = todo.pop()
        if isinstance(target, ast.Name):
            out.add(target.id)
        elif isinstance(target, (ast.Tuple, ast.List)):
            todo.extend(target.elts)
        elif isinstance(target, ast.Starred):
            todo.append(target.value)
        else:  # `obj.attr = ...`, `table[k] = ...`: changes something else
            return None
    return out


def _class_names(cls: ast.ClassDef, imports_seen: list) -> _UnitNames:
    """The class's names, with those of each method that could be blanked kept apart (each
    statement of the body is walked once)."""
    counts: dict[str, int] = {}
    for stmt in cls.body:
        name = getattr(stmt, "name", "")
        counts[name] = counts.get(name, 0) + 1
    own: set = {cls.name}
    for part in [*cls.bases, *cls.keywords, *cls.decorator_list]:
        own |= _walk(part, imports_seen)[0]
    every = set(own)
    imports = entry = False
    methods: list[_MethodNames] = []
    previous_end = max([cls.lineno, *((getattr(b, "end_lineno", None) or b.lineno) for b in [*cls.bases, *cls.keywords])])
    all_others: set = set()
    all_calls: set = set()
    for stmt in cls.body:
        others: set = set()
        calls: set = set()
        names, holds_import, defines_entry, writes = _walk(stmt, imports_seen, others, calls)
        all_others |= others
        all_calls |= calls
        every |= names
        imports |= holds_import
        entry |= defines_entry
        first = min([stmt.lineno, *(d.lineno for d in getattr(stmt, "decorator_list", ()))])
        last = stmt.end_lineno or stmt.lineno
        if (
            isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef))
            and first > previous_end  # on lines of its own
            and counts[stmt.name] == 1  # one definition of the name (no property setters, overloads)
        ):
            # __init__ and the methods writing self.<attr> can be left out too: what the rules read of
            # them is described from CPython's tree (method_facts), unless the description could differ
            protocol = stmt.name.startswith("__") and stmt.name.endswith("__") and stmt.name != "__init__"
            pinned = protocol or defines_entry
            method = _MethodNames(stmt.name, first, last, names, holds_import, pinned, others=others, calls_assigned=calls)
            if not pinned and (writes or stmt.name == "__init__"):
                method.node = stmt
            methods.append(method)
        else:
            own |= names
        previous_end = last
    # a def named __init__ nested in another method, or an explicit `X.__init__`, is one more function
    # named __init__ to the per-file pass: __init__'s writes stay parsed then
    for m in methods:
        if m.name == "__init__" and any("__init__" in o.names for o in methods if o is not m):
            m.pinned, m.node = True, None
    return _UnitNames(every, imports, entry, own=own, methods=methods, body_size=len(cls.body), others=all_others,
                      calls_assigned=all_calls)


def _walk(
    root: ast.AST, imports_seen: Optional[list] = None, others: Optional[set] = None, calls_assigned: Optional[set] = None
) -> tuple[set, bool, bool, bool]:
    """(identifiers used or bound, holds an import, defines forward/backward, writes self.<attr> or
    registers a buffer/parameter) of ``root``; its imports are appended to ``imports_seen``, and the
    names of attributes assigned on anything but ``self`` added to ``others``, and the callees (as
    written) of ``x = f(...)`` assignments to ``calls_assigned`` (a logger made there)."""
    names: set = set()
    imports = entry = writes = False
    stack: list = [root]
    while stack:
        node = stack.pop()
        kind = type(node)
        if kind is ast.Name:
            names.add(node.id)
            continue
        if kind is ast.Attribute:
            names.add(node.attr)
            if type(node.value) is ast.Name and node.value.id == "self":
                if type(node.ctx) is ast.Store:
                    writes = True
            elif others is not None and type(node.ctx) is ast.Store:
                others.add(node.attr)
        elif kind in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
            names.add(node.name)
            if kind is not ast.ClassDef and node.name in ("forward", "backward"):
                entry = True
        elif kind in (ast.Import, ast.ImportFrom):
            imports = True
            if imports_seen is not None:
                imports_seen.append(node)
            for alias in node.names:
                names.update(alias.name.split("."))
                if alias.asname:
                    names.add(alias.asname)
        elif kind is ast.Call:
            if type(node.func) is ast.Attribute and node.func.attr in _REGISTERS:
                writes = True
        elif kind is ast.Assign:
            if calls_assigned is not None and type(node.value) is ast.Call:
                callee = dotted(node.value.func)
                if callee:
                    calls_assigned.add(callee)
        elif kind is ast.arg:
            names.add(node.arg)
        elif kind is ast.keyword and node.arg:
            names.add(node.arg)
        elif kind in (ast.Global, ast.Nonlocal):
            names.update(node.names)
        elif kind in (ast.MatchAs, ast.MatchStar) and node.name:
            names.add(node.name)
        elif kind is ast.MatchMapping and node.rest:
            names.add(node.rest)
        elif kind is ast.ExceptHandler and node.name:
            names.add(node.name)
        stack.extend(child_nodes(node))
    return names, imports, entry, writes


@dataclass
class MethodFacts:
    """What the per-file pass would read of one left-out method: its self.<attr> writes (named by the
    function they are in, as the collector names them), buffer/parameter registrations, and, for
    ``__init__``, its parameters."""

    cls: str
    name: str
    start: int
    writes: list = field(default_factory=list)  # (attr, function name, "assign" | "annassign" | "augassign", InitValue)
    registers: list = field(default_factory=list)  # ("buffer" | "param", attribute name)
    params: Optional[InitParams] = None


_REGISTER_KINDS = {"register_buffer": "buffer", "register_parameter": "param"}


def method_facts(cls_name: str, fn: ast.AST, source: str, text: str, starts: list[int]) -> Optional[MethodFacts]:
    """``fn``'s facts (``text``: its source), in the collector's order; None when the description could
    differ from what the collector reads of libcst's tree (a class or a def named ``__init__`` nested in it)."""
    out = MethodFacts(cls_name, fn.name, min([fn.lineno, *(d.lineno for d in fn.decorator_list)]))
    # statements only (a write is one, and so is a nested def or class), in source order
    stack: list = [(stmt, fn.name) for stmt in reversed(fn.body)]
    while stack:
        node, func = stack.pop()
        kind = type(node)
        if kind is ast.ClassDef:
            return None
        if kind is ast.FunctionDef or kind is ast.AsyncFunctionDef:
            if node.name == "__init__":
                return None
            func = node.name
        elif kind is ast.Assign:
            for target in node.targets:
                _note_write(out, target, "assign", node.value, func)
        elif kind is ast.AnnAssign:
            if node.value is not None:
                _note_write(out, node.target, "annassign", node.value, func)
        elif kind is ast.AugAssign:
            _note_write(out, node.target, "augassign", node.value, func)
        inner = [s for name in _BODIES for s in getattr(node, name, ())]
        for handler in getattr(node, "handlers", ()):
            inner.extend(handler.body)
        for case in getattr(node, "cases", ()):
            inner.extend(case.body)
        stack.extend((s, func) for s in reversed(inner) if isinstance(s, ast.stmt))
    if "register_" in text:  # registrations are calls: walk the expressions too, only then
        for node in ast.walk(fn):
            if type(node) is ast.Call:
                f = node.func
                if type(f) is ast.Attribute and f.attr in _REGISTER_KINDS and type(f.value) is ast.Name and f.value.id == "self":
                    name = _registered_name(node, source, starts)
                    if name is not None:
                        out.registers.append((_REGISTER_KINDS[f.attr], name))
    if fn.name == "__init__":
        out.params = params_ast(fn)
    return out


_BODIES = ("body", "orelse", "finalbody")


def _note_write(out: MethodFacts, target: ast.expr, stmt: str, value: ast.expr, func: str) -> None:
    if type(target) is ast.Attribute and type(target.value) is ast.Name and target.value.id == "self":
        out.writes.append((target.attr, func, stmt, describe_ast(value)))


def _segment(source: str, starts: list[int], node: ast.expr) -> str:
    """``ast.get_source_segment`` from the file's line offsets (it splits the whole source on each call;
    columns are UTF-8 byte offsets within a line)."""
    first, last = node.lineno, node.end_lineno or node.lineno

    def line(n: int) -> bytes:
        return source[starts[n - 1] : starts[n] if n < len(starts) else len(source)].encode("utf-8")

    if first == last:
        return line(first)[node.col_offset : node.end_col_offset].decode("utf-8", "replace")
    middle = b"".join(line(n) for n in range(first + 1, last))
    text = line(first)[node.col_offset :] + middle + line(last)[: node.end_col_offset]
    return text.decode("utf-8", "replace")


def _registered_name(call: ast.Call, source: str, starts: list[int]) -> Optional[str]:
    """The attribute ``self.register_buffer("name", ...)`` names, when the collector reads one: its first
    argument as written is a single string literal (libcst's SimpleString) holding a str."""
    written = sorted([*call.args, *call.keywords], key=lambda a: (a.lineno, a.col_offset))
    if not written:
        return None
    first = written[0]
    value = first.value if isinstance(first, (ast.keyword, ast.Starred)) else first
    if not (isinstance(value, ast.Constant) and isinstance(value.value, str)):
        return None
    segment = _segment(source, starts, value)
    try:
        tokens = [t for t in tokenize.generate_tokens(io.StringIO(segment).readline) if t.type not in _LAYOUT_TOKENS]
    except (tokenize.TokenError, SyntaxError):
        return None
    return value.value if len(tokens) == 1 and tokens[0].type == tokenize.STRING else None


_LAYOUT_TOKENS = frozenset({tokenize.NL, tokenize.NEWLINE, tokenize.ENDMARKER, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT})


def record_import_ast(node: ast.Import | ast.ImportFrom, aliases: dict[str, str]) -> None:
    """``fusionlint.analysis.names.record_import`` for CPython's import nodes (the same local names)."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.asname:
                aliases[alias.asname] = alias.name
            else:
                head = alias.name.split(".", 1)[0]
                aliases.setdefault(head, head)
        return
    if any(alias.name == "*" for alias in node.names):
        return
    base = "." * node.level + (node.module or "")
    for alias in node.names:
        sep = "" if base.endswith(".") else "."
        aliases[alias.asname or alias.name] = f"{base}{sep}{alias.name}" if base else alias.name


def apply_facts(index: FileIndex, plan_: SparsePlan) -> Inexact:
    """Give the parsed file's classes what their left-out methods would have added (the per-file pass's
    own rules: ``fusionlint.analysis.init_facts``); the returned flag says if a rule asked for more."""
    inexact = Inexact()
    for cls_name, entries in plan_.class_facts.items():
        cls = index.classes.get(cls_name)
        if cls is None:
            inexact.hit(f"class {cls_name} not parsed")
            continue
        blanked = BlankedMethods(inexact)
        for facts, aliases in entries:
            for attr, func, stmt, value in facts.writes:
                blanked.writes.setdefault(attr, []).append(func)
                if func != "__init__":
                    continue
                own = facts.name == "__init__"  # (a def named __init__ nested in a method keeps it parsed)
                cls.init_writes.setdefault(attr, []).append(InitWrite(stmt, value, own))
                if stmt != "augassign":
                    note_init_value(cls, attr, value, aliases)
            for kind, name in facts.registers:
                (cls.buffers if kind == "buffer" else cls.params).add(name)
            if facts.params is not None and cls.init_params is None:
                cls.init_params = facts.params
        cls.blanked = blanked
        guard_writes(cls)
    return inexact


def _compile_aliases(model, path: str) -> set[str]:
    """Local names the file binds to something called ``compile`` (``from torch import compile as tc``)."""
    summary = model.files.get(path) if model is not None else None
    if summary is None:
        return set()
    return {local for local, target in summary.aliases.items() if "compile" in target.rsplit(".", 1)[-1]}


def _compiled(model, path: str) -> tuple[set[str], set[str]]:
    """(top-level names, "Class.method" names) under which the project model has a compiled function."""
    summary = model.files.get(path) if model is not None else None
    if summary is None:
        return set(), set()
    roots, methods = set(), set()
    for qual in summary.functions:
        if model.function_facts(path, qual) is not None:
            parts = qual.split(".", 2)
            roots.add(parts[0])
            methods.add(".".join(parts[:2]))
    return roots, methods


_LINE_END = re.compile(r"\r\n|\r|\n")


def _line_ended(text: str) -> str:
    """``text`` ending with a line end (the file's last line may have none), so that pieces can be joined."""
    return text if text.endswith(("\n", "\r")) else text + "\n"


def _only_line_ends(text: str) -> str:
    if "\r" not in text:
        return "\n" * text.count("\n")
    return "".join(m.group() for m in _LINE_END.finditer(text))


class _AskedKeys(dict):
    """A dict that remembers the keys looked up (not iteration: the engine's own passes iterate the
    file's functions; what a rule finds by name is what a left-out definition could change)."""

    def __init__(self, data, asked: set) -> None:
        super().__init__(data)
        self._asked = asked

    def get(self, key, default=None):
        self._asked.add(key)
        return super().get(key, default)

    def __getitem__(self, key):
        self._asked.add(key)
        return super().__getitem__(key)

    def __contains__(self, key) -> bool:
        self._asked.add(key)
        return super().__contains__(key)


class _Asked(_AskedKeys):
    """A dict that remembers which keys were asked for (iterating asks for all of them)."""

    def __iter__(self):
        self._asked.add(_EVERYTHING)
        return super().__iter__()

    def keys(self):
        self._asked.add(_EVERYTHING)
        return super().keys()

    def items(self):
        self._asked.add(_EVERYTHING)
        return super().items()

    def values(self):
        self._asked.add(_EVERYTHING)
        return super().values()


class _AskedSet(set):
    def __init__(self, data, asked: set) -> None:
        super().__init__(data)
        self._asked = asked

    def __contains__(self, key) -> bool:
        self._asked.add(key)
        return super().__contains__(key)

    def __iter__(self):
        self._asked.add(_EVERYTHING)
        return super().__iter__()


_EVERYTHING = object()


class SparseContext(RuleContext):
    """A RuleContext over a sparse module that records the whole-file questions the rules asked."""

    def __init__(self, *args, inexact: Optional[Inexact] = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.inexact = inexact if inexact is not None else Inexact()
        self.asked_attrs: dict[str, set] = {name: set() for name in _FILE_FACT_FIELDS}
        self.asked_kinds: set[type] = set()
        # class name -> the method names looked up in its ``methods`` (blanked methods are missing there)
        self.asked_methods: dict[str, set] = {}
        for name, cls in self.file.classes.items():
            cls.methods = _Asked(cls.methods, self.asked_methods.setdefault(name, set()))
        # top-level names looked up (a definition only a left-out method named is left out too)
        self.asked_names: set = set()
        self.file.classes = _AskedKeys(self.file.classes, self.asked_names)
        self.file.functions = _AskedKeys(self.file.functions, self.asked_names)

    def memo(self, key, compute):
        if key != _FILE_FACTS_KEY or key in self._memo:
            return super().memo(key, compute)

        def recorded():
            facts = compute()
            for name in _FILE_FACT_FIELDS:
                value = getattr(facts, name, None)
                if isinstance(value, dict):
                    setattr(facts, name, _Asked(value, self.asked_attrs[name]))
                elif isinstance(value, set):
                    setattr(facts, name, _AskedSet(value, self.asked_attrs[name]))
            return facts

        return super().memo(key, recorded)

    def nodes(self, kind: type) -> list:
        self.asked_kinds.add(kind)
        return super().nodes(kind)


def asked_attr_pairs(ctx: SparseContext) -> frozenset:
    """The file-facts questions ``ctx`` recorded, as (field, attribute) pairs (kept by fusionlint.incremental)."""
    return frozenset((name, attr) for name, asked in ctx.asked_attrs.items() for attr in asked)


def still_exact(plan_: SparsePlan, ctx: SparseContext) -> bool:
    """Would the whole-file questions the rules asked have had the same answers on the full text?"""
    if ctx.inexact.reasons:
        return False
    if _FILE_FACTS_KEY in ctx._memo:
        for name, asked in ctx.asked_attrs.items():
            if _EVERYTHING in asked:
                return False
            attrs = sorted(a for a in asked if isinstance(a, str))
            if not attrs:
                continue
            if name == "writes" and plan_.others_assigned is not None:
                # other objects' attributes assigned: CPython's tree of the left-out code says which
                if not plan_.others_assigned.isdisjoint(attrs):
                    return False
                continue
            touched = re.compile(r"\.[\s\\]*(?:" + "|".join(map(re.escape, attrs)) + r")\b")
            if touched.search(plan_.blanked_text):
                return False
    if ctx.asked_names:
        for unit in plan_.blanked:
            if "." not in unit.name and unit.name in ctx.asked_names:
                return False
    for kind in ctx.asked_kinds:
        if kind is not cst.Assign:
            return False
        logger = plan_.assigns_logger if plan_.assigns_logger is not None else _blanked_logger(plan_, ctx.file.aliases)
        if logger:
            return False
    asked_methods = getattr(ctx, "asked_methods", {})
    for unit in plan_.blanked:
        owner, _, method = unit.name.partition(".")
        asked = asked_methods.get(owner, ()) if method else ()
        if method in asked or _EVERYTHING in asked:
            return False
    return True


def _blanked_logger(plan_: SparsePlan, aliases: dict[str, str]) -> bool:
    """Does a blanked definition assign a logger (what the side-effects analysis reads Assigns for)?"""
    if not plan_.blanked_pieces:
        return _assigns_logger(plan_.blanked_text, aliases)
    key = tuple(sorted(aliases.items()))
    if len(_LOGGER_MEMO) > 4096:  # a long editor session: keep the memo bounded
        _LOGGER_MEMO.clear()
    for piece in plan_.blanked_pieces:
        known = _LOGGER_MEMO.get((piece, key))
        if known is None:
            known = _LOGGER_MEMO[(piece, key)] = _assigns_logger(piece, aliases)
        if known:
            return True
    return False


# (a definition's text, the import aliases in force) -> does it assign a logger
_LOGGER_MEMO: dict[tuple[str, tuple], bool] = {}


def _assigns_logger(text: str, aliases: dict[str, str]) -> bool:
    from fusionlint.analysis.side_effects import _is_logger_factory  # the analysis's own test

    if "=" not in text:
        return False
    try:
        tree = ast.parse(text)  # top-level definitions: they parse on their own
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return True
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            if _is_logger_factory(resolve(node.value.func, aliases) or ""):
                return True
    return False
