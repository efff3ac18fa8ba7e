"""The JSON format: stable, documented in README ("JSON output"). Bump SCHEMA_VERSION on change."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Mapping, Optional

from fusionlint.rule import INTERNAL_ERROR_CODE, Edit, FileError, Finding, RunResult

SCHEMA_VERSION = 1


def _edit(edit: Edit) -> dict:
    return {
        "line": edit.line,
        "column": edit.column,
        "end_line": edit.end_line,
        "end_column": edit.end_column,
        "content": edit.content,
    }


def finding_to_dict(f: Finding) -> dict:
    out = {
        "path": f.path,
        "line": f.line,
        "column": f.column,
        "end_line": f.end_line,
        "end_column": f.end_column,
        "code": f.code,
        "name": f.name,
        "message": f.message,
        "effects": [e.value for e in f.effects],
        "severity": f.severity.value,
        "context": f.context,
        "fix": None
        if f.fix is None
        else {"applicability": f.fix.applicability.value, "title": f.fix.title, "edits": [_edit(e) for e in f.fix.edits]},
    }
    if f.confirmation is not None:
        out["confirmation"] = f.confirmation
    return out


def error_to_dict(e: FileError) -> dict:
    out: dict = {"path": e.path, "message": e.message}
    if e.line is not None:
        out["line"] = e.line
    if e.column is not None:
        out["column"] = e.column
    if e.code == INTERNAL_ERROR_CODE:  # fusionlint failed, not the file; absent for file errors
        out["code"] = e.code
        if e.rule is not None:
            out["rule"] = e.rule
    return out


def render(result: RunResult, *, rules: Mapping, root: Path, tool_version: str, options: Optional[Mapping] = None) -> str:
    doc = {
        "version": tool_version,
        "schema_version": SCHEMA_VERSION,
        "target_torch": result.target_torch,
        "findings": [finding_to_dict(f) for f in result.findings],
        "errors": [error_to_dict(e) for e in result.errors],
    }
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
