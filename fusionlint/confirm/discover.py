"""Which modules of a run have an example, found without importing anything.

``--confirm`` runs every such module, flagged or not, so a break or recompile that the static pass
missed still shows up (as FL900 / FL902). The sources, as the worker will use them
(``fusionlint/confirm/examples.py``):

- **registered**: a ``[tool.fusionlint.examples]`` key ``"pkg.mod:Model"`` whose module is a file
  of the run;
- **convention**: a file with a top-level ``fusionlint_example()``;
- **fixture**: a file with ``example_inputs()`` and a top-level ``Model`` class (or a single class
  defining ``forward``);
- **inferred** (only when asked for: inputs are guessed): each top-level class that defines
  ``forward`` and whose ``__init__`` takes no required argument.

Files are read with CPython's ``ast`` (a syntax error just means no candidate from that file).
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

REGISTERED, CONVENTION, FIXTURE, INFERRED = "registered", "convention", "fixture", "inferred"


@dataclass(frozen=True)
class Candidate:
    abs_path: str
    target: str  # class qualname, or examples.EXAMPLE_TARGET for a fusionlint_example() file
    source: str  # REGISTERED | CONVENTION | FIXTURE | INFERRED


def _parse(path: str) -> Optional[ast.Module]:
    try:
        return ast.parse(Path(path).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError, UnicodeDecodeError):
        return None


def _no_required_init_args(cls: ast.ClassDef) -> bool:
    for node in cls.body:
        if isinstance(node, ast.FunctionDef) and node.name == "__init__":
            a = node.args
            positional = a.posonlyargs + a.args
            required = len(positional) - len(a.defaults) - 1  # minus self
            kw_required = sum(1 for d in a.kw_defaults if d is None)
            return required <= 0 and kw_required == 0
    return True  # inherits __init__: the worker finds out


def _defines_forward(cls: ast.ClassDef) -> bool:
    return any(isinstance(n, ast.FunctionDef) and n.name == "forward" for n in cls.body)


def module_file(module: str, sys_path: list[str]) -> Optional[str]:
    """``pkg.mod`` -> the real path of its file under one of ``sys_path`` (None: not there)."""
    rel = module.replace(".", os.sep)
    for base in sys_path:
        for cand in (Path(base) / f"{rel}.py", Path(base) / rel / "__init__.py"):
            if cand.is_file():
                return os.path.realpath(cand)
    return None


def candidates(paths: list[str], *, examples: dict, sys_path: list[str], inferred: bool) -> list[Candidate]:
    """Every module of ``paths`` with an example, in (path, target) order, one per (path, target)."""
    from fusionlint.confirm.examples import EXAMPLE_TARGET

    wanted = {os.path.realpath(p) for p in paths}
    found: dict[tuple[str, str], Candidate] = {}
    for key in sorted(examples or {}):
        if ":" not in key:
            continue
        mod, attr = key.split(":", 1)
        path = module_file(mod, sys_path)
        if path is None:  # also "mod" given as the file's stem (a flat project)
            path = next((p for p in sorted(wanted) if Path(p).stem == mod.rsplit(".", 1)[-1]), None)
        if path in wanted:
            found.setdefault((path, attr), Candidate(path, attr, REGISTERED))
    for path in sorted(wanted):
        tree = _parse(path)
        if tree is None:
            continue
        top = {n.name: n for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))}
        if any(p == path for p, _t in found):
            continue  # registered examples name the file's modules already
        if isinstance(top.get("fusionlint_example"), ast.FunctionDef):
            found[(path, EXAMPLE_TARGET)] = Candidate(path, EXAMPLE_TARGET, CONVENTION)
            continue
        if isinstance(top.get("example_inputs"), ast.FunctionDef):
            # The worker's rule: the file's ``Model``, else its only module class.
            with_forward = [n.name for n in tree.body if isinstance(n, ast.ClassDef) and _defines_forward(n)]
            pick = "Model" if isinstance(top.get("Model"), ast.ClassDef) else (with_forward[0] if len(with_forward) == 1 else None)
            if pick:
                found[(path, pick)] = Candidate(path, pick, FIXTURE)
                continue
        if inferred:
            for node in tree.body:
                if isinstance(node, ast.ClassDef) and _defines_forward(node) and _no_required_init_args(node):
                    found[(path, node.name)] = Candidate(path, node.name, INFERRED)
    return [found[k] for k in sorted(found)]
