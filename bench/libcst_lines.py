"""What the sparse plan hands libcst, by kind of code: a measurement, not part of the linter.

    python bench/libcst_lines.py .zoo/transformers-5.24.0/transformers

Lints the paths (one process, no cache) and counts, for every linted file, the non-blank lines the
sparse plan keeps for libcst: in functions and methods the project model compiles, in other methods
(``__init__``, dunders, the rest), in other top-level functions, and outside any function (class bodies'
own statements, module-level code). The compiled share bounds what leaving out everything else could save.
"""

from __future__ import annotations

import ast
import collections
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's fusionlint

from fusionlint import engine, pyast, runner, sparse  # noqa: E402
from fusionlint.config import Settings  # noqa: E402

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
counts: collections.Counter = collections.Counter()


def _first(node: ast.AST) -> int:
    return min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", ()))])


def _count(source: str, tree: ast.Module, model, path: str, plan) -> None:
    roots, methods = sparse._compiled(model, path)
    blanked: set[int] = set()
    for unit in plan.blanked if plan is not None else ():
        blanked.update(range(unit.start, unit.end + 1))
    lines = source.splitlines()

    def kept(a: int, b: int, skip: set = frozenset()) -> int:
        return sum(1 for i in range(a, b + 1) if i not in blanked and i not in skip and lines[i - 1].strip())

    covered: set[int] = set()
    for node in tree.body:
        a, b = _first(node), node.end_lineno or node.lineno
        if isinstance(node, _DEFS):
            counts["compiled function" if node.name in roots else "other function"] += kept(a, b)
        elif isinstance(node, ast.ClassDef):
            inner: set[int] = set()
            for m in node.body:
                if isinstance(m, _DEFS):
                    ma, mb = _first(m), m.end_lineno or m.lineno
                    if f"{node.name}.{m.name}" in methods:
                        kind = "compiled method"
                    elif m.name == "__init__":
                        kind = "__init__"
                    elif m.name.startswith("__"):
                        kind = "other dunder method"
                    else:
                        kind = "other method"
                    counts[kind] += kept(ma, mb)
                    inner.update(range(ma, mb + 1))
            counts["class body outside methods"] += kept(a, b, inner)
        else:
            continue
        covered.update(range(a, b + 1))
    counts["module level"] += kept(1, len(lines), covered)


def main(paths: list[str]) -> int:
    real_plan = sparse.plan

    def plan(source, outline, model, path, file_triggers, tree=None):
        found = real_plan(source, outline, model, path, file_triggers, tree)
        _count(source, pyast.parse(source), model, path, found)
        return found

    engine.sparse_mod.plan = plan
    out = runner.run(paths, Settings(root=Path.cwd()), runner.RunOptions(jobs=1))
    total = sum(counts.values())
    print(f"{len(out.result.findings)} findings; non-blank lines libcst is handed: {total:,}")
    print("\n| kind | lines | % |\n|---|---|---|")
    for kind, n in counts.most_common():
        print(f"| {kind} | {n:,} | {100 * n / max(total, 1):.1f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
