"""Findings memoised per group of top-level definitions, for an editor that lints the same file on
every keystroke (the language server, through ``fusionlint.api.Linter``).

A file's top-level definitions fall into *groups*: two definitions are in one group when either
names the other (an identifier of its text), when one's compiled chain starts at the other, and the
module-level code, every definition it names and every definition holding an ``import``,
``compile`` or a trigger of a whole-file rule form the *base* group. Each group is linted on its
own *projection*: the file with the definitions of every other group blanked (``fusionlint.sparse``:
same lines and columns), the base group always kept. Nothing in one group can change what the
per-file pass or a rule finds in another (the same argument as the sparse parse's, with the
same after-the-fact checks), so a group's findings are those of the whole file on its lines.

A group's findings are kept under its projection's text (lines included), the rules and the
file's default indentation, with a trace of every cross-file answer they used: the project
model's facts for its classes and functions, every question put to the project index, and the
whole-file questions of ``SparseContext``. On the next lint a group is reused only when its
projection is unchanged and every recorded question has the same answer now; else it is linted
again. A keystroke thus re-lints only the group it is in. Anything unusual (a rule crash, a
projection libcst parses differently) lints the whole file instead.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

from fusionlint import sparse as sparse_mod
from fusionlint.lines import line_starts
from fusionlint.outline import Outline, Unit

if TYPE_CHECKING:  # pragma: no cover
    from fusionlint.engine import Engine, FileLint
    from fusionlint.rule import Rule

_IDENT = re.compile(r"[^\W\d]\w*")
_BASE = -1


@dataclass
class _Entry:
    findings: list  # the group's findings (suppressions applied)
    asked_attrs: frozenset
    asked_kinds: frozenset
    project_trace: list  # (what, key, answer) asked of the project index
    model_trace: list  # (what, name, answer) asked of the project model
    blanked: tuple[int, ...]  # indexes (in the outline) of the units its projection blanked
    aliases: dict  # the projection's import aliases (for the logger check of sparse.still_exact)


class GroupMemo:
    """The groups of the last lint of each path (older ones are dropped)."""

    def __init__(self) -> None:
        self._by_path: dict[str, dict[tuple, _Entry]] = {}
        self.relinted = 0  # groups linted (not reused) by the last call, for tests and benchmarks
        self.reused = 0

    def forget(self, path: str) -> None:
        self._by_path.pop(path, None)

    def lint(self, engine: "Engine", source: str, path: str, rules: list[type["Rule"]], outline: Outline) -> Optional["FileLint"]:
        """The file's findings from its groups, or None when it must be linted whole."""
        from fusionlint.engine import FileLint

        if outline.default_indent is None:
            return None
        triggers = tuple(t for r in rules if r.scope != "compiled" for t in r.triggers)
        if any(r.scope != "compiled" and not r.triggers for r in rules):
            return None
        groups = _groups(source, outline, engine.model, path, triggers)
        if groups is None:
            return None
        units = outline.units
        starts = line_starts(source)
        spans = [_span(u, starts, len(source)) for u in units]
        old = self._by_path.get(path, {})
        new: dict[tuple, _Entry] = {}
        codes = tuple(r.code for r in rules)
        findings: list = []
        self.relinted = self.reused = 0
        for members in groups:
            keep = set(members) | set(groups[0])
            blanked = tuple(i for i in range(len(units)) if i not in keep)
            text = _blank(source, spans, blanked)
            key = (text, codes, outline.default_indent)
            plan = sparse_mod.SparsePlan(text, [units[i] for i in blanked], outline.default_indent,
                                         "".join(source[spans[i][0] : spans[i][1]] for i in blanked))
            entry = old.get(key)
            if entry is None or not _still_valid(entry, engine, path, plan):
                entry = _lint_group(engine, text, source, path, rules, plan, blanked)
                if entry is None:
                    self._by_path.pop(path, None)
                    return None
                self.relinted += 1
            else:
                self.reused += 1
            new[key] = entry
            owned = [units[i] for i in members]
            if members is groups[0]:
                findings.extend(entry.findings)
            else:
                findings.extend(f for f in entry.findings if any(u.start <= f.line <= u.end for u in owned))
        self._by_path[path] = new
        findings.sort(key=lambda f: f.sort_key)
        return FileLint(findings)


def _span(unit: Unit, starts: list[int], size: int) -> tuple[int, int]:
    return starts[unit.start - 1], (starts[unit.end] if unit.end < len(starts) else size)


def _blank(source: str, spans: list[tuple[int, int]], blanked: tuple[int, ...]) -> str:
    pieces, previous = [], 0
    for i in blanked:
        a, b = spans[i]
        pieces.append(source[previous:a])
        pieces.append(sparse_mod._only_line_ends(source[a:b]))
        previous = b
    pieces.append(source[previous:])
    return "".join(pieces)


def _groups(source: str, outline: Outline, model, path: str, triggers: tuple[str, ...]) -> Optional[list[list[int]]]:
    """Unit indexes per group, the base group first; None when there is only one group."""
    units = outline.units
    if len(units) < 2:
        return None
    starts = line_starts(source)
    spans = [_span(u, starts, len(source)) for u in units]
    parent = list(range(len(units) + 1))  # the last slot is the base group

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    def union(a: int, b: int) -> None:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[ra] = rb

    base = len(units)
    by_name: dict[str, list[int]] = {}
    for i, unit in enumerate(units):
        by_name.setdefault(unit.name, []).append(i)
    outside, previous = [], 0
    for a, b in spans:
        outside.append(source[previous:a])
        previous = b
    outside.append(source[previous:])
    for name in set(_IDENT.findall("".join(outside))) & by_name.keys():
        for j in by_name[name]:
            union(base, j)
    for i, (a, b) in enumerate(spans):
        text = source[a:b]
        if any(m in text for m in ("import", "compile")) or any(t in text for t in triggers):
            union(base, i)
        for name in set(_IDENT.findall(text)) & by_name.keys():
            for j in by_name[name]:
                union(i, j)
    for i, root in _chain_roots(model, path, units):
        for j in by_name.get(root, ()):
            union(i, j)
    members: dict[int, list[int]] = {}
    for i in range(len(units)):
        members.setdefault(find(i), []).append(i)
    base_group = members.pop(find(base), [])
    if not members:
        return None
    return [base_group, *members.values()]


def _chain_roots(model, path: str, units) -> list[tuple[int, str]]:
    """(unit, class or function name its compiled chains start at) from the project model."""
    summary = model.files.get(path) if model is not None else None
    if summary is None:
        return []
    index = {u.name: i for i, u in enumerate(units)}
    out = []
    for qual in summary.functions:
        i = index.get(qual.split(".", 1)[0])
        if i is None:
            continue
        facts = model.function_facts(path, qual)
        if facts is not None and facts.frames:
            out.append((i, facts.frames[0].split(".", 1)[0]))
    return out


def _lint_group(engine, text, source, path, rules, plan, blanked) -> Optional[_Entry]:
    project = _RecordingProject(engine.project)
    done = engine._lint_parsed(text, source, path, rules, plan, project=project, keep_context=True)
    if done is None:
        return None
    result, ctx = done
    if result.error is not None or result.rule_errors:
        return None
    asked_attrs, asked_kinds = frozenset(ctx.asked_attrs), frozenset(ctx.asked_kinds)
    classes, quals = tuple(ctx.file.classes), tuple(ctx.file.functions)
    model_trace = [("class", name, _model_answer(engine.model, path, "class", name)) for name in classes]
    model_trace += [("function", qual, _model_answer(engine.model, path, "function", qual)) for qual in quals]
    return _Entry(result.findings, asked_attrs, asked_kinds, project.trace, model_trace, blanked, dict(ctx.file.aliases))


def _still_valid(entry: _Entry, engine, path: str, plan) -> bool:
    for what, name, answer in entry.model_trace:
        if _model_answer(engine.model, path, what, name) != answer:
            return False
    for what, key, answer in entry.project_trace:
        if _project_answer(engine.project, what, key) != answer:
            return False
    if entry.asked_attrs or entry.asked_kinds:
        ctx = _Asked(entry.asked_attrs, entry.asked_kinds, entry.aliases)
        if not sparse_mod.still_exact(plan, ctx):
            return False
    return True


class _Asked:
    """What ``sparse.still_exact`` reads of a SparseContext, from a memo entry."""

    def __init__(self, attrs, kinds, aliases: dict) -> None:
        self.asked_attrs = set(attrs)
        self.asked_kinds = set(kinds)
        self._memo = {sparse_mod._FILE_FACTS_KEY: True} if attrs else {}
        self.file = _Aliases(aliases)


@dataclass
class _Aliases:
    aliases: dict


def _model_answer(model, path: str, what: str, name: str):
    """What ``fusionlint.project.link.apply_project`` reads of the model for one class or function."""
    summary = model.files.get(path)
    if summary is None:
        return None
    if what == "function":
        facts = model.function_facts(path, name)
        if facts is None:
            return None
        return (facts.frames, facts.kind, tuple(sorted(facts.tensor_params.items())))
    cls = summary.classes.get(name)
    if cls is None:
        return None
    attrs = model.attributes(summary, cls)
    return (
        model.class_kind(summary, cls),
        tuple(
            (attr, tuple((s.path, f.kind, f.ctor, f.method, f.line, f.elements) for s, f in facts))
            for attr, facts in sorted(attrs.items())
        ),
    )


def _project_answer(project, what: str, key):
    if what == "call":
        name, args = key
        return _snapshot(getattr(project, name)(*args))
    if what == "get":
        name, item = key
        return _snapshot(getattr(project, name).get(item))
    if what == "in":
        name, item = key
        return item in getattr(project, name)
    name = key
    return _snapshot(getattr(project, name))


def _snapshot(value):
    if isinstance(value, list):
        return tuple(value)
    if isinstance(value, (set, frozenset)):
        return frozenset(value)
    if isinstance(value, dict):
        return tuple(sorted((k, _snapshot(v)) for k, v in value.items()))
    return value


class _RecordingProject:
    """The project index, recording every question asked of it and its answer."""

    def __init__(self, project) -> None:
        self._project = project
        self.trace: list = []

    def __getattr__(self, name: str):
        value = getattr(self._project, name)
        if callable(value):
            def call(*args):
                result = value(*args)
                self.trace.append(("call", (name, args), _snapshot(result)))
                return result

            return call
        if isinstance(value, (dict, set, frozenset)):
            return _RecordingTable(self, name, value)
        self.trace.append(("attr", name, _snapshot(value)))
        return value


class _RecordingTable:
    def __init__(self, owner: _RecordingProject, name: str, table) -> None:
        self._owner, self._name, self._table = owner, name, table

    def get(self, key, default=None):
        result = self._table.get(key) if isinstance(self._table, dict) else None
        self._owner.trace.append(("get", (self._name, key), _snapshot(result)))
        return default if result is None else result

    def __contains__(self, key) -> bool:
        result = key in self._table
        self._owner.trace.append(("in", (self._name, key), result))
        return result

    def __getitem__(self, key):
        result = self._table[key]
        self._owner.trace.append(("get", (self._name, key), _snapshot(result)))
        return result

    def __iter__(self):
        self._owner.trace.append(("attr", self._name, _snapshot(self._table)))
        return iter(self._table)
