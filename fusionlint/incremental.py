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

A projection is parsed at the whole file's length, so when more than one group has no valid entry
(the first lint of a file, a line inserted above many groups) the file is linted whole, once, and
each such group keeps its share of the findings with the questions the whole file asked, a
superset of its own (the project model's answers are still kept per definition, so an edit that
changes one class's facts does not invalidate the other groups). A group whose projection would not
answer those questions as the whole file did gets no entry.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

from fusionlint import sparse as sparse_mod
from fusionlint.lines import line_starts
from fusionlint.outline import Outline, Unit
from fusionlint.project.link import function_view

if TYPE_CHECKING:  # pragma: no cover
    from fusionlint.engine import Engine, FileLint
    from fusionlint.rule import Rule

_IDENT = re.compile(r"[^\W\d]\w*")
_BASE = -1


@dataclass
class _Entry:
    findings: list  # the group's findings (suppressions applied)
    asked_attrs: frozenset  # (FileFacts field, attribute) pairs (fusionlint.sparse.asked_attr_pairs)
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
        self.whole = False  # the last call linted the whole file once

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
        texts = [source[a:b] for a, b in spans]
        # What a projection's text is made of besides its kept definitions: the code around the
        # definitions, their lines and line ends. Equal frames and equal kept texts make equal
        # projections, so a group's key needs no projection text of its own (building one per group
        # on every keystroke cost more than the one group re-linted).
        outside, previous = [], 0
        for a, b in spans:
            outside.append(source[previous:a])
            previous = b
        outside.append(source[previous:])
        ends = tuple(sparse_mod._only_line_ends(t) for t in texts) if "\r" in source else tuple(t.count("\n") for t in texts)
        frame = (tuple(outside), tuple((u.start, u.end) for u in units), ends, tuple(r.code for r in rules), outline.default_indent)
        old = self._by_path.get(path, {})
        self.relinted = self.reused = 0
        self.whole = False
        keyed, answers = [], {}
        for members in groups:
            keep = set(members) | set(groups[0])
            blanked = tuple(i for i in range(len(units)) if i not in keep)
            key = (frame, blanked, tuple(texts[i] for i in sorted(keep)))
            plan = _LazyPlan(source, spans, units, blanked, outline.default_indent)
            entry = old.get(key)
            if entry is not None and not _still_valid(entry, engine, path, plan, answers):
                entry = None
            keyed.append((members, key, plan, entry))
        stale = [k for k in keyed if k[3] is None]
        if len(stale) > 1:  # each projection is parsed at the file's length: once whole costs less
            return self._lint_whole(engine, source, path, rules, keyed, units)
        new: dict[tuple, _Entry] = {}
        findings: list = []
        for members, key, plan, entry in keyed:
            if entry is None:
                entry = _lint_group(engine, plan.sparse().parsed_text(), source, path, rules, plan.sparse(), plan.blanked)
                if entry is None:
                    self._by_path.pop(path, None)
                    return None
                self.relinted += 1
            else:
                self.reused += 1
            new[key] = entry
            if members is groups[0]:
                findings.extend(entry.findings)
            else:
                owned = [units[i] for i in members]
                findings.extend(f for f in entry.findings if any(u.start <= f.line <= u.end for u in owned))
        self._by_path[path] = new
        findings.sort(key=lambda f: f.sort_key)
        return FileLint(findings)

    def _lint_whole(self, engine, source: str, path: str, rules, keyed: list, units) -> "FileLint":
        """Lint the whole file once (a first lint, an edit that moved many groups) and keep each
        stale group's share of it: its findings, and the questions the whole file asked (a superset
        of what its projection would ask), except the project model's, which are per definition."""
        project = _RecordingProject(engine.project)
        done = engine._lint_parsed(source, source, path, rules, None, project=project, keep_context=True, record=True)
        assert done is not None  # the full text (no plan) always gives a result
        result, ctx = done
        self.whole = True
        if result.error is not None or result.rule_errors:
            self._by_path.pop(path, None)
            return result
        asked_attrs, asked_kinds = sparse_mod.asked_attr_pairs(ctx), frozenset(ctx.asked_kinds)
        aliases = dict(ctx.file.aliases)
        base = keyed[0][0]
        owner: dict[str, int] = {}  # top-level name -> its group (not the base group's)
        for g, (members, *_rest) in enumerate(keyed):
            if members is not base:
                for i in members:
                    owner[units[i].name] = g
        others = [(g, [units[i] for i in members]) for g, (members, *_rest) in enumerate(keyed) if members is not base]
        shares: dict[int, list] = {g: [] for g in range(len(keyed))}
        for f in result.findings:
            g = next((g for g, owned in others if any(u.start <= f.line <= u.end for u in owned)), 0)
            shares[g].append(f)
        classes, quals = tuple(ctx.file.classes), tuple(ctx.file.functions)
        new: dict[tuple, _Entry] = {}
        for g, (members, key, plan, entry) in enumerate(keyed):
            if entry is None:
                # still_exact: would this group's projection answer the file's questions as the file did?
                if not sparse_mod.still_exact(plan.sparse(), _Asked(asked_attrs, asked_kinds, aliases)):
                    continue  # linted on its own next time (which then finds the same and lints whole)
                mine = [n for n in classes if owner.get(n, g) == g]
                model_trace = [("class", n, _model_answer(engine.model, path, "class", n)) for n in mine]
                model_trace += [
                    ("function", q, _model_answer(engine.model, path, "function", q))
                    for q in quals
                    if owner.get(q.split(".", 1)[0], g) == g
                ]
                entry = _Entry(shares[g], asked_attrs, asked_kinds, project.trace, model_trace, plan.blanked, aliases)
            new[key] = entry
        self._by_path[path] = new
        return result


class _LazyPlan:
    """A group's projection, built only when its text is needed (a re-lint, a whole-file check)."""

    def __init__(self, source: str, spans, units, blanked: tuple[int, ...], default_indent: str) -> None:
        self._source, self._spans, self._units = source, spans, units
        self.blanked = blanked
        self._default_indent = default_indent
        self._plan: Optional[sparse_mod.SparsePlan] = None

    @property
    def text(self) -> str:
        return self.sparse().text

    def sparse(self) -> sparse_mod.SparsePlan:
        if self._plan is None:
            source, spans = self._source, self._spans
            text, cut_text, lines = sparse_mod.cut(source, spans, self._units, self.blanked)
            pieces = tuple(source[spans[i][0] : spans[i][1]] for i in self.blanked)
            self._plan = sparse_mod.SparsePlan(
                text,
                [self._units[i] for i in self.blanked],
                self._default_indent,
                "".join(pieces),
                cut_text,
                lines,
                blanked_pieces=pieces,
            )
        return self._plan


def _span(unit: Unit, starts: list[int], size: int) -> tuple[int, int]:
    return starts[unit.start - 1], (starts[unit.end] if unit.end < len(starts) else size)


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
    asked_attrs, asked_kinds = sparse_mod.asked_attr_pairs(ctx), frozenset(ctx.asked_kinds)
    classes, quals = tuple(ctx.file.classes), tuple(ctx.file.functions)
    model_trace = [("class", name, _model_answer(engine.model, path, "class", name)) for name in classes]
    model_trace += [("function", qual, _model_answer(engine.model, path, "function", qual)) for qual in quals]
    return _Entry(result.findings, asked_attrs, asked_kinds, project.trace, model_trace, blanked, dict(ctx.file.aliases))


def _still_valid(entry: _Entry, engine, path: str, plan, answers: dict) -> bool:
    """``answers``: the current answers already looked up in this lint (groups filled from one
    whole-file lint share its questions)."""
    for what, name, answer in entry.model_trace:
        now = _looked_up(answers, (what, name), lambda: _model_answer(engine.model, path, what, name))
        if now != answer:
            return False
    for what, key, answer in entry.project_trace:
        now = _looked_up(answers, ("project", what, key), lambda: _project_answer(engine.project, what, key))
        if now != answer:
            return False
    if entry.asked_attrs or entry.asked_kinds:
        ctx = _Asked(entry.asked_attrs, entry.asked_kinds, entry.aliases)
        if not sparse_mod.still_exact(plan.sparse(), ctx):
            return False
    return True


def _looked_up(answers: dict, question, ask):
    try:
        now = answers.get(question, answers)
    except TypeError:  # an argument that is no dict key: ask again
        return ask()
    if now is answers:
        now = answers[question] = ask()
    return now


class _Asked:
    """What ``sparse.still_exact`` reads of a SparseContext, from a memo entry."""

    def __init__(self, attrs, kinds, aliases: dict) -> None:
        self.asked_attrs = {name: set() for name in sparse_mod._FILE_FACT_FIELDS}
        for name, attr in attrs:
            self.asked_attrs[name].add(attr)
        self.asked_kinds = set(kinds)
        # a projection blanks whole groups, which never name each other: nothing found by name, no
        # left-out method (sparse.apply_facts) to ask about
        self.asked_names: set = set()
        self.inexact = sparse_mod.Inexact()
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
        # every value apply_project hands the function, the reasons with their lines now (the tensor
        # parameters alone before: where a callee breaks or what varies, changed elsewhere, did not count)
        view = function_view(model, facts)
        return (facts.frames, facts.kind, tuple((name, _snapshot(view[name])) for name in sorted(view)))
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
