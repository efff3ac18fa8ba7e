"""Lint one source text: screen, check with CPython's parser, parse once with libcst, collect in
one traversal, run rules, resolve positions.

CPython's parser goes first (``fusionlint.precheck``): it is ~10x cheaper than libcst, rejects
invalid files before libcst builds a tree for them, and bounds the nesting depth and size that the
analysis below ever sees. Positions are resolved only for files that produced a report, by a
render that keeps offsets (``fusionlint.positions``, a quarter of libcst's PositionProvider), and
suppression comments are read only then too. A rule that raises on a file costs only its own findings: the
error becomes an entry for that file carrying the rule's code, and the other rules still run.
"""

from __future__ import annotations

import ast
import functools
import gc
import re
from dataclasses import dataclass, field
from typing import Iterable, Optional

import libcst as cst

from fusionlint.analysis.compiled import mark_compiled
from fusionlint.analysis.context import LINE_REFS, NodeEdit, Report, RuleContext
from fusionlint.analysis.index import Collector
from fusionlint.analysis.walk import forget_bodies, remember_bodies
from fusionlint.analysis.dead_branches import dead_nodes
from fusionlint.analysis.every_iteration import (
    drop_reports_in_breaking_loops, mark_reports_after_frame_ends, unconditional_break,
)
from fusionlint.analysis.module_init import eager_nodes
from fusionlint import cst_parse, torch_target
from fusionlint.heap import return_free_memory
from fusionlint.analysis.project import ProjectIndex
from fusionlint.outline import Outline
from fusionlint.plan_inputs import COMPILED_MARKERS
from fusionlint.precheck import Rejection, judge_outline, parse_outline, syntax_error
from fusionlint import sparse as sparse_mod
from fusionlint.incremental import GroupMemo
from fusionlint.positions import Positions
from fusionlint.project.link import apply_project
from fusionlint.project.model import Project
from fusionlint.registry import all_rules, handled_node_types
from fusionlint.rule import INTERNAL_ERROR_CODE, Edit, Effect, FileError, Finding, Fix, Rule
from fusionlint.suppress import Suppressions

_SKIP_FILE = re.compile(r"#\s*fusionlint\s*:\s*skip-file\b")
# Characters of a file after whose lint the free C heap is handed back (about a thousand lines)
_LONG_TEXT = 40_000


@dataclass
class FileLint:
    """What linting one file gave: its findings, or the error that stopped it, plus rule crashes."""

    findings: list[Finding] = field(default_factory=list)
    error: Optional[FileError] = None  # the file could not be analysed at all (syntax, too deep...)
    rule_errors: list[FileError] = field(default_factory=list)  # rules that raised; the others ran


@dataclass
class _RuleCrash:
    rule: type[Rule]
    node: Optional[cst.CSTNode]  # the node the rule was looking at, for the error's position
    exc: Exception


class Engine:
    """Lints sources with a fixed set of rules against one ProjectIndex."""

    def __init__(
        self,
        rules: Iterable[type[Rule]],
        project: Optional[ProjectIndex] = None,
        model: Optional[Project] = None,
        target_torch: Optional[tuple[int, int]] = None,
        sparse: bool = True,
        memo: bool = False,
    ) -> None:
        self.rules = list(rules)
        # parse only what a finding can come from or depend on (fusionlint.sparse); False: the whole file
        self.sparse = sparse
        # an editor's engine: findings kept per group of definitions, a keystroke re-lints one group
        self.memo = GroupMemo() if memo else None
        self.project = project if project is not None else ProjectIndex()
        # the cross-file semantic model; a file it has not seen (or whose text changed) is added
        self.model = model if model is not None else Project()
        if self.model.name_index is None:
            self.model.name_index = self.project
        # the torch version rules judge against (`target-torch`); never the one that happens to be installed
        # unless that is the default the run resolved
        self.target_torch = target_torch if target_torch is not None else torch_target.default_target()

    def lint_source(self, source: str, path: str) -> tuple[list[Finding], Optional[FileError]]:
        """Findings for one file (suppressions applied), and the error that stopped it or the
        first rule that crashed (``lint`` gives every crash)."""
        result = self.lint(source, path)
        return result.findings, result.error or (result.rule_errors[0] if result.rule_errors else None)

    def lint(self, source: str, path: str) -> FileLint:
        """Findings for one file (suppressions applied), the error that stopped it, rule crashes."""
        # CPython's and libcst's trees hold no reference cycles, but the cyclic collector, run again
        # and again while their many nodes are allocated, re-scans every node made so far: on
        # transformers 5.24.0 its models a-d (522 files, --jobs 1) the two parses of the linted files
        # took 5.5 CPU s with it and 4.6 without. What the analysis leaves in cycles is collected after
        # each file (the young generations only: the project model is frozen, fusionlint.runner).
        try:
            if not gc.isenabled():  # an editor's idle-time collection (fusionlint.lsp.idle_gc), or a caller's
                return self._lint(source, path)
            gc.disable()
            try:
                return self._lint(source, path)
            finally:
                gc.enable()
        finally:
            # A long file's parses leave tens of MB free in the C heap (libcst's native parser allocates
            # there); the next long file's need not fit in the same holes, and the process's resident
            # size climbed with each (the zoo in one process: 164 -> 202 MiB over the lint phase, 170 with this)
            if len(source) > _LONG_TEXT:
                return_free_memory()

    def _lint(self, source: str, path: str) -> FileLint:
        if _SKIP_FILE.search(source) and Suppressions.from_source(source).skip_file:
            return FileLint()
        self.model.add(path, None, source)
        rules = self._screen(source, path)
        if not rules:
            # No rule can fire, so skip libcst and the depth check; CPython's parser still reports
            # syntax errors (the project model's summary of this very text says it parsed).
            summary = self.model.files.get(path)
            if summary is not None and summary.text_hash == hash(source):
                return FileLint()
            return FileLint(error=_file_error(path, syntax_error(source, path)))
        outline = self._outline(source, path)
        if isinstance(outline, Rejection):
            return FileLint(error=_file_error(path, outline))
        outline, tree = outline if isinstance(outline, tuple) else (outline, None)
        if self.memo is not None:
            done = self.memo.lint(self, source, path, rules, outline)
            if done is not None:
                return done
        plan = self._plan(source, outline, path, rules, tree)
        del tree  # not alive while libcst parses (its tree of a large file is tens of MB)
        if plan is not None:
            done = self._lint_parsed(plan.parsed_text(), source, path, rules, plan)
            if done is not None:
                return done
        done = self._lint_parsed(source, source, path, rules, None)
        assert done is not None
        return done

    def _outline(self, source: str, path: str) -> "Outline | tuple[Outline, ast.Module | sparse_mod.CodeNames] | Rejection":
        """The file's outline from an editor's summary of this text, or with what the plan reads of
        CPython's tree from the run's summary of it (``fusionlint.plan_inputs``), else from a parse
        here (with the CPython tree it read)."""
        summary = self.model.files.get(path)
        if summary is not None and summary.outline is not None and summary.text_hash == hash(source):
            return judge_outline(summary.outline, source)
        store = self.model.plan_inputs
        made = store.get(path, source) if store is not None and summary is not None else None
        if made is not None:  # what the summary's parse of this very text gave (no second parse)
            outline = judge_outline(made.outline, source)
            return outline if isinstance(outline, Rejection) else (outline, made.names)
        return parse_outline(source, path)

    def _plan(
        self, source: str, outline: "Outline", path: str, rules: list[type[Rule]], tree: "Optional[ast.Module]" = None
    ) -> Optional[sparse_mod.SparsePlan]:
        if not self.sparse:
            return None
        file_rules = [r for r in rules if r.scope != "compiled"]
        if any(not r.triggers for r in file_rules):  # looks at every node of the file: nothing can be left out
            return None
        summary = self.model.files.get(path)
        aliases = summary.aliases if summary is not None else {}

        def pins(text: str, names: set) -> bool:
            return any(r.pins(text, names, aliases) for r in file_rules)

        return sparse_mod.plan(source, outline, self.model, path, pins, tree)

    def _lint_parsed(
        self,
        text: str,
        source: str,
        path: str,
        rules: list[type[Rule]],
        plan: Optional[sparse_mod.SparsePlan],
        *,
        project=None,
        keep_context: bool = False,
        record: bool = False,
    ):
        """Lint ``text`` (``source`` itself, or its sparse form under ``plan``); None when the sparse
        form cannot answer exactly as the full text would (the caller lints the full text).
        ``keep_context``: (FileLint, the rules' context) instead (fusionlint.incremental); ``record``:
        that context records the whole-file questions asked, as over a sparse text."""
        try:
            module = cst_parse.parse(text)
        except cst.ParserSyntaxError as exc:  # CPython accepted it: a construct libcst does not know
            if plan is not None:
                return None
            return FileLint(error=FileError(path, f"syntax error: {exc.message}", exc.raw_line, exc.raw_column + 1))
        except (RecursionError, MemoryError) as exc:
            if plan is not None:
                return None
            return FileLint(error=FileError(path, f"cannot parse: {type(exc).__name__}"))
        if plan is not None and module.default_indent != plan.default_indent:
            return None  # fix texts are indented with it
        try:
            reports, crashes, ctx = self._run_rules(
                module, rules, path, sparse=plan is not None or record, project=project, plan=plan
            )
        except RecursionError:  # indexing the file (not a rule): the depth limit should prevent it
            if plan is not None:
                return None
            return FileLint(error=FileError(path, "too deeply nested to analyse (Python's recursion limit)"))
        try:
            return self._report(module, text, source, path, plan, reports, crashes, ctx, keep_context)
        finally:
            if not keep_context:
                ctx.file.release()

    def _report(self, module, text, source, path, plan, reports, crashes, ctx, keep_context):
        if plan is not None and (crashes or not sparse_mod.still_exact(plan, ctx)):
            return None
        if not reports and not crashes:
            return (FileLint(), ctx) if keep_context else FileLint()
        try:
            # a class whose every report is inside a method renders only those methods
            whole = {id(r.statement) for r in reports if r.method is None}
            positions = Positions(
                module, text, [r.statement for r in reports if r.statement is not None],
                [(r.method, r.statement) for r in reports if r.method is not None and id(r.statement) not in whole],
            )
            if plan is not None and plan.lines is not None:  # libcst parsed the text with lines cut out
                positions = sparse_mod.CutPositions(positions, plan.lines)
        except RecursionError:
            if plan is not None:
                return None
            return FileLint(error=FileError(path, "too deeply nested to analyse (Python's recursion limit)"))
        findings = self._to_findings(module, positions, reports, path)
        suppressions = Suppressions.from_source(source)
        kept = [f for f in findings if not suppressions.is_suppressed(f.code, f.line, f.end_line)]
        result = FileLint(kept, rule_errors=[_crash_error(positions, crash, path) for crash in crashes])
        return (result, ctx) if keep_context else result

    def _screen(self, source: str, path: str = "") -> list[type[Rule]]:
        """Rules that could fire on this text at all, judged before parsing."""
        if self.model.has(path):  # the project model knows exactly which functions are compiled
            compiled_possible = self.model.has_compiled(path)
        else:
            # no marker: no code torch.compile traces (forward methods, autograd Functions, torch.compile'd
            # functions), so compiled-scope rules can skip it unparsed
            compiled_possible = any(marker in source for marker in COMPILED_MARKERS)
        out = []
        for rule in self.rules:
            if rule.scope == "compiled" and not compiled_possible:
                continue
            if rule.triggers and not any(t in source for t in rule.triggers):
                continue
            out.append(rule)
        return out

    def _run_rules(
        self, module: cst.Module, rules: list[type[Rule]], path: str, sparse: bool = False, project=None, plan=None
    ) -> tuple[list[Report], list[_RuleCrash], RuleContext]:
        remember_bodies()
        try:
            return self._run_rules_remembering(module, rules, path, sparse, project, plan)
        finally:
            forget_bodies()  # the lists hold the tree: none outlives the file's rules

    def _run_rules_remembering(
        self, module: cst.Module, rules: list[type[Rule]], path: str, sparse: bool, project, plan
    ) -> tuple[list[Report], list[_RuleCrash], RuleContext]:
        project = project if project is not None else self.project
        # the graph-break rules that were not asked for still tell which loops break on every
        # iteration (a finding must not change with which other rules are selected)
        evidence_rules = loop_break_evidence_rules(tuple(rules))
        # `for` loops always: whether one breaks on every iteration decides what the findings after it say
        wanted = frozenset({"For"}).union(*(handled_node_types(r) for r in (*rules, *evidence_rules)))
        index = Collector(wanted).collect(module)
        # what the methods the sparse plan left out would have told the collector
        inexact = sparse_mod.apply_facts(index, plan) if plan is not None else None
        mark_compiled(index, project)
        apply_project(index, self.model, path)
        if sparse:
            ctx = sparse_mod.SparseContext(module, index, project, path, torch_version=self.target_torch, inexact=inexact)
        else:
            ctx = RuleContext(module, index, project, path, torch_version=self.target_torch)
        ctx.model = self.model
        # the part of a compiled module __init__ after Dynamo's trace of it breaks runs eagerly, and a
        # branch the compiled callers' constants rule out is never traced
        eager = eager_nodes(index) | dead_nodes(index)
        compiled: dict = {}  # node type -> its records in traced code (_apply_rule)
        crashes: list[_RuleCrash] = []
        later = [r for r in rules if r.after_breaks]
        for rule_cls in rules:
            if rule_cls.after_breaks:
                continue
            crash = _apply_rule(rule_cls, index, ctx, eager, compiled)
            if crash is not None:  # a bug in this rule: it loses this file, the other rules do not
                crashes.append(crash)
        if evidence_rules and (later or (ctx.reports and index.records.get("For"))):
            kept, ctx.reports = ctx.reports, []
            for rule_cls in evidence_rules:
                _apply_rule(rule_cls, index, ctx, eager, compiled)  # a crash here only loses evidence: the finding stays
            evidence, ctx.reports = ctx.reports, kept
        else:
            evidence = []
        if later:
            ctx.breaks = frozenset(id(r.node) for r in (*ctx.reports, *evidence) if unconditional_break(r))
            for rule_cls in later:
                crash = _apply_rule(rule_cls, index, ctx, eager, compiled)
                if crash is not None:
                    crashes.append(crash)
        # a loop whose every iteration breaks runs eagerly: what only its unrolling would cost cannot happen
        ctx.reports = drop_reports_in_breaking_loops(ctx.reports, index, evidence)
        # and the rest of its frame runs eagerly too: what comes after it breaks only once it is fixed
        ctx.reports = mark_reports_after_frame_ends(ctx.reports, index, evidence)
        return ctx.reports, crashes, ctx

    def _to_findings(self, module: cst.Module, positions, reports: list[Report], path: str) -> list[Finding]:
        seen: set[tuple] = set()
        findings = []
        for report in reports:
            rng = positions[report.node]
            rule = report.rule
            key = (rule.code, rng.start.line, rng.start.column, rng.end.line, rng.end.column)
            if key in seen:
                continue
            seen.add(key)
            fix = None
            if report.fix is not None:
                edits = tuple(_edit(module, positions, e) for e in report.fix.edits)
                fix = Fix(report.fix.applicability, edits, report.fix.title)
            findings.append(
                Finding(
                    path=path,
                    line=rng.start.line,
                    column=rng.start.column + 1,
                    end_line=rng.end.line,
                    end_column=rng.end.column + 1,
                    code=rule.code,
                    name=rule.name,
                    message=_message(report, positions),
                    effects=tuple(report.effects if report.effects is not None else rule.effects),
                    severity=rule.severity,
                    context=report.chain,
                    chain=report.frames,
                    fix=fix,
                )
            )
        findings.sort(key=lambda f: f.sort_key)
        return findings


def _apply_rule(
    rule_cls: type[Rule], index, ctx: RuleContext, eager: frozenset[int], compiled: dict
) -> Optional[_RuleCrash]:
    """Run one rule's handlers over the collected nodes; its crash, if it raised. ``compiled``: node
    type -> its records in traced code, shared by the file's rules (a dozen rules visit every call)."""
    node: Optional[cst.CSTNode] = None
    try:
        rule = rule_cls()
        compiled_only = rule.scope == "compiled"
        for node_type in sorted(handled_node_types(rule_cls)):
            handler = getattr(rule, "visit_" + node_type)
            records = index.records.get(node_type, ())
            if compiled_only:
                traced = compiled.get(node_type)
                if traced is None:
                    traced = compiled[node_type] = [
                        rec for rec in records
                        if rec.function is not None and rec.function.frames is not None and id(rec.node) not in eager
                    ]
                records = traced
            for rec in records:
                node = rec.node
                ctx._point(rule, rec.node, rec.function, rec.cls, rec.parents)
                handler(rec.node, ctx)
    except Exception as exc:
        return _RuleCrash(rule_cls, node, exc)
    return None


@functools.lru_cache(maxsize=64)
def loop_break_evidence_rules(rules: tuple[type[Rule], ...]) -> tuple[type[Rule], ...]:
    """The default graph-break rules missing from ``rules``: whether a loop breaks on every iteration
    (fusionlint.analysis.every_iteration) decides what FL204 reports and what the findings after such a
    loop say, whichever rules are selected."""
    return tuple(
        r for r in all_rules().values()
        if r not in rules and r.static and r.default_enabled and Effect.GRAPH_BREAK in r.effects
    )


def _message(report: Report, positions) -> str:
    """The report's message with the lines of its ``line_refs`` filled in (known only after parsing)."""
    if not report.line_refs:
        return report.message
    message = report.message
    if message.count(LINE_REFS) == len(report.line_refs) > 1:  # one placeholder per node, in order
        for node in report.line_refs:
            message = message.replace(LINE_REFS, str(positions[node].start.line), 1)
        return message
    lines = ", ".join(str(positions[node].start.line) for node in report.line_refs)
    return message.replace(LINE_REFS, lines)


def _file_error(path: str, rejected: Optional[Rejection]) -> Optional[FileError]:
    if rejected is None:
        return None
    return FileError(path, rejected.message, rejected.line, rejected.column)


def _crash_error(positions, crash: _RuleCrash, path: str) -> FileError:
    rule, exc = crash.rule, crash.exc
    where = positions.get(crash.node) if crash.node is not None else None
    line, column = (where.start.line, where.start.column + 1) if where is not None else (None, None)
    detail = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return FileError(
        path,
        f"{rule.code} crashed ({detail}): a bug in fusionlint; this file's other rules were still checked",
        line,
        column,
        code=INTERNAL_ERROR_CODE,
        rule=rule.code,
    )


def _edit(module: cst.Module, positions, edit: NodeEdit) -> Edit:
    rng = positions[edit.node]
    start = (rng.start.line, rng.start.column + 1)
    end = (rng.end.line, rng.end.column + 1)
    original: Optional[str] = ""
    if edit.where == "before":
        end = start
    elif edit.where == "after":
        start = end
    else:
        original = module.code_for_node(edit.node)
    return Edit(start[0], start[1], end[0], end[1], edit.text, original)
