#!/usr/bin/env python3
"""Which of torch's graph-break ids fusionlint covers: writes docs/graph-break-coverage.md.

  python scripts/gb_coverage.py            # (re)write docs/graph-break-coverage.md
  python scripts/gb_coverage.py --check    # exit 1 when the page is stale or an id is unclassified
  python scripts/gb_coverage.py --registry PATH   # another torch's graph_break_registry.json

Three sources, nothing typed into the page by hand:
- torch's own registry, ``torch/_dynamo/graph_break_registry.json`` of the installed torch, found
  with ``importlib.util.find_spec`` (which locates the package without importing it: the registry is
  plain JSON and torch's import costs seconds);
- each rule's ``gb_ids`` (fusionlint's rules never import torch);
- ``docs/gb-classification.toml``: the hand classification of every id no rule covers.

Every id of the registry must be covered by a rule or classified exactly once, so a newer torch's
new ids show up as "unclassified" (``--check`` and tests/test_gb_coverage.py fail until they are).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parent.parent
CLASSIFICATION = ROOT / "docs" / "gb-classification.toml"
PAGE = ROOT / "docs" / "graph-break-coverage.md"
STATUSES = ("visible", "not-visible")


@dataclass(frozen=True)
class Entry:
    gb_id: str
    gb_type: str
    explanation: str


@dataclass(frozen=True)
class Row:
    entry: Entry
    verdict: str  # "covered" | "visible" | "not-visible"
    detail: str  # rule codes/names, or the reason class


def registry_path() -> Optional[Path]:
    """The installed torch's graph-break registry, or None when torch is not installed."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.origin:
        return None
    return Path(spec.origin).parent / "_dynamo" / "graph_break_registry.json"


def torch_version() -> Optional[str]:
    """The installed torch's version from its package metadata (no import)."""
    from importlib import metadata

    try:
        return metadata.version("torch")
    except metadata.PackageNotFoundError:
        return None


def load_registry(path: Path) -> dict[str, Entry]:
    """id -> Entry. The registry maps each id to a list of variants (one call site may have been
    reworded across versions); the first is the current wording."""
    raw = json.loads(path.read_text(encoding="utf-8"))
    out = {}
    for gb_id, variants in raw.items():
        first = variants[0] if isinstance(variants, list) and variants else {}
        out[gb_id] = Entry(gb_id, " ".join(str(first.get("Gb_type", "")).split()), " ".join(str(first.get("Explanation", "")).split()))
    return out


def rule_coverage() -> dict[str, list[str]]:
    """id -> ["FL105 call-to-compiler-disabled", ...] from every rule's ``gb_ids``."""
    sys.path.insert(0, str(ROOT))
    from fusionlint.registry import all_rules

    out: dict[str, list[str]] = {}
    for code, rule in all_rules().items():
        for gb_id in rule.gb_ids:
            out.setdefault(gb_id, []).append(f"{code} {rule.name}")
    return out


def load_classification(path: Path = CLASSIFICATION) -> tuple[dict[str, tuple[str, str, str]], list[str]]:
    """(id -> (class, status, reason), problems) from the TOML file; a ``[notes]`` entry (what was
    measured for that id) is appended to its reason."""
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    found: dict[str, tuple[str, str, str]] = {}
    problems = []
    notes = data.get("notes", {})
    for name, cls in data.get("classes", {}).items():
        status, reason = cls.get("status"), cls.get("reason", "")
        if status not in STATUSES:
            problems.append(f"class {name}: status must be one of {STATUSES}, not {status!r}")
        for gb_id in cls.get("ids", []):
            if gb_id in found:
                problems.append(f"{gb_id} is classified twice: {found[gb_id][0]} and {name}")
            found[gb_id] = (name, status, f"{reason}; {notes[gb_id]}" if gb_id in notes else reason)
    for gb_id in sorted(set(notes) - set(found)):
        problems.append(f"note for {gb_id}, which is not classified")
    return found, problems


def coverage(
    registry: dict[str, Entry], rules: dict[str, list[str]], classified: dict[str, tuple[str, str, str]]
) -> tuple[list[Row], list[str]]:
    """One Row per registry id, and the problems: unclassified, classified although covered, unknown."""
    rows, problems = [], []
    for gb_id, entry in registry.items():
        if gb_id in rules:
            rows.append(Row(entry, "covered", ", ".join(rules[gb_id])))
            if gb_id in classified:
                problems.append(f"{gb_id} is covered by {', '.join(rules[gb_id])}: remove it from {CLASSIFICATION.name}")
        elif gb_id in classified:
            _name, status, reason = classified[gb_id]
            rows.append(Row(entry, status, reason))
        else:
            problems.append(f"{gb_id} ({entry.gb_type}) is unclassified: add it to {CLASSIFICATION.name}")
    for gb_id in sorted(set(classified) - set(registry)):
        problems.append(f"{gb_id} is classified but not in the registry")
    for gb_id in sorted(set(rules) - set(registry)):
        problems.append(f"{gb_id} is named by {', '.join(rules[gb_id])} but not in the registry")
    return rows, problems


def _cell(text: str, limit: int = 110) -> str:
    text = text.replace("|", "\\|").replace("`", "'")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def render(rows: list[Row], version: Optional[str]) -> str:
    covered = [r for r in rows if r.verdict == "covered"]
    visible = [r for r in rows if r.verdict == "visible"]
    hidden = [r for r in rows if r.verdict == "not-visible"]
    out = [
        "# Graph-break coverage",
        "",
        f"Every graph-break id in torch {version or '(unknown version)'}'s registry "
        "(`torch/_dynamo/graph_break_registry.json`) and what fusionlint does about it. Generated by "
        "`python scripts/gb_coverage.py` from the registry, the rules' `gb_ids` and the hand "
        "classification in [`gb-classification.toml`](gb-classification.toml); do not edit by hand.",
        "",
        "A rule covers an id when its fixture (or its docs' measurements) showed that id on torch 2.13 CPU; "
        "coverage is of the forms the rule's docs list, not of every way the id can arise (GB0007 "
        "\"call to a skipped function\" has countless callers).",
        "",
        "| verdict | ids |",
        "|---|---|",
        f"| covered by a rule | {len(covered)} |",
        f"| statically visible, not yet covered | {len(visible)} |",
        f"| not statically visible | {len(hidden)} |",
        f"| **all** | **{len(rows)}** |",
        "",
    ]
    reasons: dict[str, int] = {}
    for r in hidden:
        reasons[r.detail] = reasons.get(r.detail, 0) + 1
    out += ["Not statically visible, by reason:", "", "| reason | ids |", "|---|---|"]
    out += [f"| {_cell(reason, 200)} | {n} |" for reason, n in sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0]))]
    out.append("")

    def table(title: str, selected: list[Row], head: str) -> None:
        out.extend([f"## {title}", "", f"| id | Gb_type | {head} |", "|---|---|---|"])
        for r in sorted(selected, key=lambda r: r.entry.gb_id):
            out.append(f"| {r.entry.gb_id} | {_cell(r.entry.gb_type)} | {_cell(r.detail, 200)} |")
        out.append("")

    table("Covered by a rule", covered, "rule")
    table("Statically visible, not yet covered", visible, "status")
    table("Not statically visible", hidden, "reason")
    return "\n".join(out)


def build(registry_file: Optional[Path] = None) -> tuple[str, list[str]]:
    path = registry_file or registry_path()
    if path is None:
        raise SystemExit("gb_coverage: torch is not installed here; pass --registry PATH")
    if not path.is_file():
        raise SystemExit(f"gb_coverage: no graph-break registry at {path}")
    classified, problems = load_classification()
    rows, more = coverage(load_registry(path), rule_coverage(), classified)
    version = torch_version() if registry_file is None else None
    return render(rows, version) + "\n", problems + more


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 when the page is stale or ids are unclassified")
    parser.add_argument("--registry", type=Path, help="graph_break_registry.json to read instead of the installed torch's")
    args = parser.parse_args(argv)
    text, problems = build(args.registry)
    for p in problems:
        print(f"gb_coverage: {p}", file=sys.stderr)
    if args.check:
        stale = not PAGE.is_file() or PAGE.read_text(encoding="utf-8") != text
        if stale:
            print(f"gb_coverage: {PAGE.relative_to(ROOT)} is stale: run python scripts/gb_coverage.py", file=sys.stderr)
        return 1 if (stale or problems) else 0
    PAGE.write_text(text, encoding="utf-8")
    print(f"wrote {PAGE.relative_to(ROOT)}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
