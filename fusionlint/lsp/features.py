"""Findings -> LSP objects: diagnostics, quick fixes, fix-all, suppressions and hover text.

Pure functions of a document, its findings and the client's position encoding; the server in
``fusionlint.lsp.server`` owns the state and the protocol.
"""

from __future__ import annotations

import re
from typing import Optional, Sequence

from lsprotocol import types

from fusionlint.lsp.documents import Document
from fusionlint.lsp.noqa import suppress_edit
from fusionlint.lsp.positions import to_client
from fusionlint.rule import Applicability, Edit, FileError, Finding, Rule, Severity

SOURCE = "fusionlint"
FIX_ALL_KIND = "source.fixAll.fusionlint"

_SEVERITY = {
    Severity.ERROR: types.DiagnosticSeverity.Error,
    Severity.WARNING: types.DiagnosticSeverity.Warning,
    Severity.INFO: types.DiagnosticSeverity.Information,
}


def _range(doc: Document, line: int, column: int, end_line: int, end_column: int, encoding: str) -> types.Range:
    start = doc.lines.client_position(line, column, encoding)
    end = doc.lines.client_position(end_line, end_column, encoding)
    return types.Range(types.Position(*start), types.Position(*end))


def docs_url(settings, rule: type[Rule]) -> Optional[str]:
    """A link to the rule's documentation, only when the configuration names where the docs live.

    ``docs-url`` (a template with ``{code}`` and/or ``{name}``) is read if the settings have it;
    without it no ``codeDescription`` is sent, since a link must lead to a page that exists.
    """
    template = getattr(settings, "docs_url", None)
    if not isinstance(template, str) or not template:
        return None
    try:
        return template.format(code=rule.code, name=rule.name, code_lower=rule.code.lower())
    except (KeyError, IndexError, ValueError):
        return None


def _frame_offset(doc: Document, frames: Sequence[str], index: int) -> Optional[int]:
    """Offset of the ``def`` a chain frame names ("Model.forward", "self._mask", "helper").

    Frames are names, so this is a search of the text: the first ``def NAME`` after ``class OWNER``.
    """
    frame = frames[index]
    owner, _, name = frame.rpartition(".")
    if owner == "self" and index > 0:
        owner = frames[0].rpartition(".")[0]  # a method of the class the chain started in
    return doc.definitions.def_after(owner.rsplit(".", 1)[-1] if owner and owner != "self" else None, name)


def to_diagnostic(doc: Document, finding: Finding, encoding: str, rule: Optional[type[Rule]], settings) -> types.Diagnostic:
    rng = _range(doc, finding.line, finding.column, finding.end_line, finding.end_column, encoding)
    related = []
    for i, frame in enumerate(finding.chain):
        at = _frame_offset(doc, finding.chain, i)
        if at is None:
            where = rng
        else:
            line = doc.lines.position(at, encoding)[0]
            width = to_client(doc.lines.line_text(line), len(doc.lines.line_text(line)), encoding)
            where = types.Range(types.Position(line, 0), types.Position(line, width))
        message = f"compiled because torch.compile traces `{frame}`" if i == 0 else f"… which calls `{frame}`"
        related.append(types.DiagnosticRelatedInformation(types.Location(doc.uri, where), message))
    url = docs_url(settings, rule) if rule is not None else None
    return types.Diagnostic(
        range=rng,
        message=finding.message,
        severity=_SEVERITY.get(finding.severity, types.DiagnosticSeverity.Warning),
        code=finding.code,
        code_description=types.CodeDescription(href=url) if url else None,
        source=SOURCE,
        related_information=related or None,
        data={"fixable": finding.fix is not None},
    )


def error_diagnostic(doc: Document, error: FileError, encoding: str) -> types.Diagnostic:
    line = max((error.line or 1), 1)
    column = max((error.column or 1), 1)
    rng = _range(doc, line, column, line, column, encoding)
    return types.Diagnostic(
        range=rng, message=error.message, severity=types.DiagnosticSeverity.Error, code=error.code, source=SOURCE
    )


def config_diagnostic(message: str) -> types.Diagnostic:
    start = types.Position(0, 0)
    return types.Diagnostic(
        range=types.Range(start, start),
        message=f"fusionlint is not linting this file: {message}",
        severity=types.DiagnosticSeverity.Error,
        code="FL000",
        source=SOURCE,
    )


# --------------------------------------------------------------------------- code actions


def _text_edit(doc: Document, edit: Edit, encoding: str) -> types.TextEdit:
    return types.TextEdit(_range(doc, edit.line, edit.column, edit.end_line, edit.end_column, encoding), edit.content)


def workspace_edit(doc: Document, edits: list[types.TextEdit], document_changes: bool) -> types.WorkspaceEdit:
    """Versioned ``documentChanges`` when the client supports them (the edit then fails instead of
    landing on a newer text), else plain ``changes``."""
    if document_changes:
        ident = types.OptionalVersionedTextDocumentIdentifier(uri=doc.uri, version=doc.version)
        return types.WorkspaceEdit(document_changes=[types.TextDocumentEdit(text_document=ident, edits=edits)])
    return types.WorkspaceEdit(changes={doc.uri: edits})


def _offsets(doc: Document, line: int, column: int) -> int:
    starts = doc.lines.starts
    if not 1 <= line <= len(starts):
        return len(doc.text)
    return starts[line - 1] + column - 1


def overlapping(doc: Document, findings: Sequence[Finding], start: int, end: int) -> list[Finding]:
    """Findings whose range touches the offsets [start, end] (a bare cursor counts at either edge)."""
    out = []
    for f in findings:
        a, b = _offsets(doc, f.line, f.column), _offsets(doc, f.end_line, f.end_column)
        if a <= end and start <= b:
            out.append(f)
    return out


def matches_only(kind: str, only: Optional[Sequence[str]]) -> bool:
    return not only or any(kind == k or kind.startswith(k + ".") for k in only)


def quick_fixes(
    doc: Document,
    findings: Sequence[Finding],
    diagnostics: dict[int, types.Diagnostic],
    encoding: str,
    document_changes: bool,
    only: Optional[Sequence[str]],
) -> list[types.CodeAction]:
    """One quick fix per finding with a fix (safe ones preferred), then one suppression per code."""
    if not matches_only(types.CodeActionKind.QuickFix, only):
        return []
    actions: list[types.CodeAction] = []
    for f in findings:
        if f.fix is None:
            continue
        unsafe = f.fix.applicability is Applicability.UNSAFE
        title = f"{f.fix.title or 'Fix'} ({f.code})" + (" (unsafe)" if unsafe else "")
        edits = [_text_edit(doc, e, encoding) for e in f.fix.edits]
        actions.append(
            types.CodeAction(
                title=title,
                kind=types.CodeActionKind.QuickFix,
                diagnostics=[diagnostics[id(f)]] if id(f) in diagnostics else None,
                is_preferred=not unsafe,
                edit=workspace_edit(doc, edits, document_changes),
            )
        )
    seen: set[tuple[str, int]] = set()
    for f in findings:
        if (f.code, f.line) in seen:
            continue
        seen.add((f.code, f.line))
        noqa = suppress_edit(doc.text, f.line, f.code)
        if noqa is None:
            continue
        line_text = doc.lines.line_text(noqa.line - 1)
        start = types.Position(noqa.line - 1, to_client(line_text, noqa.start, encoding))
        end = types.Position(noqa.line - 1, to_client(line_text, noqa.end, encoding))
        actions.append(
            types.CodeAction(
                title=f"Suppress {f.code} on this line",
                kind=types.CodeActionKind.QuickFix,
                diagnostics=[diagnostics[id(f)]] if id(f) in diagnostics else None,
                edit=workspace_edit(doc, [types.TextEdit(types.Range(start, end), noqa.text)], document_changes),
            )
        )
    return actions


def replace_changed_region(doc: Document, new_text: str, encoding: str) -> Optional[types.TextEdit]:
    """One edit turning the document into ``new_text``, limited to the region that differs
    (so the editor keeps the cursor and folds outside it)."""
    old = doc.text
    if old == new_text:
        return None
    prefix = 0
    limit = min(len(old), len(new_text))
    while prefix < limit and old[prefix] == new_text[prefix]:
        prefix += 1
    suffix = 0
    while suffix < limit - prefix and old[len(old) - 1 - suffix] == new_text[len(new_text) - 1 - suffix]:
        suffix += 1
    start = doc.lines.position(prefix, encoding)
    end = doc.lines.position(len(old) - suffix, encoding)
    return types.TextEdit(
        types.Range(types.Position(*start), types.Position(*end)), new_text[prefix : len(new_text) - suffix]
    )


def fix_all_action(doc: Document, new_text: str, encoding: str, document_changes: bool) -> Optional[types.CodeAction]:
    edit = replace_changed_region(doc, new_text, encoding)
    if edit is None:
        return None
    return types.CodeAction(
        title="Fix all safe fusionlint problems",
        kind=FIX_ALL_KIND,
        edit=workspace_edit(doc, [edit], document_changes),
    )


# --------------------------------------------------------------------------- hover


def hover_markdown(rules: Sequence[type[Rule]]) -> str:
    """The documentation of the rules flagged under the cursor, as the CLI's `fusionlint rule` prints it."""
    parts = []
    for rule in rules:
        effects = ", ".join(e.value for e in rule.effects) or "none"
        fix = rule.fix_applicability.value if rule.fix_applicability else "none"
        head = f"### {rule.code} `{rule.name}`\n\nEffects: {effects} · Fix: {fix}"
        parts.append(f"{head}\n\n{rule.docs.strip() or rule.message}")
    return "\n\n---\n\n".join(parts)
