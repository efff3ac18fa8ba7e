"""The findings cache over the model zoo: cold, warm and one-file-edited runs, wall and CPU seconds.

    python bench/cache.py                 # timm + transformers (bench/zoo.py fetches them), jobs=1
    python bench/cache.py --jobs 4 --corpus DIR

The corpus is copied into a temporary project (the edits below must not touch the shared copy),
then each run is a fresh process calling ``fusionlint.runner.run`` with the cache on:

- cold: no cache directory; warm: the same tree again;
- edit (comment): a comment appended to one model file (its ``ast`` summary stays the same, so the
  cached propagation is reused);
- edit (function appended): a new function at the end of ``timm/layers/mlp.py`` (a module much of
  timm imports; its summary changes, but not in anything the propagation reads): that file alone;
- edit (a line in forward): a line inserted at the top of ``LlamaAttention.forward`` (timm: ``Attention.forward``
  of ``vision_transformer.py``): the calls below it move; the propagated facts name call sites, not lines
  (``fusionlint.project.reasons``), so they are kept, and the files that show a moved line are linted
  again (until e8796f4 the propagation ran again); then the edit undone;
- edit (base class): a line inserted at the top of the file that defines a widely used base class
  (every line of it moves; its subclasses' attribute facts keep their kinds and constructors): that
  file plus the files whose questions now get other answers are linted again.

Each row: wall s, CPU s (the process and its workers), peak resident size of the largest of those
processes, files linted by the engine (the rest were served from the cache), findings. The CLI's own warm wall time (interpreter start and
imports included) is printed last, with ``-q`` and with the default text output.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional

HERE = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(HERE / "bench"))

_CHILD = r"""
import json, resource, sys, time
t0 = time.perf_counter()
from pathlib import Path
from fusionlint.config import load_settings
from fusionlint.runner import RunOptions, run
def cpu():
    a, b = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return a.ru_utime + a.ru_stime + b.ru_utime + b.ru_stime
def peak_mib():  # ru_maxrss: KiB on Linux; the children's is the largest child's
    return max(resource.getrusage(w).ru_maxrss for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)) / 1024
root, jobs, cache = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "cache"
c0, t1 = cpu(), time.perf_counter()
out = run([str(root)], load_settings(root), RunOptions(jobs=jobs, cache=cache))  # as the CLI does
found = [[f.path, f.line, f.column, f.code, f.message] for f in out.result.findings]
found += [[e.path, e.line, e.message] for e in out.result.errors]
print(json.dumps({"wall": time.perf_counter() - t1, "cpu": cpu() - c0, "import": t1 - t0, "peak": peak_mib(),
                  "linted": out.files_linted, "files": out.result.files_checked,
                  "findings": len(out.result.findings), "errors": len(out.result.errors), "found": found}))
"""

# (file, the base class it defines) tried in this order for the base-class edit
# the file that gets a function appended
_APPEND = ["timm/layers/mlp.py", "transformers/modeling_utils.py"]
_BASES = [("transformers/modeling_utils.py", "PreTrainedModel"), ("timm/layers/mlp.py", "Mlp")]
# (file, class) whose forward gets a line inserted at its top, tried in this order
_FORWARDS = [("transformers/models/llama/modeling_llama.py", "LlamaAttention"), ("timm/models/vision_transformer.py", "Attention")]


def _with_line_in_forward(text: str, cls: str) -> Optional[str]:
    """``text`` with ``_probe = 1`` inserted before the first statement of ``cls.forward``, or None."""
    import ast

    for node in ast.parse(text).body:
        if isinstance(node, ast.ClassDef) and node.name == cls:
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "forward":
                    first = item.body[0]
                    lines = text.split("\n")
                    lines.insert(first.lineno - 1, " " * first.col_offset + "_probe = 1  # inserted by bench/cache.py")
                    return "\n".join(lines)
    return None


def _one(root: Path, jobs: int, cache: bool = True) -> dict:
    done = subprocess.run([sys.executable, "-c", _CHILD, str(root), str(jobs), "cache" if cache else "no-cache"],
                          capture_output=True, text=True,
                          check=True, cwd=HERE)
    return json.loads(done.stdout.strip().splitlines()[-1])


def _load() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "?"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, action="append", help="directory to copy and lint (repeatable)")
    parser.add_argument("--jobs", type=int, default=1, help="static-pass worker processes")
    parser.add_argument("--verify", action="store_true",
                        help="after each edit, also run without the cache and compare every finding and error")
    args = parser.parse_args()
    if args.corpus:
        roots = args.corpus
    else:
        import zoo

        roots = zoo.fetch()
    with tempfile.TemporaryDirectory(prefix="fusionlint-cache-bench-") as tmp:
        project = Path(tmp) / "project"
        project.mkdir()
        (project / "pyproject.toml").write_text("")
        for root in roots:
            shutil.copytree(root, project / root.name)
        lines = sum(p.read_bytes().count(b"\n") for p in project.rglob("*.py"))
        print(f"corpus: {', '.join(str(r) for r in roots)}; {lines:,} lines; jobs={args.jobs}; "
              f"load average before: {_load()}; {time.strftime('%Y-%m-%d %H:%M')}; {os.cpu_count()} CPUs")
        print()
        print("| run | wall s | CPU s | peak RSS MiB | files linted | files | findings | errors |")
        print("|---|---|---|---|---|---|---|---|")

        def row(label: str) -> None:
            r = _one(project, args.jobs)
            same = ""
            if args.verify and label.startswith("edit"):
                same = " (same as --no-cache)" if _one(project, args.jobs, cache=False)["found"] == r["found"] else \
                    " (DIFFERENT from --no-cache)"
            print(f"| {label} | {r['wall']:.2f} | {r['cpu']:.2f} | {r['peak']:.1f} | {r['linted']:,} | {r['files']:,} | "
                  f"{r['findings']:,}{same} | {r['errors']} |", flush=True)

        row("cold (no cache)")
        row("warm (unchanged tree)")
        row("warm again")
        # copytree keeps the files' mtimes, so they are older than the cache's 2-second "racy
        # mtime" window; the edited file is younger and is hashed again by the next runs
        leaf = next(p for pattern in ("modeling_*.py", "models/*.py", "*.py") for p in sorted(project.rglob(pattern))
                    if p.name != "__init__.py")
        with open(leaf, "a", encoding="utf-8") as fh:
            fh.write("\n# edited by bench/cache.py\n")
        row(f"edit (comment) {leaf.relative_to(project)}")
        row("warm after the edit")
        appended = next((project / f for f in _APPEND if (project / f).is_file()), None)
        if appended is not None:
            with open(appended, "a", encoding="utf-8") as fh:
                fh.write("\n\ndef appended_by_bench(x):\n    return x * 2\n")
            row(f"edit (function appended) {appended.relative_to(project)}")
            row("warm after the edit")
        forward = next(((project / f, c) for f, c in _FORWARDS if (project / f).is_file()), None)
        if forward is not None:
            before = forward[0].read_text(encoding="utf-8")
            edited = _with_line_in_forward(before, forward[1])
            if edited is not None:
                forward[0].write_text(edited, encoding="utf-8")
                row(f"edit (a line in {forward[1]}.forward) {forward[0].relative_to(project)}")
                forward[0].write_text(before, encoding="utf-8")
                row("the edit undone")
        base = next(((project / f, c) for f, c in _BASES if (project / f).is_file()), None)
        if base is not None:
            text = base[0].read_text(encoding="utf-8")
            base[0].write_text("# edited by bench/cache.py: every line below moves\n" + text, encoding="utf-8")
            row(f"edit (base class {base[1]}) {base[0].relative_to(project)}")
            row("warm after the edit")
        # this checkout's code, as in the runs above: an installed fusionlint elsewhere (an editable
        # install of another checkout) has another code fingerprint, and so no cache entries
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")])))
        print()
        for how, flags in (("-q", ["-q"]), ("its default text output (every finding with its source line)", [])):
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-m", "fusionlint.cli", "check", *flags, "--exit-zero", f"--jobs={args.jobs}", "."],
                           cwd=project, capture_output=True, check=True, env=env)
            print(f"CLI `fusionlint check` warm, {how}, whole process (start + imports + run): "
                  f"{time.perf_counter() - t0:.2f} s wall")
        print(f"load average after: {_load()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
