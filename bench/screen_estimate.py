"""How much of libcst's work a per-function screen on CPython's tree could save: a measurement, not
part of the linter.

    python bench/screen_estimate.py .bench/scale/corpus/transformers-5.24.0

Lints the given paths (one process, no cache) and records, for every function the sparse plan hands
libcst (top-level functions and methods of top-level classes), its lines, whether the project model
compiles it, which rules' text triggers its own text holds and which rules report in it. A prototype
screen then judges each compiled function from CPython's tree and ``fusionlint.semantic.values``,
where a value "may be a tensor" when any atom of it is not a display's items (parameters, ``self``
attributes and helper calls all count as maybe):

- FL102 needs a condition (``if``/``while``/``assert``/conditional expression, a ``bool`` operand, a
  ``not``) that may be a tensor, or a call of ``equal``/``allclose``/``any``/``all``/...;
- FL101 needs ``.item()``/``.tolist()``, a conversion (``int``/``float``/``bool``/``complex``/``range``/
  ``len``/``math.*``/``.index``) of something that may be a tensor, or an index that may be one;
- FL103 needs a call of ``nonzero``/``unique``/``masked_select``/... or an index that may be a tensor.

It prints, per rule, the compiled lines whose text holds the rule's trigger and that the screen keeps,
and the functions with a finding of that rule it would have dropped: each one is a form the prototype
does not know yet (an exact screen must drop none). Last, for each rule, the lines that exact screens
of every other rule could leave out while that one is judged by its text triggers alone: a rule whose
row is small keeps most functions by itself, so a screen pays only once all such rules have one.
"""

from __future__ import annotations

import ast
import collections
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's fusionlint

from fusionlint import engine, runner  # noqa: E402
from fusionlint.config import Settings  # noqa: E402
from fusionlint.semantic.values import function_values, holds_no_tensor, resolve  # noqa: E402

SCREENED = ("FL101", "FL102", "FL103")
_CONVERSIONS = frozenset({"int", "float", "bool", "complex", "range", "len"})
_TRUTH_CALLS = frozenset({"equal", "allclose", "is_nonzero", "any", "all", "_assert"})
_SHAPE_CALLS = frozenset({"nonzero", "unique", "masked_select", "unique_consecutive", "argwhere", "where",
                          "repeat_interleave", "bincount", "histc", "nonzero_static"})
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)


def main(paths: list[str]) -> int:
    linted: dict[str, tuple] = {}  # display path -> (source, sparse plan, codes of the rules run)
    engines = []
    lint_parsed = engine.Engine._lint_parsed

    def recording(self, text, source, path, rules, plan, **kwargs):
        engines[:1] = [self]
        linted[path] = (source, plan, [r.code for r in rules])
        return lint_parsed(self, text, source, path, rules, plan, **kwargs)

    engine.Engine._lint_parsed = recording
    result = runner.run(paths, Settings(root=Path.cwd()), runner.RunOptions(jobs=1, cache=False)).result
    model, rules = engines[0].model, {r.code: r for r in engines[0].rules}
    findings = collections.defaultdict(list)
    for f in result.findings:
        findings[f.path].append((f.line, f.code))

    total = kept_any = 0
    kept, lost, with_finding = collections.Counter(), collections.Counter(), collections.Counter()
    compiled = found_in = unfound_lines = 0
    functions: list[tuple[int, frozenset, frozenset]] = []  # (lines, rules triggered, rules reported) per compiled function
    for path, (source, plan, codes) in linted.items():
        tree = ast.parse(source)
        aliases = _aliases(tree)
        blanked = [(u.start, u.end) for u in (plan.blanked if plan else [])]
        for qual, fn in _functions(tree):
            first = min([fn.lineno, *(d.lineno for d in fn.decorator_list)])
            last = fn.end_lineno or fn.lineno
            if any(start <= first and last <= end for start, end in blanked):
                continue  # libcst never sees it
            if model.function_facts(path, qual) is None:
                continue
            lines = last - first + 1
            text = "\n".join(source.splitlines()[first - 1 : last])
            triggered = {c for c in codes if rules[c].scope == "compiled" and any(t in text for t in rules[c].triggers)}
            reported = {code for line, code in findings[path] if first <= line <= last}
            needs = _screen(fn, aliases)
            functions.append((lines, frozenset(triggered), frozenset(reported)))
            compiled += 1
            total += lines
            found_in += bool(reported)
            unfound_lines += 0 if reported else lines
            kept_any += lines if needs & triggered else 0
            for code in SCREENED:
                kept[code] += lines if code in triggered and code in needs else 0
                if code in reported:
                    with_finding[code] += 1
                    lost[code] += code not in needs
    print(f"{len(result.findings)} findings; {compiled} compiled functions ({total:,} lines), {found_in} with a finding; "
          f"{unfound_lines:,} lines in those without one")
    print(f"kept by the screen for {', '.join(SCREENED)} together: {kept_any:,} of {total:,} lines")
    for code in SCREENED:
        print(f"{code}: {kept[code]:,} of {total:,} lines kept; {with_finding[code]} functions with a finding, "
              f"{lost[code]} of them dropped")
    _leave_one_out(functions)
    return 0


def _leave_one_out(functions: list[tuple[int, frozenset, frozenset]]) -> None:
    """Which rules' text triggers keep the lines: a function without a finding can be left out when every
    rule whose trigger its text holds is screened exactly; with every rule screened but one (that one
    judged by its triggers alone), how many lines could go?"""
    codes = sorted({c for _, triggered, _ in functions for c in triggered})

    def freed(screened: set) -> int:
        return sum(lines for lines, triggered, reported in functions if not reported and triggered <= screened)

    print(f"lines of functions without a finding that exact screens of all {len(codes)} rules could leave out: "
          f"{freed(set(codes)):,}; with every rule screened but the one named (judged by its triggers):")
    print("  " + ", ".join(f"{c} {freed(set(codes) - {c}):,}" for c in codes))


def _functions(tree: ast.Module):
    for stmt in tree.body:
        if isinstance(stmt, _DEFS):
            yield stmt.name, stmt
        elif isinstance(stmt, ast.ClassDef):
            for member in stmt.body:
                if isinstance(member, _DEFS):
                    yield f"{stmt.name}.{member.name}", member


def _aliases(tree: ast.Module) -> dict[str, str]:
    """The file's import aliases (absolute imports only: enough for ``math.*`` and ``torch.*``)."""
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                out[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for a in node.names:
                out[a.asname or a.name] = f"{node.module}.{a.name}"
    return out


def _own_nodes(fn) -> list[ast.AST]:
    """The nodes of ``fn``'s body, nested definitions left out."""
    out, stack = [], list(fn.body)
    while stack:
        node = stack.pop()
        out.append(node)
        stack.extend(c for c in ast.iter_child_nodes(node) if not isinstance(c, (*_DEFS, ast.ClassDef, ast.Lambda)))
    return out


def _screen(fn, aliases: dict[str, str]) -> set[str]:
    """The rules of SCREENED that may report in ``fn`` (the prototype's judgement)."""
    args = fn.args
    params = [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs]
    params += [a.arg for a in (args.vararg, args.kwarg) if a is not None]
    nodes = _own_nodes(fn)
    values = function_values(fn, params, aliases, nodes)

    def maybe(node: ast.expr) -> bool:
        return not holds_no_tensor(values.of(node))

    needs = set()
    for node in nodes:
        if isinstance(node, (ast.If, ast.While, ast.Assert, ast.IfExp)) and maybe(node.test):
            needs.add("FL102")
        elif isinstance(node, ast.BoolOp) and any(maybe(v) for v in node.values):
            needs.add("FL102")
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not) and maybe(node.operand):
            needs.add("FL102")
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            qual = resolve(func, aliases) or ""
            if name in ("item", "tolist"):
                needs.add("FL101")
            elif (name in _CONVERSIONS or name == "index" or qual.startswith("math.")) and any(maybe(a) for a in node.args):
                needs.add("FL101")
            if name in _SHAPE_CALLS:
                needs.add("FL103")
            if name in _TRUTH_CALLS:
                needs.add("FL102")
        elif isinstance(node, ast.Subscript) and not isinstance(node.slice, ast.Slice):
            parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            if any(maybe(p) for p in parts if not isinstance(p, ast.Slice)):
                needs.update(("FL101", "FL103"))
    return needs


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
