"""Turn one module's measurement into per-finding verdicts, plus findings for unexplained breaks.

A finding is ``confirmed`` when one of its claimed effects is observed (graph breaks: a break site
on one of the finding's lines; recompiles, kernels, syncs, errors, divergence: the module-level
effect is present), ``not-reproduced`` when the module ran but none of its measurable effects
appeared, and ``unconfirmed`` when nothing could be measured (with the reason).
Break sites that no graph-break finding covers become ``FL900 runtime-graph-break`` findings, and
recompiles that no recompile finding explains become ``FL902 runtime-recompile`` findings, each at
the innermost user frame with the chain of user frames that led there.

When the module fails because of a runtime-error finding that has a safe fix (FL301), the worker
measured it again with those fixes applied in memory (variant ``safe-fixes``); the module's other
findings are judged on that measurement and say so.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Optional

from fusionlint.rule import Effect, Finding, Severity

CONFIRMED, NOT_REPRODUCED, UNCONFIRMED = "confirmed", "not-reproduced", "unconfirmed"
BENIGN_RECOMPILES = 1  # automatic dynamic: the first new shape recompiles once, then stays dynamic
RUNTIME_BREAK_CODE = "FL900"
RUNTIME_BREAK_NAME = "runtime-graph-break"
RUNTIME_RECOMPILE_CODE = "FL902"
RUNTIME_RECOMPILE_NAME = "runtime-recompile"
_GUARD_NAME_RE = re.compile(r"(?:self|L\['[^']+'\])(?:\.[A-Za-z_]\w*)+")  # self.threshold, L['self'].t
_BENIGN_GUARDS = ("size mismatch", "stride mismatch")  # automatic dynamic: one recompile, then dynamic
_RANK = {CONFIRMED: 3, NOT_REPRODUCED: 2, UNCONFIRMED: 1}


def abs_path(path: str, root: Path) -> str:
    p = Path(path)
    return os.path.realpath(p if p.is_absolute() else Path(root) / p)


def _site_file(site) -> Optional[str]:
    return os.path.realpath(site[1]) if site[1] else None


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def verdicts(finding: Finding, m: dict, root: Path, fixed: Optional[dict] = None) -> dict:
    """effect -> {"verdict": confirmed|not-reproduced|unmeasurable, "evidence": str}."""
    out: dict = {}
    path = abs_path(finding.path, root)
    ran = bool(m.get("compiled_ok"))
    compiled_failure = m.get("compiled_error") or "the compiled module did not run"
    cuda = str(m.get("device", "cpu")).startswith("cuda")
    for effect in finding.effects:
        effect = Effect(effect)
        if effect is Effect.GRAPH_BREAK:
            if not ran:
                out[effect.value] = _v("unmeasurable", f"compiled run failed: {compiled_failure}")
                continue
            lines = range(finding.line, finding.end_line + 1)
            hits = [s for s in m.get("break_sites", []) if _site_file(s) == path and s[2] in lines]
            if hits:
                desc = "; ".join(f"{s[0] or 'break'} at line {s[2]} ({s[3]})" for s in hits)
                out[effect.value] = _v(CONFIRMED, f"graph break: {desc}")
            else:
                others = sorted({s[2] for s in m.get("break_sites", []) if _site_file(s) == path})
                extra = f" (breaks at lines {', '.join(map(str, others))})" if others else ""
                out[effect.value] = _v(NOT_REPRODUCED, f"no graph break at line {finding.line}{extra}")
        elif effect is Effect.RECOMPILE:
            if not ran:
                out[effect.value] = _v("unmeasurable", f"compiled run failed: {compiled_failure}")
                continue
            n, hit = int(m.get("recompiles") or 0), bool(m.get("recompile_limit_hit"))
            calls = len(m.get("compiles_per_call") or [])
            lines = range(finding.line, finding.end_line + 1)
            # a failed guard whose value was read on the finding's lines is evidence at the line, even
            # when it is the only recompile (a train/eval switch recompiles exactly once)
            at_line = [
                site for site in recompile_sites(m)
                if site["from_guard"] and any(os.path.realpath(f[0]) == path and f[1] in lines for f in site["frames"])
            ]
            if at_line:
                guard = at_line[0]["guards"][0] if at_line[0]["guards"] else "a guard"
                out[effect.value] = _v(
                    CONFIRMED, f"{_plural(n, 'recompile')} over {_plural(calls, 'call')}; guard `{guard}` failed, read at this line"
                )
            elif hit or n > BENIGN_RECOMPILES:
                tail = ", recompile limit hit" + (", then eager" if m.get("compiled_regions") == 0 else "") if hit else ""
                out[effect.value] = _v(CONFIRMED, f"{_plural(n, 'recompile')} over {_plural(calls, 'call')}{tail}")
            else:
                out[effect.value] = _v(NOT_REPRODUCED, f"{_plural(n, 'recompile')} over {_plural(calls, 'call')}")
        elif effect is Effect.EXTRA_KERNEL:
            if not ran:
                out[effect.value] = _v("unmeasurable", f"compiled run failed: {compiled_failure}")
                continue
            fk = (fixed or {}).get("kernels_compiled") if fixed and fixed.get("compiled_ok") else None
            mine = m.get("kernels_compiled")
            if fk is None or mine is None:
                out[effect.value] = _v("unmeasurable", "no fixed variant to compare kernel counts with")
            elif mine > fk:
                out[effect.value] = _v(CONFIRMED, f"{mine} kernels per compiled forward vs {fk} with the fix")
            else:
                out[effect.value] = _v(NOT_REPRODUCED, f"{mine} kernels per compiled forward, {fk} with the fix")
        elif effect is Effect.HOST_SYNC:
            if not ran:
                out[effect.value] = _v("unmeasurable", f"compiled run failed: {compiled_failure}")
                continue
            n = m.get("host_syncs_compiled")
            if not cuda:
                out[effect.value] = _v(
                    "unmeasurable", f"not measurable on CPU (sync-prone ops per forward: {n if n is not None else '?'})"
                )
            elif n:
                out[effect.value] = _v(CONFIRMED, f"{_plural(n, 'host sync')} per compiled forward ({_detail(m)})")
            else:
                out[effect.value] = _v(NOT_REPRODUCED, "no host sync in the compiled forward")
        elif effect is Effect.RUNTIME_ERROR:
            errs = [e for e in (m.get("eager_error"), m.get("compiled_error")) if e]
            if errs:
                where = "eager" if m.get("eager_error") else "compiled"
                out[effect.value] = _v(CONFIRMED, f"{where} raises {errs[0]}")
            else:
                out[effect.value] = _v(NOT_REPRODUCED, "eager and compiled both run")
        elif effect is Effect.SILENT_DIVERGENCE:
            if m.get("eager_ok") is False and ran:
                out[effect.value] = _v(CONFIRMED, f"eager raises ({m.get('eager_error')}) but compiled runs")
            elif m.get("eager_ok") and ran:
                if m.get("outputs_allclose") is False or m.get("inputs_allclose") is False:
                    what = "outputs" if m.get("outputs_allclose") is False else "inputs after the call"
                    out[effect.value] = _v(CONFIRMED, f"eager and compiled {what} differ")
                else:
                    out[effect.value] = _v(NOT_REPRODUCED, "eager and compiled agree")
            else:
                out[effect.value] = _v("unmeasurable", f"compiled run failed: {compiled_failure}")
    return out


def _v(verdict: str, evidence: str) -> dict:
    return {"verdict": verdict, "evidence": evidence}


def _detail(m: dict) -> str:
    d = (m.get("sync_detail") or {}).get("compiled") or {}
    return ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in d.items())


def status_of(effects: dict) -> tuple[str, Optional[str]]:
    kinds = [e["verdict"] for e in effects.values()]
    if CONFIRMED in kinds:
        return CONFIRMED, None
    if NOT_REPRODUCED in kinds:
        return NOT_REPRODUCED, None
    reasons = "; ".join(e["evidence"] for e in effects.values()) or "no measurable effect"
    return UNCONFIRMED, reasons


def module_numbers(m: dict, worker: dict, fixed: Optional[dict] = None) -> dict:
    """The module-level evidence every finding of the module shares."""
    return {
        "device": m.get("device"),
        "device_name": m.get("device_name"),
        "torch": m.get("torch_version"),
        "example": worker.get("example"),
        "regions": m.get("compiled_regions"),
        "break_sites": len(m.get("break_sites") or []),
        "recompiles": m.get("recompiles"),
        "recompile_limit_hit": m.get("recompile_limit_hit"),
        "compiles_per_call": m.get("compiles_per_call"),
        "kernels": {
            "eager": m.get("kernels_eager"),
            "compiled": m.get("kernels_compiled"),
            "fixed": (fixed or {}).get("kernels_compiled") if fixed else None,
        },
        "syncs": {"method": m.get("sync_method"), "eager": m.get("host_syncs_eager"), "compiled": m.get("host_syncs_compiled")},
        "times_us": {"eager": m.get("eager_us"), "compiled": m.get("compiled_us")},
        "outputs_allclose": m.get("outputs_allclose"),
        "eager_error": m.get("eager_error"),
        "compiled_error": m.get("compiled_error"),
    }


def _failed(m: dict) -> bool:
    return not (m.get("eager_ok") and m.get("compiled_ok"))


def effective(worker: dict, finding: Optional[Finding] = None) -> tuple[dict, Optional[str]]:
    """The measurement to judge ``finding`` (or the module's runtime findings) on, and why it is
    not the module's own: the safe-fix rerun when the module failed because of a finding."""
    m = worker["measurement"]
    safe = (worker.get("variants") or {}).get("safe-fixes") or {}
    if finding is not None and Effect.RUNTIME_ERROR in tuple(Effect(e) for e in finding.effects):
        return m, None
    if _failed(m) and safe.get("measurement"):
        fixes = ", ".join(f"{x['code']} at line {x['line']}" for x in safe.get("fixes") or [])
        return safe["measurement"], (
            f"the module fails because of {fixes or 'a runtime-error finding'}; "
            "confirmed with its safe fix applied in memory"
        )
    return m, None


def failure_note(worker: dict) -> Optional[str]:
    """For the runtime-error findings themselves: the rest was measured with their fix."""
    if not worker.get("ok"):
        return None
    safe = (worker.get("variants") or {}).get("safe-fixes") or {}
    if _failed(worker["measurement"]) and safe.get("measurement"):
        return "the module's other findings were confirmed with this finding's safe fix applied in memory"
    if _failed(worker["measurement"]) and safe.get("error"):
        return f"the rerun with the safe fix failed: {safe['error']}"
    return None


def confirmation_for(finding: Finding, worker: dict, root: Path, label: str) -> dict:
    """The ``Finding.confirmation`` dict for one finding from its module's worker result."""
    if not worker.get("ok"):
        reason = worker.get("reason") or "the module could not be run"
        conf = {"status": UNCONFIRMED, "module": label, "reason": reason, "summary": reason}
        if worker.get("budget"):
            conf["budget"] = True
            conf["summary"] = f"unconfirmed (budget): {reason}"
        if worker.get("hint"):
            conf["hint"] = worker["hint"]
            conf["summary"] = f"{reason} ({worker['hint']})"
        for key in ("device", "torch"):
            if worker.get(key):
                conf[key] = worker[key]
        return conf
    m, note = effective(worker, finding)
    fixed = ((worker.get("variants") or {}).get("fixed") or {}).get("measurement")
    effects = verdicts(finding, m, root, fixed)
    status, reason = status_of(effects)
    lines = range(finding.line, finding.end_line + 1)
    path = abs_path(finding.path, root)
    conf = {"status": status, "module": label, "reason": reason}
    conf.update(module_numbers(m, worker, fixed))
    conf["breaks"] = [
        {"gb": s[0], "line": s[2], "reason": s[3]}
        for s in m.get("break_sites") or []
        if _site_file(s) == path and s[2] in lines
    ]
    conf["effects"] = effects
    conf["summary"] = summary(status, effects, conf)
    note = note or (failure_note(worker) if m is worker["measurement"] else None)
    if note:
        conf["note"] = note
        conf["summary"] = f"{conf['summary']} ({note})"
    return conf


def chain(frames, display) -> list[dict]:
    """User frames as {"path", "line", "function"} (paths as findings show them)."""
    out = []
    for f in frames or []:
        file, line, fn = f[0], f[1], f[2] if len(f) > 2 else None
        shown = display(os.path.realpath(file)) if file else None
        out.append({"path": shown or file, "line": line, "function": fn})
    return out


def chain_text(frames: list[dict]) -> str:
    return " → ".join(f"{f['function'] or '?'} ({Path(str(f['path'])).name}:{f['line']})" for f in frames)


def _columns(lines: list, line: int) -> tuple[int, int]:
    text = lines[line - 1] if lines and 1 <= line <= len(lines) else ""
    col = len(text) - len(text.lstrip()) + 1
    return col, max(col + 1, len(text.rstrip()) + 1)


def summary(status: str, effects: dict, conf: dict) -> str:
    order = {CONFIRMED: 0, NOT_REPRODUCED: 1}
    parts = [e["evidence"] for e in sorted(effects.values(), key=lambda e: order.get(e["verdict"], 2))]
    if conf.get("regions") is not None:
        parts.append(f"{_plural(conf['regions'], 'compiled region')} per forward")
    where = f"{conf.get('device') or '?'}, torch {conf.get('torch') or '?'}"
    return "; ".join(parts) + f" [{where}]"


def runtime_break_findings(
    worker: dict, covered: list[Finding], root: Path, label: str, display, source_lines
) -> list[Finding]:
    """FL900 findings for break sites that no graph-break finding covers.

    ``display(abs_path) -> str | None`` gives the finding path (None: outside the run);
    ``source_lines(abs_path) -> list[str]`` the file's lines (for the column range).
    """
    if not worker.get("ok"):
        return []
    m, note = effective(worker)
    claimed = _claimed_lines(covered, Effect.GRAPH_BREAK, root)
    out = []
    for site in m.get("break_sites") or []:
        gb, file, line, reason = site[:4]
        frames = chain(site[4] if len(site) > 4 else [], display)
        if not file or not line:
            continue
        real = os.path.realpath(file)
        if line in claimed.get(real, set()):
            continue
        shown = display(real)
        if shown is None:
            continue
        col, end_col = _columns(source_lines(real), line)
        tag = f"{gb}: " if gb else ""
        effects = {"graph-break": _v(CONFIRMED, f"graph break: {gb or 'break'} at line {line} ({reason})")}
        conf = {"status": CONFIRMED, "module": label, "reason": None}
        conf.update(module_numbers(m, worker))
        conf["breaks"] = [{"gb": gb, "line": line, "reason": reason}]
        conf["effects"] = effects
        conf["frames"] = frames
        conf["summary"] = summary(CONFIRMED, effects, conf)
        if note:
            conf["note"] = note
        out.append(
            Finding(
                path=shown,
                line=line,
                column=col,
                end_line=line,
                end_column=end_col,
                code=RUNTIME_BREAK_CODE,
                name=RUNTIME_BREAK_NAME,
                message=f"torch.compile breaks the graph here at runtime ({tag}{reason})",
                effects=(Effect.GRAPH_BREAK,),
                severity=Severity.WARNING,
                context=chain_text(frames) or label,
                confirmation=conf,
            )
        )
    return out


def recompile_sites(m: dict, swept: bool = False) -> list[dict]:
    """The recompiles worth reporting, grouped by the place they come from.

    Each: {"file", "line", "guards": [...], "frames": [...], "function": name}. The place is the
    innermost user frame of the failing guard (where the guarded value was read), else the first
    line of the function that recompiled (a guard on an input). The first size/stride mismatch of
    each function is left out: that is automatic dynamic shapes, which recompile once and then
    stay dynamic. ``swept``: the batch sizes were changed by fusionlint's own exercise (for a
    recompile finding), so guards on sizes alone (no attribute, global or stack value) are ours.
    """
    sites: dict[tuple, dict] = {}
    seen_shape: set = set()
    named: dict[tuple, dict] = {}  # (function, a name a guard mentions) -> the site it was read at
    for ev in m.get("recompile_events") or []:
        guard = str(ev.get("guard") or "")
        fn = list(ev.get("function") or [None, None, None]) + [None] * 3
        frames = ev.get("frames") or []
        if any(b in guard for b in _BENIGN_GUARDS):
            if (fn[0], fn[2]) not in seen_shape:
                seen_shape.add((fn[0], fn[2]))
                continue
        names = set(_GUARD_NAME_RE.findall(guard))
        if swept and not names and "___stack" not in guard and "G[" not in guard:
            continue
        # A later guard on the same value often comes without a user frame (torch re-specializes
        # it in a pass: "(_dynamo/output_graph.py in remove_tensorify_specialized_graphargs)"):
        # it belongs where that value was read first.
        earlier = next((named[(fn[0], fn[2], n)] for n in sorted(names) if (fn[0], fn[2], n) in named), None)
        if not frames and earlier is not None:
            if guard and guard not in earlier["guards"]:
                earlier["guards"].append(guard)
            continue
        if frames:
            file, line, name = frames[-1][0], frames[-1][1], frames[-1][2]
        elif fn[0] and fn[1]:
            file, line, name, frames = fn[0], fn[1], fn[2], [[fn[0], fn[1], fn[2]]]
        else:
            continue
        site = sites.setdefault((os.path.realpath(file), line), {
            "file": os.path.realpath(file), "line": int(line), "guards": [], "frames": frames, "function": name,
            "from_guard": bool(ev.get("frames")),
        })
        if guard and guard not in site["guards"]:
            site["guards"].append(guard)
        if frames:
            for n in names:
                named.setdefault((fn[0], fn[2], n), site)
    return list(sites.values())


def runtime_recompile_findings(
    worker: dict, covered: list[Finding], root: Path, label: str, display, source_lines, unit_findings: list[Finding]
) -> list[Finding]:
    """FL902 findings for recompiles that no recompile finding explains.

    Explained: a finding claiming recompiles sits on one of the guard's user frames; or, for a
    recompile with no frame of its own (a guard on an input), the module has any such finding.
    """
    if not worker.get("ok"):
        return []
    m, note = effective(worker)
    claimed = _claimed_lines(covered, Effect.RECOMPILE, root)
    module_claims = any(Effect.RECOMPILE in tuple(Effect(e) for e in f.effects) for f in unit_findings)
    out = []
    for site in recompile_sites(m, swept=worker.get("exercise") == "batch-sweep"):
        frames = site["frames"]
        if any(int(fr[1]) in claimed.get(os.path.realpath(fr[0]), set()) for fr in frames):
            continue
        if not site["from_guard"] and module_claims:
            continue
        shown = display(site["file"])
        if shown is None:
            continue
        col, end_col = _columns(source_lines(site["file"]), site["line"])
        guards = site["guards"]
        what = "; ".join(f"`{g}`" for g in guards[:3]) + (f" and {len(guards) - 3} more" if len(guards) > 3 else "")
        n = int(m.get("recompiles") or 0)
        limit = ", recompile limit hit" if m.get("recompile_limit_hit") else ""
        evidence = f"{_plural(n, 'recompile')} in the module{limit}; failing guard: {what}"
        effects = {"recompile": _v(CONFIRMED, evidence)}
        frames_shown = chain(frames, display)
        conf = {"status": CONFIRMED, "module": label, "reason": None}
        conf.update(module_numbers(m, worker))
        conf["guards"] = guards
        conf["frames"] = frames_shown
        conf["effects"] = effects
        conf["summary"] = summary(CONFIRMED, effects, conf)
        if note:
            conf["note"] = note
        place = "reads a value that changed between calls" if site["from_guard"] else "was called with inputs that changed"
        out.append(
            Finding(
                path=shown,
                line=site["line"],
                column=col,
                end_line=site["line"],
                end_column=end_col,
                code=RUNTIME_RECOMPILE_CODE,
                name=RUNTIME_RECOMPILE_NAME,
                message=f"torch.compile recompiled because this code {place} (guard failed: {what})",
                effects=(Effect.RECOMPILE,),
                severity=Severity.WARNING,
                context=chain_text(frames_shown) or label,
                confirmation=conf,
            )
        )
    return out


def better(a: Optional[dict], b: Optional[dict]) -> Optional[dict]:
    """The more informative of two confirmations (for merging shards)."""
    if a is None:
        return b
    if b is None:
        return a
    return a if _RANK.get(a.get("status"), 0) >= _RANK.get(b.get("status"), 0) else b


def _claimed_lines(findings, effect: Effect, root) -> dict[str, set]:
    """File -> the lines that findings claiming ``effect`` span (a measured site there is explained)."""
    claimed: dict[str, set] = {}
    for f in findings:
        if effect in tuple(Effect(e) for e in f.effects):
            claimed.setdefault(abs_path(f.path, root), set()).update(range(f.line, f.end_line + 1))
    return claimed
