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


def measured_break_lines(root, module: str, cls: str, path) -> set[int]:
    """Import ``module`` from the project at ``root``, compile its ``cls`` with Dynamo's "eager" backend
    (fusionlint's confirm-pass measurement, one thread, torch's config isolated) on the module's
    ``example_inputs()``, and return the lines of ``path`` where a graph break was recorded."""
    import importlib
    import sys
    from pathlib import Path

    torch = need("torch", "the break sites are measured under torch.compile")
    from fusionlint.confirm.measure import isolated_torch_config, measure

    sys.path.insert(0, str(root))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    top = module.split(".", 1)[0]
    try:
        loaded = importlib.import_module(module)
        with isolated_torch_config():
            result = measure(getattr(loaded, cls), loaded.example_inputs, device="cpu", user_files=[str(path)],
                             compile_kwargs={"backend": "eager"})
    finally:
        torch.set_num_threads(threads)
        sys.path.remove(str(root))
        for name in [n for n in sys.modules if n == top or n.startswith(top + ".")]:
            del sys.modules[name]
    assert result.eager_ok and result.compiled_ok, (result.eager_error, result.compiled_error)
    return {s.line for s in result.break_sites if s.file and Path(s.file).resolve() == Path(path).resolve()}


def process_running(pid: int) -> bool:
    """Alive and not a zombie (a zombie has ended; only its parent has not collected it yet). Linux /proc."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
    except FileNotFoundError:
        return False
    return stat[stat.rfind(b")") + 2 :].split()[0] != b"Z"


def cut_every(monkeypatch, piece_lines: int) -> None:
    """Make ``fusionlint.pieces`` cut any text, short or long, about every ``piece_lines`` lines (1: at
    every candidate), so that a test's small text goes through the parsers' piecewise path."""
    from fusionlint import pieces

    monkeypatch.setattr(pieces, "SPLIT_LINES", 0)
    monkeypatch.setattr(pieces, "PIECE_LINES", piece_lines)
