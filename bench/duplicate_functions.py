"""How much of a corpus's ``forward`` code is an exact copy of another ``forward``: a measurement, not
part of the linter (what reusing one function's findings for its copies could leave out).

    python bench/duplicate_functions.py .zoo/transformers-5.24.0/transformers

Each method named ``forward`` of a class, decorators included, dedented, is compared by its text.
"""

from __future__ import annotations

import ast
import collections
import hashlib
import sys
import textwrap
from pathlib import Path


def main(root: str) -> int:
    copies: collections.Counter = collections.Counter()
    size: dict[str, int] = {}
    for path in sorted(Path(root).rglob("*.py")):
        source = path.read_text(encoding="utf-8", errors="replace")
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError):
            continue
        lines = source.splitlines()
        for node in ast.walk(tree):
            if not isinstance(node, ast.ClassDef):
                continue
            for m in node.body:
                if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)) and m.name == "forward":
                    first = min([m.lineno, *(d.lineno for d in m.decorator_list)])
                    text = textwrap.dedent("\n".join(lines[first - 1 : m.end_lineno]))
                    key = hashlib.sha1(text.encode()).hexdigest()
                    copies[key] += 1
                    size[key] = m.end_lineno - first + 1
    total = sum(n * size[k] for k, n in copies.items())
    repeated = sum((n - 1) * size[k] for k, n in copies.items())
    print(f"forward methods: {sum(copies.values()):,} ({len(copies):,} distinct texts), {total:,} lines; "
          f"lines in copies beyond each text's first: {repeated:,} ({100 * repeated / max(total, 1):.1f} %)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1]))
