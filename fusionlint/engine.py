"""Lint one source text: screen, parse once, collect in one traversal, run rules, resolve positions.

Positions are resolved only for files that produced a report (PositionProvider re-renders the
module, which costs about as much as the parse), and suppression comments are read only then too.
"""

from __future__ import annotations

import ast
import re
from typing import Iterable, Optional

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from fusionlint.analysis.compiled import mark_compiled
from fusionlint.analysis.context import NodeEdit, Report, RuleContext
from fusionlint.analysis.index import Collector
from fusionlint.analysis.project import ProjectIndex
from fusionlint.project.link import apply_project
from fusionlint.project.model import Project
from fusionlint.registry import handled_node_types
from fusionlint.rule import Edit, FileError, Finding, Fix, Rule
from fusionlint.suppress import Suppressions

# A file without any of these cannot contain code torch.compile traces (forward methods,
# autograd Functions, torch.compile'd functions), so compiled-scope rules can skip it unparsed.
_COMPILED_MARKERS = ("forward", "compile", "Function", "backward")
_SKIP_FILE = re.compile(r"#\s*fusionlint\s*:\s*skip-file\b")


class Engine:
    """Lints sources with a fixed set of rules against one ProjectIndex."""

    def __init__(self, rules: Iterable[type[Rule]], project: Optional[ProjectIndex] = None, model: Optional[Project] = None) -> None:
        self.rules = list(rules)
        self.project = project if project is not None else ProjectIndex()
        # the cross-file semantic model; a file it has not seen (or whose text changed) is added
        self.model = model if model is not None else Project()
        if self.model.name_index is None:
            self.model.name_index = self.project

    def lint_source(self, source: str, path: str) -> tuple[list[Finding], Optional[FileError]]:
        """Findings for one file (suppressions applied), or the error that stopped it."""
        if _SKIP_FILE.search(source) and Suppressions.from_source(source).skip_file:
            return [], None
        self.model.add(path, None, source)
        rules = self._screen(source, path)
        if not rules:
            # No rule can fire, so skip libcst; CPython's parser (~4x faster) still reports syntax errors.
            return [], _python_syntax_error(source, path)
        try:
            module = cst.parse_module(source)
        except cst.ParserSyntaxError as exc:
            return [], _syntax_error(source, path, exc)
        except (RecursionError, MemoryError) as exc:  # pathological nesting
            return [], FileError(path, f"cannot parse: {type(exc).__name__}")
        reports = self._run_rules(module, rules, path)
        if not reports:
            return [], None
        findings = self._to_findings(module, reports, path)
        suppressions = Suppressions.from_source(source)
        return [f for f in findings if not suppressions.is_suppressed(f.code, f.line, f.end_line)], None

    def _screen(self, source: str, path: str = "") -> list[type[Rule]]:
        """Rules that could fire on this text at all, judged before parsing."""
        if self.model.has(path):  # the project model knows exactly which functions are compiled
            compiled_possible = self.model.has_compiled(path)
        else:
            compiled_possible = any(marker in source for marker in _COMPILED_MARKERS)
        out = []
        for rule in self.rules:
            if rule.scope == "compiled" and not compiled_possible:
                continue
            if rule.triggers and not any(t in source for t in rule.triggers):
                continue
            out.append(rule)
        return out

    def _run_rules(self, module: cst.Module, rules: list[type[Rule]], path: str) -> list[Report]:
        wanted = frozenset().union(*(handled_node_types(r) for r in rules))
        index = Collector(wanted).collect(module)
        mark_compiled(index, self.project)
        apply_project(index, self.model, path)
        ctx = RuleContext(module, index, self.project, path)
        for rule_cls in rules:
            rule = rule_cls()
            compiled_only = rule.scope == "compiled"
            for node_type in sorted(handled_node_types(rule_cls)):
                handler = getattr(rule, "visit_" + node_type)
                for rec in index.records.get(node_type, ()):
                    if compiled_only and (rec.function is None or rec.function.chain is None):
                        continue
                    ctx._point(rule, rec.node, rec.function, rec.cls, rec.parents)
                    handler(rec.node, ctx)
        return ctx.reports

    def _to_findings(self, module: cst.Module, reports: list[Report], path: str) -> list[Finding]:
        positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
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
                edits = tuple(_edit(positions, e) for e in report.fix.edits)
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
                    message=report.message,
                    effects=tuple(report.effects if report.effects is not None else rule.effects),
                    severity=rule.severity,
                    context=report.chain,
                    fix=fix,
                )
            )
        findings.sort(key=lambda f: f.sort_key)
        return findings


def _python_syntax_error(source: str, path: str) -> Optional[FileError]:
    try:
        compile(source, path, "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as py:
        return FileError(path, f"syntax error: {py.msg}", py.lineno or 1, py.offset or 1)
    except (ValueError, RecursionError, MemoryError) as exc:
        return FileError(path, f"cannot parse: {type(exc).__name__}: {exc}")
    return None


def _syntax_error(source: str, path: str, exc: cst.ParserSyntaxError) -> FileError:
    """CPython's parser pinpoints syntax errors better than libcst's; ask it (only on this error path)."""
    return _python_syntax_error(source, path) or FileError(
        path, f"syntax error: {exc.message}", exc.raw_line, exc.raw_column + 1
    )


def _edit(positions, edit: NodeEdit) -> Edit:
    rng = positions[edit.node]
    start = (rng.start.line, rng.start.column + 1)
    end = (rng.end.line, rng.end.column + 1)
    if edit.where == "before":
        end = start
    elif edit.where == "after":
        start = end
    return Edit(start[0], start[1], end[0], end[1], edit.text)
