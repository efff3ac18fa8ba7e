"""Do ``fusionlint.cst_parse`` and ``fusionlint.pyast.parse``, parsing a text in pieces, give the
whole text's trees?

    python bench/split_parse_check.py DIR [DIR ...] [--piece-lines 1] [--jobs 2] [--mutants K --seed S]

Every ``.py`` file under the directories is parsed whole and in pieces cut as often as the cuts
allow (``--piece-lines 1``: at every candidate definition; no length threshold), by libcst (trees
compared with ``deep_equals`` and the code written back) and by CPython (``ast.dump`` with
positions). Prints one table: files, pieces, files parsed whole instead (the last piece did not
parse, a ``match`` first), files without a cut, files the parser cannot parse, files whose trees
differ (listed below it). Exit status 1 when any differ.

``--mutants K``: also K broken copies of each file (a line deleted, repeated, indented or dedented by
four spaces, or a line that does not parse inserted), each parsed by ``fusionlint.cst_parse.parse``
and ``fusionlint.pyast.parse`` with a cut at every candidate: each must raise as the whole text's
parse raises, or give its tree.
"""

from __future__ import annotations

import argparse
import ast
import multiprocessing
import random
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(HERE))  # this checkout's fusionlint

import libcst as cst  # noqa: E402

from fusionlint import cst_parse, pieces, pyast  # noqa: E402

_PIECE_LINES = 1
_MUTANTS = 0
_SEED = 0


def _check(path: Path) -> tuple[str, str, int]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return str(path), "unreadable", 0
    try:
        whole = cst.parse_module(text)
        tree = ast.dump(compile(text, str(path), "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True), include_attributes=True)
    except Exception:
        return str(path), "cannot parse", 0
    cuts = pieces.cuts(text, _PIECE_LINES, 0)
    if not cuts:
        return str(path), "no cut", 0
    ours = cst_parse._in_pieces(text, cuts)
    our_tree = pyast._in_pieces(text, cuts, str(path))
    if ours is None or our_tree is None:
        return str(path), "whole", 0
    if ours.code != text or not ours.deep_equals(whole) or ast.dump(our_tree, include_attributes=True) != tree:
        return str(path), "differs", len(cuts) + 1
    return str(path), "same", len(cuts) + 1


def _mutant(text: str, rng: random.Random) -> str:
    lines = text.split("\n")
    i = rng.randrange(len(lines))
    how = rng.randrange(5)
    if how == 0:
        del lines[i]
    elif how == 1:
        lines.insert(i, lines[i])
    elif how == 2:
        lines[i] = "    " + lines[i]
    elif how == 3:
        lines[i] = lines[i][4:] if lines[i].startswith("    ") else lines[i]
    else:
        lines.insert(i, rng.choice(["def broken(:", ")", "    return", '"""', "class", "@"]))
    return "\n".join(lines)


def _outcome_cst(parse, text: str):
    try:
        return parse(text)
    except cst.ParserSyntaxError:
        return "syntax error"
    except RecursionError:
        return "recursion"


def _outcome_ast(parse, text: str):
    try:
        return ast.dump(parse(text), include_attributes=True)
    except SyntaxError as exc:
        return ("syntax error", exc.msg, exc.lineno, exc.offset)
    except (ValueError, MemoryError, RecursionError) as exc:
        return type(exc).__name__


def _check_mutants(path: Path) -> tuple[str, int, int]:
    """(path, mutants, mutants whose outcome differs)"""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return str(path), 0, 0
    rng = random.Random(f"{_SEED}:{path.name}:{len(text)}")
    differ = 0
    saved = (pieces.SPLIT_LINES, pieces.PIECE_LINES)
    for _ in range(_MUTANTS):
        broken = _mutant(text, rng)
        whole_cst = _outcome_cst(cst.parse_module, broken)
        whole_ast = _outcome_ast(lambda t: compile(t, "f.py", "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True), broken)
        pieces.SPLIT_LINES, pieces.PIECE_LINES = 0, _PIECE_LINES
        try:
            ours_cst = _outcome_cst(cst_parse.parse, broken)
            ours_ast = _outcome_ast(lambda t: pyast.parse(t, "f.py"), broken)
        finally:
            pieces.SPLIT_LINES, pieces.PIECE_LINES = saved
        same_cst = (ours_cst == whole_cst if isinstance(whole_cst, str) or isinstance(ours_cst, str)
                    else ours_cst.deep_equals(whole_cst) and ours_cst.code == broken)
        if not same_cst or ours_ast != whole_ast:
            differ += 1
    return str(path), _MUTANTS, differ


def main() -> int:
    global _PIECE_LINES, _MUTANTS, _SEED
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("roots", nargs="+", type=Path)
    parser.add_argument("--piece-lines", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--mutants", type=int, default=0)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    _PIECE_LINES = args.piece_lines
    _MUTANTS, _SEED = args.mutants, args.seed
    files = sorted({p for r in args.roots for p in (r.rglob("*.py") if r.is_dir() else [r])})
    with multiprocessing.get_context("fork").Pool(args.jobs) as pool:
        results = pool.map(_check, files, chunksize=8)
    counts: dict[str, int] = {}
    for _, outcome, _ in results:
        counts[outcome] = counts.get(outcome, 0) + 1
    print("| files | pieces | same | parsed whole instead | no cut | cannot parse | unreadable | differ |")
    print("|---|---|---|---|---|---|---|---|")
    print(f"| {len(files):,} | {sum(n for _, _, n in results):,} | {counts.get('same', 0):,} | {counts.get('whole', 0):,} | "
          f"{counts.get('no cut', 0):,} | {counts.get('cannot parse', 0):,} | {counts.get('unreadable', 0):,} | "
          f"{counts.get('differs', 0):,} |")
    for path, outcome, _ in results:
        if outcome in ("differs", "whole"):
            print(f"{outcome}: {path}")
    mutants_differ = 0
    if _MUTANTS:
        with multiprocessing.get_context("fork").Pool(args.jobs) as pool:
            done = pool.map(_check_mutants, files, chunksize=8)
        mutants_differ = sum(d for _, _, d in done)
        print(f"\nbroken copies (seed {_SEED}): {sum(n for _, n, _ in done):,}, outcome differs from the whole parse: {mutants_differ:,}")
        for path, _, d in done:
            if d:
                print(f"mutants differ: {path} ({d})")
    return 1 if counts.get("differs") or mutants_differ else 0


if __name__ == "__main__":
    raise SystemExit(main())
