"""Do ``fusionlint.cst_parse`` and ``fusionlint.pyast.parse``, parsing a text in pieces, give the
whole text's trees?

    python bench/split_parse_check.py DIR [DIR ...] [--piece-lines 1] [--jobs 2]

Every ``.py`` file under the directories is parsed whole and in pieces cut as often as the cuts
allow (``--piece-lines 1``: at every candidate definition; no length threshold), by libcst (trees
compared with ``deep_equals`` and the code written back) and by CPython (``ast.dump`` with
positions). Prints one table: files, pieces, files parsed whole instead (the last piece did not
parse, a ``match`` first), files without a cut, files the parser cannot parse, files whose trees
differ (listed below it). Exit status 1 when any differ.
"""

from __future__ import annotations

import argparse
import ast
import multiprocessing
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(HERE))  # this checkout's fusionlint

import libcst as cst  # noqa: E402

from fusionlint import cst_parse, pieces, pyast  # noqa: E402

_PIECE_LINES = 1


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


def main() -> int:
    global _PIECE_LINES
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("roots", nargs="+", type=Path)
    parser.add_argument("--piece-lines", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    _PIECE_LINES = args.piece_lines
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
    return 1 if counts.get("differs") else 0


if __name__ == "__main__":
    raise SystemExit(main())
