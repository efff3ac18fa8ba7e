"""Small helpers shared by tests: lint a snippet, apply its fixes."""

from __future__ import annotations

from fusionlint.analysis.project import ProjectIndex
from fusionlint.engine import Engine
from fusionlint.fixes import fix_source
from fusionlint.rule import Finding, Rule


def lint(source: str, rules: list[type[Rule]], path: str = "snippet.py", project: ProjectIndex | None = None) -> list[Finding]:
    if project is None:
        project = ProjectIndex()
        project.add_file(path, source)
    findings, error = Engine(rules, project).lint_source(source, path)
    assert error is None, f"snippet failed to parse: {error}"
    return findings


def fixed(source: str, rules: list[type[Rule]], *, unsafe: bool = True) -> str:
    return fix_source(source, lambda text: lint(text, rules), unsafe=unsafe).source


def need(module: str, why: str):
    """Import an optional test dependency. Outside CI a missing one skips with the reason; in CI
    (CI=true, set by .ci/run) it fails, so a missing dependency can never hide behind a skip."""
    import importlib
    import os

    import pytest

    try:
        return importlib.import_module(module)
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail(f"{module} is required in CI: {why}")
        pytest.skip(f"{module} not installed: {why}")
