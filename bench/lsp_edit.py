"""What the language server spends on one lint after an edit, in a real project.

    python bench/lsp_edit.py PROJECT FILE [--repeat N]    # e.g. .bench/scale/corpus/transformers-5.24.0
                                                          #      transformers/models/llama/modeling_llama.py

In process, as ``fusionlint.lsp.server`` lints on ``didOpen`` and ``didChange``: the project indexed with
the file open as saved (from the findings cache where a CLI run or an earlier start left one), a first
lint, then a sequence of edits of the buffer, each linted as the next keystroke's text. The edits, in
order, each on the text before: a line inserted in the first ``forward`` (the compiled code's call
sites move: the propagation runs), a comment appended, that line's constant changed, the buffer broken
by an unclosed call and mended again, and that line made to call a method. Prints CPU seconds per step
and whether the project-wide propagation ran. The index is the first start's when the findings cache
holds nothing at this fusionlint version (a helper process fills it: ``--no-helper`` to compare).
"""

from __future__ import annotations

import argparse
import platform
import resource
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from fusionlint import __version__  # noqa: E402
from fusionlint.lsp.workspace import Projects  # noqa: E402
from fusionlint.project import model as model_mod  # noqa: E402


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def edits(text: str) -> list[tuple[str, str]]:
    lines = text.split("\n")
    at = next(i for i, line in enumerate(lines) if line.lstrip().startswith("def forward")) + 1
    while lines[at].rstrip().endswith((",", "(")) or lines[at].strip().startswith((")", '"""', "#")) or not lines[at].strip():
        at += 1  # past a signature that spans lines, a docstring's first line, blank lines
    indent = " " * (len(lines[at]) - len(lines[at].lstrip()))
    out = []
    lines.insert(at, f"{indent}_probe = 1")
    out.append(("a line inserted in the first forward", "\n".join(lines)))
    lines.append("# a comment")
    out.append(("a comment appended", "\n".join(lines)))
    lines[at] = f"{indent}_probe = 2"
    out.append(("that line's constant changed", "\n".join(lines)))
    lines[at] = f"{indent}_probe = max(2"
    out.append(("the buffer broken (an unclosed call)", "\n".join(lines)))
    lines[at] = f"{indent}_probe = max(2, 3)"
    out.append(("mended", "\n".join(lines)))
    lines[at] = f"{indent}_probe = self.extra_repr()"
    out.append(("that line now calls a method", "\n".join(lines)))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("project", type=Path)
    parser.add_argument("file")
    parser.add_argument("--repeat", type=int, default=1, help="run the edit sequence this many times")
    parser.add_argument("--no-helper", action="store_true",
                        help="index without the helper process that fills an empty cache (fusionlint.cache.warm)")
    args = parser.parse_args()
    root = args.project.resolve()
    path = root / args.file
    text = path.read_text()
    if args.no_helper:
        import fusionlint.cache.warm as warm

        warm.WORKERS = 1
    runs: list[int] = []
    real_run = model_mod._Propagation.run
    model_mod._Propagation.run = lambda self: (runs.append(1), real_run(self))[1]

    print(f"# fusionlint {__version__} from {REPO}; Python {platform.python_version()} on {platform.machine()}")
    print(f"# {root.name}: {args.file}, {text.count(chr(10))} lines")
    print("| step | CPU s | propagated | findings |")
    print("|---|---|---|---|")
    projects = Projects([root])
    start, wall = cpu(), time.perf_counter()
    project = projects.for_path(str(path))
    project.ensure_indexed({str(path): text})
    helper = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(f"| index the project ({len(project.model.files)} files): {time.perf_counter() - wall:.2f} s wall, "
          f"{helper.ru_utime + helper.ru_stime:.2f} CPU s in a helper process | {cpu() - start:.2f} | "
          f"{'yes' if runs else 'no'} | |")
    steps = [("first lint", text)] + edits(text) * args.repeat
    for name, new in steps:
        before, start = len(runs), cpu()
        result = project.linter.lint(new, str(path))
        spent = cpu() - start
        error = " (syntax error)" if result.error is not None else ""
        print(f"| {name} | {spent:.2f} | {'yes' if len(runs) > before else 'no'} | {len(result.findings)}{error} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
