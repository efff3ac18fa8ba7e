"""fusionlint next to Fixit, TorchFix and Ruff on the pinned model zoo: cold, warm and one-file-edited runs.

    python bench/scale.py                         # anchors on timm only (Fixit/TorchFix: ~500 lines/CPU-s)
    python bench/scale.py --anchors-subset full   # anchors on the whole zoo too (slow: ~45 CPU-minutes each)
    python bench/scale.py --runs cold             # only the cold rows
    python bench/scale.py memory                  # fusionlint's peak RSS on a quarter, a half and all of the zoo
    python bench/scale.py floors                  # this machine's read / CPython / libcst parse speed on the zoo

The zoo (bench/zoo.py's pinned timm + transformers wheels) is copied to .bench/scale/corpus/ and every
tool runs on that copy: the edited run changes one file there and puts it back afterwards; the .zoo
originals are never touched. The anchors are installed at pinned versions into .bench/scale-venv/
(git-ignored); fusionlint is the one installed with the Python running this script.

Each tool runs as a child process: wall s is its elapsed time, CPU s its user + system time and that
of its own children (fusionlint's --jobs workers, Fixit's and TorchFix's process pools), and peak RSS
the largest resident set of one process of that tree (not their sum), both as GNU time reports them. Rows:

- cold: no cache. fusionlint with --no-cache when its CLI has that flag (after `fusionlint clean`
  when that exists); Ruff with --no-cache.
- first: the default run (with the cache) on a tree with no cache yet; it writes the cache.
- warm: a second run over the unchanged tree with the cache that a first (not shown) run wrote.
- edit: after appending a function to one file (timm/layers/mlp.py, imported across timm).
Fixit and TorchFix have no cache: their warm and edit runs would repeat the cold one, so only cold is run.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import shutil
import subprocess
import sys
import time
import venv
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))
import zoo  # noqa: E402  (bench/zoo.py: the pinned corpus and how it is fetched)

HERE = Path(__file__).resolve().parent.parent
WORK = HERE / ".bench" / "scale"
CORPUS = WORK / "corpus"
VENV = HERE / ".bench" / "scale-venv"
ANCHORS = {"fixit": "2.2.1", "torchfix": "0.7.0", "ruff": "0.17.6"}
EDITED = Path("timm-1.0.31") / "timm" / "layers" / "mlp.py"  # imported by most of timm's models
EDIT_TEXT = "\n\ndef _scale_bench_edit(x):\n    return x + 1\n"
# A pyproject.toml with a [tool.fusionlint] table fixes fusionlint's project root at the corpus
# (otherwise it walks up to this repository's and its model reads fusionlint's own sources). Ruff and
# Fixit read only their own tables, so it changes nothing for them.
PYPROJECT = "[tool.fusionlint]\n"


# -- set-up -------------------------------------------------------------------------------------------
def corpus() -> dict[str, list[Path]]:
    """Copy the zoo once; return the subsets by name: "timm" and "full" (lists of directories to lint)."""
    roots = zoo.fetch()  # .zoo/<name>-<version>/<name>
    done = CORPUS / ".complete"
    if not done.exists():
        shutil.rmtree(CORPUS, ignore_errors=True)
        CORPUS.mkdir(parents=True)
        for root in roots:
            dest = CORPUS / root.parent.name
            shutil.copytree(root, dest / root.name)
            (dest / "pyproject.toml").write_text(PYPROJECT)
        (CORPUS / "pyproject.toml").write_text(PYPROJECT)
        done.write_text("")
    restore_edit()
    dirs = [CORPUS / r.parent.name / r.name for r in roots]
    return {"timm": [d for d in dirs if d.name == "timm"], "full": dirs}


def restore_edit() -> None:
    original = HERE / ".zoo" / EDITED
    shutil.copy2(original, CORPUS / EDITED)


def anchors_venv() -> Path:
    """The bench venv with the pinned anchors; installed from the package registry once."""
    marker = VENV / "pins.txt"
    pins = [f"{name}=={version}" for name, version in ANCHORS.items()]
    if not marker.exists() or marker.read_text().split() != pins:
        print(f"installing {' '.join(pins)} into {VENV.relative_to(HERE)}", file=sys.stderr)
        venv.create(VENV, with_pip=True, clear=True)
        subprocess.run([str(VENV / "bin" / "python"), "-m", "pip", "install", "-q", *pins], check=True)
        marker.write_text("\n".join(pins) + "\n")
    return VENV / "bin"


def fusionlint_has(*words: str) -> bool:
    """Does this fusionlint's CLI know ``words`` (``["check", "--no-cache"]``, ``["clean"]``)?"""
    *command, last = words
    done = subprocess.run([*_fusionlint(), *command, "--help"], capture_output=True, text=True)
    if not command:
        return re.search(rf"^\s+{re.escape(last)}\b", done.stdout, re.M) is not None
    return last in done.stdout


def _fusionlint() -> list[str]:
    script = Path(sys.executable).parent / "fusionlint"
    return [str(script)] if script.exists() else [sys.executable, "-c", "from fusionlint.cli import main; main()"]


# -- measuring ----------------------------------------------------------------------------------------
@dataclass
class Measured:
    wall: float
    cpu: float
    rss_mib: float
    findings: Optional[int]
    rc: int


TIME = Path("/usr/bin/time")  # GNU time: a small parent, so the peak RSS it reports is the tool's alone


def measure(command: list[str], cwd: Path, count: Callable[[Path], int]) -> Measured:
    """Run ``command`` once; its wall time, CPU time and peak RSS (with its children), findings counted
    from its stdout by ``count``.

    The peak RSS comes from GNU time when it is there: a process started by this (larger) Python would
    inherit this process's high-water mark at exec and report at least that.
    """
    # per process: two benches at once (a table and a memory run) must not read each other's output
    out_path, err_path, usage_path = (WORK / f"{what}-{os.getpid()}.txt" for what in ("stdout", "stderr", "usage"))
    wrapped = [str(TIME), "-f", "%U %S %M", "-o", str(usage_path), *command] if TIME.exists() else command
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        t0 = time.perf_counter()
        # unbuffered: Fixit's and TorchFix's pool workers may print findings themselves; a precaution (an
        # unbuffered rerun on timm gave the same counts as a buffered one: 206 and 8)
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        proc = subprocess.Popen(wrapped, cwd=cwd, stdout=out, stderr=err, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)  # already reaped: keep Popen from waiting again
    cpu, rss_kib = usage.ru_utime + usage.ru_stime, usage.ru_maxrss
    if TIME.exists():
        user, system, rss = usage_path.read_text().split()[-3:]
        cpu, rss_kib = float(user) + float(system), int(rss)
    try:
        found: Optional[int] = count(out_path)
    except ValueError:
        found = None
    if found is None:
        tail = err_path.read_text(errors="replace")[-2000:]
        print(f"warning: {command[0]} rc={proc.returncode}, findings not counted; stderr tail:\n{tail}", file=sys.stderr)
    return Measured(wall, cpu, rss_kib / 1024, found, proc.returncode)


def _count_lines(pattern: str) -> Callable[[Path], int]:
    """Lines of the output that are findings (read line by line: Ruff prints ~450,000 of them)."""
    regex = re.compile(pattern)

    def count(path: Path) -> int:
        with open(path, errors="replace") as lines:
            return sum(1 for line in lines if regex.match(line))

    return count


def _count_fusionlint(path: Path) -> int:
    import json

    return len(json.loads(path.read_text())["findings"])


@dataclass
class Tool:
    name: str
    cached: bool  # has a cache, so warm/edit rows mean something
    command: Callable[[list[Path], str], list[str]]  # (directories, run kind) -> argv
    count: Callable[[Path], int]
    before: Callable[[str], None] = lambda kind: None  # called before each run of a kind


def tools(bin_dir: Path) -> dict[str, Tool]:
    cache = WORK / "ruff-cache"
    no_cache = fusionlint_has("check", "--no-cache")
    has_clean = fusionlint_has("clean")

    def fusionlint_command(dirs: list[Path], kind: str) -> list[str]:
        cold = ["--no-cache"] if kind == "cold" and no_cache else []
        return [*_fusionlint(), "check", *map(str, dirs), "--format", "json", "--exit-zero", *cold]

    def fusionlint_before(kind: str) -> None:
        if kind in ("cold", "prime") and has_clean:
            subprocess.run([*_fusionlint(), "clean"], cwd=CORPUS, capture_output=True, check=False)
            for sub in CORPUS.iterdir():
                if sub.is_dir():
                    subprocess.run([*_fusionlint(), "clean"], cwd=sub, capture_output=True, check=False)

    def ruff_command(dirs: list[Path], kind: str) -> list[str]:
        caching = ["--no-cache"] if kind == "cold" else ["--cache-dir", str(cache)]
        return [str(bin_dir / "ruff"), "check", "--select", "ALL", "--exit-zero", "--output-format", "concise",
                *caching, *map(str, dirs)]

    def ruff_before(kind: str) -> None:
        if kind == "prime":
            shutil.rmtree(cache, ignore_errors=True)

    return {
        "fusionlint": Tool(
            "fusionlint" + ("" if no_cache else " (no --no-cache flag: no cache)"),
            cached=no_cache, command=fusionlint_command, count=_count_fusionlint, before=fusionlint_before,
        ),
        "ruff": Tool(f"Ruff {ANCHORS['ruff']} --select ALL", True, ruff_command,
                     _count_lines(r"^\S.*:\d+:\d+: [A-Z]+\d+"), ruff_before),
        "fixit": Tool(f"Fixit {ANCHORS['fixit']}", False,
                      lambda dirs, kind: [str(bin_dir / "fixit"), "lint", *map(str, dirs)],
                      _count_lines(r"^\S.*@\d+:\d+ ")),
        "torchfix": Tool(f"TorchFix {ANCHORS['torchfix']}", False,
                         lambda dirs, kind: [str(bin_dir / "torchfix"), *map(str, dirs)],
                         _count_lines(r"^\S.*:\d+:\d+: TOR\d+")),
    }


def size(dirs: list[Path]) -> tuple[int, int]:
    files = [p for d in dirs for p in d.rglob("*.py")]
    return len(files), sum(p.read_bytes().count(b"\n") for p in files)


# -- the table ----------------------------------------------------------------------------------------
def bench(args: argparse.Namespace) -> int:
    subsets = corpus()
    bin_dir = anchors_venv()
    every = tools(bin_dir)
    kinds = args.runs.split(",")
    plan: list[tuple[str, str]] = [("fusionlint", "full"), ("ruff", "full")]
    if args.anchors_subset == "timm":
        plan += [("fusionlint", "timm"), ("ruff", "timm"), ("fixit", "timm"), ("torchfix", "timm")]
    elif args.anchors_subset == "full":
        plan += [("fixit", "full"), ("torchfix", "full")]
    if args.tools:
        plan = [(name, subset) for name, subset in plan if name in args.tools.split(",")]
    rows = []
    for kind in kinds:
        for name, subset in plan:
            tool = every[name]
            if kind != "cold" and not tool.cached:
                continue
            dirs = subsets[subset]
            cwd = CORPUS if subset == "full" else dirs[0].parent
            if kind == "first":  # the default run on a tree with no cache yet: it writes the cache
                tool.before("prime")
            if kind == "warm":
                tool.before("prime")
                measure(tool.command(dirs, "prime"), cwd, tool.count)  # writes the cache; not shown
            if kind == "edit":
                restore_edit()
                tool.before("prime")
                measure(tool.command(dirs, "prime"), cwd, tool.count)
                with open(CORPUS / EDITED, "a") as f:
                    f.write(EDIT_TEXT)
            tool.before(kind)
            print(f"{kind}: {tool.name} on {subset} ...", file=sys.stderr, flush=True)
            m = measure(tool.command(dirs, kind), cwd, tool.count)
            restore_edit()
            files, lines = size(dirs)
            rows.append((kind, name, subset, tool.name, files, lines, m))
    print(_table(rows))
    return 0


def _table(rows) -> str:
    base = {(kind, subset): lines / m.cpu for kind, name, subset, _, _, lines, m in rows if name == "fusionlint"}
    out = [
        "| run | tool | corpus | files | lines | wall s | CPU s | lines / CPU-s | × fusionlint | peak RSS MiB | findings |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for kind, name, subset, label, files, lines, m in rows:
        speed = lines / m.cpu if m.cpu else float("inf")
        ref = base.get((kind, subset)) or base.get(("cold", subset))
        ratio = f"{speed / ref:.2f}" if ref else "–"
        where = "timm only" if subset == "timm" else "timm + transformers"
        found = "?" if m.findings is None else f"{m.findings:,}"
        out.append(
            f"| {kind} | {label} | {where} | {files:,} | {lines:,} | {m.wall:.2f} | {m.cpu:.2f} | {speed:,.0f} | "
            f"{ratio} | {m.rss_mib:.0f} | {found} |"
        )
    return "\n".join(out)


# -- memory -------------------------------------------------------------------------------------------
def memory(args: argparse.Namespace) -> int:
    """fusionlint's peak RSS on a quarter, a half and all of the zoo (every 4th / 2nd file, in path order,
    plus every package's __init__.py so that module names stay those of the full tree)."""
    full = corpus()["full"]
    print("| corpus | files | lines | wall s | CPU s | peak RSS MiB | findings |")
    print("|---|---|---|---|---|---|---|")
    steps = {"quarter": 4, "half": 2, "full": 1}
    for label in args.fractions.split(","):
        root, dirs = fraction(full, label, steps[label])
        command = [*_fusionlint(), "check", *map(str, dirs), "--format", "json", "--exit-zero",
                   "--jobs", str(args.jobs)]
        if fusionlint_has("check", "--no-cache"):
            command.append("--no-cache")
        m = measure(command, root, _count_fusionlint)
        files, lines = size(dirs)
        found = "?" if m.findings is None else f"{m.findings:,}"
        print(f"| {label} | {files:,} | {lines:,} | {m.wall:.2f} | {m.cpu:.2f} | {m.rss_mib:.0f} | {found} |",
              flush=True)
    return 0


# -- floors -------------------------------------------------------------------------------------------
def floors(args: argparse.Namespace) -> int:
    """What this machine does per CPU-second on the zoo with no analysis at all: read every file,
    CPython's ``ast.parse`` of every file, libcst's parse of every ``--floor-step``-th file (the way
    the engine parses: ``fusionlint.cst_parse``). Lines per CPU-second vary between machines by more
    than the changes the cold row measures (the first scale table's commit, 0f42002, took 198.8 CPU s on
    2026-12-01's machine and 394 s on a later session's), so a cold row is read against these floors of
    the same machine."""
    import ast
    import gc

    from fusionlint import cst_parse

    files = sorted(p for d in corpus()["full"] for p in d.rglob("*.py"))
    gc.disable()  # as fusionlint's passes run (a tree has no cycles; the collector would rescan it)
    rows = []
    started = time.process_time()
    texts = [p.read_bytes().decode("utf-8", "replace") for p in files]
    lines = sum(t.count("\n") for t in texts)
    rows.append(("read + decode", len(texts), lines, time.process_time() - started))
    started = time.process_time()
    for text in texts:
        try:
            ast.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            pass
    rows.append(("CPython ast.parse", len(texts), lines, time.process_time() - started))
    sample = texts[:: args.floor_step]
    started = time.process_time()
    for text in sample:
        try:
            cst_parse.parse(text)
        except Exception:  # noqa: BLE001 (a file libcst rejects costs what it cost)
            pass
    rows.append((f"libcst parse (1 file in {args.floor_step})" if args.floor_step > 1 else "libcst parse",
                 len(sample), sum(t.count("\n") for t in sample), time.process_time() - started))
    print("| floor | files | lines | CPU s | lines / CPU-s |")
    print("|---|---|---|---|---|")
    for name, count, n, cpu in rows:
        print(f"| {name} | {count:,} | {n:,} | {cpu:.2f} | {n / cpu:,.0f} |", flush=True)
    return 0


def fraction(full: list[Path], label: str, step: int) -> tuple[Path, list[Path]]:
    """A copy of every ``step``-th file of the corpus (and every __init__.py): its root and directories."""
    if step == 1:
        return CORPUS, full
    root = WORK / f"memory-{label}"
    if not (root / ".complete").exists():
        shutil.rmtree(root, ignore_errors=True)
        every_file = sorted(p.relative_to(CORPUS) for d in full for p in d.rglob("*.py"))
        for i, rel in enumerate(every_file):
            if i % step == 0 or rel.name == "__init__.py":
                (root / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(CORPUS / rel, root / rel)
        (root / "pyproject.toml").write_text(PYPROJECT)
        (root / ".complete").write_text("")
    return root, [root / d.relative_to(CORPUS) for d in full]


def machine() -> str:
    load = os.getloadavg()
    return (f"{platform.node()} {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
            f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} at start")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", nargs="?", choices=["table", "memory", "floors"], default="table")
    parser.add_argument("--anchors-subset", choices=["timm", "full", "none"], default="timm",
                        help="where Fixit and TorchFix run (and fusionlint and Ruff again, to compare): "
                             "timm only (default), the full zoo, or not at all")
    parser.add_argument("--tools", default=None, help="comma-separated subset of: fusionlint, ruff, fixit, torchfix")
    parser.add_argument("--runs", default="cold,first,warm,edit", help="comma-separated: cold, first, warm, edit")
    parser.add_argument("--fractions", default="quarter,half,full", help="memory: which fractions of the zoo")
    parser.add_argument("--jobs", type=int, default=1, help="memory: fusionlint's --jobs (default 1: one process)")
    parser.add_argument("--floor-step", type=int, default=4, help="floors: libcst parses every Nth file (default 4)")
    args = parser.parse_args()
    print(f"# {time.strftime('%Y-%m-%d %H:%M')} · {machine()}")
    print(f"# {subprocess.run([*_fusionlint(), '--version'], capture_output=True, text=True).stdout.strip()}")
    print()
    if args.what == "floors":
        return floors(args)
    return memory(args) if args.what == "memory" else bench(args)


if __name__ == "__main__":
    raise SystemExit(main())
