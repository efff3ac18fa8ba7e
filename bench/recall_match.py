"""Pure logic of the recall bench: read Dynamo's log records into sites, match sites to findings, score.

Nothing here imports torch or the model packages, so the tests and `recall.py --rescore` can use it.
A *site* is `(path, line)` with `path` relative to site-packages in POSIX form (`timm/models/vit.py`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>\S+)\n(?P<code>[^\n]*)', re.M)
_GB_ID = re.compile(r"/gb/(gb\d{4})\.html")
_RECOMPILE_HEAD = re.compile(r"Recompiling function (?P<func>\S+) in (?P<file>.+):(?P<line>\d+)")
_GUARD_ITEM = re.compile(r"^\s*- (?P<entry>\d+/\d+): (?P<reason>.*)$", re.M)
# a guard's verbose code part ends with `  # <source line>  # <short path>:<line> in <function>`
_GUARD_SOURCE = re.compile(r"#\s(?P<code>.*?)\s+#\s(?P<file>\S+\.py):(?P<line>\d+) in (?P<func>\S+)")

# a finding whose message states the input under which it breaks: FL102's "when `x.dtype == torch.float16`
# holds", FL103's "once `seq_len` is a dynamic size" (see fusionlint/analysis/control_flow.py and
# dynamic_shapes.py); the bench measures each such condition in a pass of its own
_DTYPE_CONDITION = re.compile(r"when `[^`]*\.dtype == torch\.(?P<dtype>float16|half|bfloat16)` holds")
_DYNAMIC_CONDITION = re.compile(r"once `[^`]+`(?:, `[^`]+`)* (?:is|are) a dynamic size")
# FL102's configuration precondition ("when `self.config.x != ...` holds (Dynamo reads the configuration"):
# stated, but no pass measures it (each model would need a configuration of its own)
_CONFIG_CONDITION = re.compile(r"when `[^`]*` holds \(Dynamo reads the configuration")
CONDITIONS = ("float16", "bfloat16", "dynamic")
# a finding after a loop whose every iteration breaks, in the same frame (fusionlint's
# analysis/conditions.py shadowed_condition): its line runs eagerly today; no pass measures it
_EAGER_CONDITION = re.compile(r"not today: Dynamo runs this line eagerly")

BREAK_EFFECTS = frozenset({"graph-break", "host-sync"})
RECOMPILE_EFFECTS = frozenset({"recompile"})


def relative_to_roots(path: str, site_dirs: list[str]) -> str | None:
    """`path` relative to the first site-packages dir that holds it, else None."""
    norm = path.replace("\\", "/")
    for root in site_dirs:
        root = root.rstrip("/") + "/"
        if norm.startswith(root):
            return norm[len(root) :]
    return None


def in_packages(rel: str | None, packages: tuple[str, ...]) -> bool:
    return rel is not None and rel.split("/", 1)[0] in packages


def parse_graph_break(message: str, site_dirs: list[str], packages: tuple[str, ...]) -> dict | None:
    """One `graph_breaks` log record → the break, its site being the innermost frame in `packages`.

    Returns None for records that are not a break report (or name no frame inside the packages)."""
    if "Graph break in user code" not in message:
        return None
    head, _, traceback = message.partition("User code traceback:")
    frames = []
    for m in _FRAME.finditer(traceback):
        rel = relative_to_roots(m["file"], site_dirs)
        frames.append((rel, int(m["line"]), m["func"], m["code"].strip()))
    inside = [f for f in frames if in_packages(f[0], packages)]
    if not inside:
        return None
    rel, line, func, code = inside[-1]
    return {
        "path": rel,
        "line": line,
        "function": func,
        "code": code,
        "reason": _break_reason(head),
        "gb": (m[1] if (m := _GB_ID.search(head)) else None),
    }


def _break_reason(head: str) -> str:
    """The one-line summary Dynamo prints after its generic 'Graph Break Reason:' header."""
    lines = head.splitlines()
    for i, text in enumerate(lines):
        if text.startswith("Graph Break Reason:"):
            for following in lines[i + 1 :]:
                if following.strip():
                    return following.strip()
            return text[len("Graph Break Reason:") :].strip()
    return ""


def parse_recompile(message: str, site_dirs: list[str], packages: tuple[str, ...]) -> list[dict]:
    """One `recompiles` log record → one entry per failed guard.

    `path`/`line` are the guard's source line when Dynamo names one (shortened by torch to a path relative
    to site-packages); `kind` says what sort of cause it is."""
    head = _RECOMPILE_HEAD.search(message)
    if head is None:
        return []
    frame_rel = relative_to_roots(head["file"], site_dirs)
    out = []
    for item in _GUARD_ITEM.finditer(message):
        reason = item["reason"]
        src = _GUARD_SOURCE.search(reason)
        path = line = code = None
        if src is not None:
            path, line, code = src["file"], int(src["line"]), src["code"]
        out.append(
            {
                "entry": item["entry"],  # the compiled entry whose guard failed ("0/1")
                "frame": frame_rel or head["file"],
                "frame_line": int(head["line"]),
                "function": head["func"],
                "guard": reason.split("  #", 1)[0].strip(),
                "path": path,
                "line": line,
                "code": code,
                "kind": recompile_kind(reason, path, packages),
            }
        )
    return out


# `eval Eq(s53, 240) [guard added] <code>  # timm/layers/patch_embed.py:129 in forward (...)`, from the
# `dynamic` log: while compiling, Dynamo fixed a symbolic size to the value it has now (an f-string joining
# it, a Python computation that needs the number). The next size fails the *input's* shape guard
# ("tensor 'x' size mismatch at index 2. expected 240, actual 256"), which names no line of its own.
_SPECIALIZED = re.compile(
    r"eval Eq\((?:(?P<sym>s\d+), (?P<value>-?\d+)|(?P<value2>-?\d+), (?P<sym2>s\d+))\) \[guard added\] "
    r"(?P<code>.*?)\s+#\s(?P<file>\S+\.py):(?P<line>\d+) in (?P<func>\S+)"
)
_SIZE_MISMATCH = re.compile(r"size mismatch at index \d+\. expected (?P<expected>-?\d+), actual")


def parse_specialization(message: str, entry: str, packages: tuple[str, ...]) -> dict | None:
    """One `dynamic` log record → the package line that fixed a size to a constant while compiling ``entry``."""
    m = _SPECIALIZED.search(message)
    if m is None or not in_packages(m["file"], packages):
        return None
    value = m["value"] if m["value"] is not None else m["value2"]
    return {"entry": entry, "value": int(value), "path": m["file"], "line": int(m["line"]), "code": m["code"].strip()}


def attribute_specializations(recompiles: list[dict], specializations: list[dict]) -> list[dict]:
    """Give an input-shape guard failure the line that caused it: the entry that failed was compiled with
    a size fixed to the expected value at that line. Without one, the failure stays an input-shape
    recompile (the first new size of a dimension, which automatic dynamic shapes then makes symbolic).
    When several lines fixed the same value in one entry, the first is taken."""
    fixed: dict[tuple[str, int], dict] = {}
    for s in specializations:
        fixed.setdefault((s["entry"], s["value"]), s)
    out = []
    for rc in recompiles:
        m = _SIZE_MISMATCH.search(rc["guard"]) if rc.get("path") is None else None
        spec = fixed.get((rc.get("entry"), int(m["expected"]))) if m else None
        if spec is not None:
            rc = {**rc, "path": spec["path"], "line": spec["line"], "code": spec["code"], "specialized": True}
        out.append(rc)
    return out


def recompile_kind(reason: str, path: str | None, packages: tuple[str, ...]) -> str:
    """Sort a guard failure: a cause at a line of the model package, or one with no such line."""
    if path is not None and in_packages(path, packages):
        # a guard on a module's `.training` fails once when the model switches mode: the cost of
        # calling .eval(), kept apart from causes a rule could ask the code to change
        return "package-line-mode-switch" if ".training ==" in reason else "package-line"
    if "size mismatch" in reason or "stride mismatch" in reason:
        return "input-shape"
    if "GLOBAL_STATE" in reason or "grad_mode" in reason or "global state" in reason:
        return "global-state"
    if "training" in reason:
        return "training-flag"
    if path is not None:
        return "torch-line"
    return "other"


@dataclass
class Finding:
    path: str
    line: int
    end_line: int
    code: str
    effects: frozenset[str]
    message: str = ""


@dataclass
class Score:
    break_sites: int = 0
    break_exact: int = 0
    break_span: int = 0
    recompile_causes: int = 0
    recompile_exact: int = 0
    recompile_span: int = 0
    executed_break_findings: int = 0
    executed_break_findings_real: int = 0
    executed_recompile_findings: int = 0
    executed_recompile_findings_real: int = 0
    hits: dict = field(default_factory=dict)
    # graph-break findings on executed lines where no break was recorded (what precision counts against)
    unconfirmed: list = field(default_factory=list)
    # recompile findings on executed lines where no failed guard was recorded
    unconfirmed_recompiles: list = field(default_factory=list)
    # rule code -> [recompile findings on executed lines at a recorded guard, all on executed lines]
    recompiles_by_rule: dict = field(default_factory=dict)

    def table(self) -> list[tuple[str, int, int]]:
        return [
            ("break sites found at the exact line", self.break_exact, self.break_sites),
            ("break sites inside a finding's span", self.break_span, self.break_sites),
            ("recompile causes found at the exact line", self.recompile_exact, self.recompile_causes),
            ("recompile causes inside a finding's span", self.recompile_span, self.recompile_causes),
            (
                "precision: graph-break findings on executed lines that are real",
                self.executed_break_findings_real,
                self.executed_break_findings,
            ),
            (
                # Dynamo names only the guards that failed first (an input's size mismatch hides a value
                # guard behind it): a lower bound
                "recompile findings on executed lines where a failed guard was recorded (a lower bound)",
                self.executed_recompile_findings_real,
                self.executed_recompile_findings,
            ),
        ]


def index_findings(findings: list[Finding], effects: frozenset[str]) -> tuple[dict, dict]:
    """(path, start line) → findings, and path → findings, for findings with one of `effects`."""
    by_start: dict[tuple[str, int], list[Finding]] = {}
    by_path: dict[str, list[Finding]] = {}
    for f in findings:
        if f.effects & effects:
            by_start.setdefault((f.path, f.line), []).append(f)
            by_path.setdefault(f.path, []).append(f)
    return by_start, by_path


def match_site(site: tuple[str, int], by_start: dict, by_path: dict) -> tuple[str, list[str]]:
    """'exact' when a finding starts on the site's line, 'span' when a finding's lines
    (line..end_line) cover it, else 'miss'; with the codes of the matching findings."""
    exact = by_start.get(site, [])
    if exact:
        return "exact", sorted({f.code for f in exact})
    spanning = [f for f in by_path.get(site[0], []) if f.line <= site[1] <= f.end_line]
    if spanning:
        return "span", sorted({f.code for f in spanning})
    return "miss", []


def score(
    break_sites: list[tuple[str, int]],
    recompile_causes: list[tuple[str, int]],
    executed: dict[str, set[int]],
    findings: list[Finding],
) -> Score:
    s = Score()
    b_start, b_path = index_findings(findings, BREAK_EFFECTS)
    r_start, r_path = index_findings(findings, RECOMPILE_EFFECTS)
    for site in sorted(set(break_sites)):
        verdict, codes = match_site(site, b_start, b_path)
        s.break_sites += 1
        s.break_exact += verdict == "exact"
        s.break_span += verdict != "miss"
        s.hits[("break", *site)] = (verdict, codes)
    for site in sorted(set(recompile_causes)):
        verdict, codes = match_site(site, r_start, r_path)
        s.recompile_causes += 1
        s.recompile_exact += verdict == "exact"
        s.recompile_span += verdict != "miss"
        s.hits[("recompile", *site)] = (verdict, codes)
    real = set(break_sites)
    guards = set(recompile_causes)
    for f in findings:
        if "recompile" in f.effects and f.line in executed.get(f.path, ()):
            s.executed_recompile_findings += 1
            s.executed_recompile_findings_real += (f.path, f.line) in guards
            by_rule = s.recompiles_by_rule.setdefault(f.code, [0, 0])
            by_rule[0] += (f.path, f.line) in guards
            by_rule[1] += 1
            if (f.path, f.line) not in guards:
                s.unconfirmed_recompiles.append(f)
        if "graph-break" in f.effects and f.line in executed.get(f.path, ()):
            s.executed_break_findings += 1
            s.executed_break_findings_real += (f.path, f.line) in real
            if (f.path, f.line) not in real:
                s.unconfirmed.append(f)
    return s


def stated_condition(message: str) -> str | None:
    """The condition a finding's message states for its break ("float16", "bfloat16", "dynamic": a pass
    measures it; "config", and "eager" for a line that runs eagerly today behind a loop's break: none
    does), or None when it states none."""
    m = _DTYPE_CONDITION.search(message)
    if m is not None:
        return "float16" if m["dtype"] in ("float16", "half") else m["dtype"]
    if _DYNAMIC_CONDITION.search(message):
        return "dynamic"
    if _CONFIG_CONDITION.search(message):
        return "config"
    if _EAGER_CONDITION.search(message):
        return "eager"
    return None


@dataclass
class Conditional:
    """An executed graph-break finding with no break in the plain runs, judged by its condition's pass."""

    finding: Finding
    condition: str | None  # None: the message states no measurable condition
    verdict: str  # "real" (the pass broke at its line), "no break" (it did not), "not measured", "no condition"


def score_conditions(unconfirmed: list[Finding], passes: dict[str, set[tuple[str, int]]]) -> list[Conditional]:
    """Each unconfirmed finding against the break sites of the pass run with its stated condition met."""
    out = []
    for f in sorted(unconfirmed, key=lambda f: (f.path, f.line, f.code)):
        cond = stated_condition(f.message)
        if cond is None:
            verdict = "no condition"
        elif cond not in passes:
            verdict = "not measured"
        else:
            verdict = "real" if (f.path, f.line) in passes[cond] else "no break"
        out.append(Conditional(f, cond, verdict))
    return out


def compress_lines(lines: set[int] | list[int]) -> list[list[int]]:
    """Sorted line numbers as [first, last] runs, to keep the raw JSON small."""
    runs: list[list[int]] = []
    for n in sorted(set(lines)):
        if runs and n == runs[-1][1] + 1:
            runs[-1][1] = n
        else:
            runs.append([n, n])
    return runs


def expand_lines(runs: list[list[int]]) -> set[int]:
    return {n for first, last in runs for n in range(first, last + 1)}
