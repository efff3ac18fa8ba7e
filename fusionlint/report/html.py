"""The confirm pass's evidence report: one self-contained HTML file (inline CSS and SVG, no script,
nothing fetched from the network).

Per module: the numbers (breaks, compiled regions, recompiles, kernels eager vs compiled, syncs,
times), a "staircase" of kernel launches over one forward (eager: many short steps; compiled: a few
fused ones) drawn from profiler events, and the module's source with every finding and every
measured graph-break site marked on its line.
"""

from __future__ import annotations

import datetime as _dt
import html
import os
from collections import defaultdict
from pathlib import Path
from typing import Any, Iterable, Optional

from fusionlint import __version__
from fusionlint.rule import Finding, RunResult

_CSS = """
:root { --ok:#1a7f37; --warn:#9a6700; --bad:#cf222e; --muted:#57606a; --line:#d0d7de; --eager:#bc4c00; --compiled:#0969da; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0; color: #1f2328; background: #f6f8fa; }
header { background: #24292f; color: #fff; padding: 16px 24px; }
header h1 { margin: 0 0 4px; font-size: 20px; }
header p { margin: 0; color: #d0d7de; }
main { padding: 16px 24px; max-width: 1200px; }
.summary { display: flex; gap: 12px; margin: 0 0 16px; flex-wrap: wrap; }
.summary div { background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: 8px 14px; }
.summary b { font-size: 20px; display: block; }
section.module { background: #fff; border: 1px solid var(--line); border-radius: 6px; margin: 0 0 20px; padding: 12px 16px; }
section.module h2 { font-size: 16px; margin: 0 0 6px; font-family: ui-monospace, SFMono-Regular, Menlo, monospace; }
.example, .reason { color: var(--muted); margin: 0 0 8px; }
table.numbers { border-collapse: collapse; margin: 8px 0; }
table.numbers th, table.numbers td { border: 1px solid var(--line); padding: 3px 10px; text-align: left; }
table.numbers th { background: #f6f8fa; font-weight: 600; }
.status { display: inline-block; padding: 0 8px; border-radius: 10px; font-size: 12px; font-weight: 600; color: #fff; }
.status.confirmed { background: var(--bad); }
.status.not-reproduced { background: var(--ok); }
.status.unconfirmed { background: var(--muted); }
figure { margin: 8px 0; }
figcaption { color: var(--muted); font-size: 12px; }
svg.staircase { background: #fff; border: 1px solid var(--line); max-width: 100%; height: auto; }
.callout { border-left: 4px solid var(--bad); background: #ffebe9; padding: 6px 10px; margin: 8px 0; }
table.numbers { max-width: 100%; }
table.numbers td { overflow-wrap: anywhere; }
code.src { font: 12.5px ui-monospace, SFMono-Regular, Menlo, monospace; background: #f6f8fa; padding: 0 4px; white-space: pre-wrap; }
/* Kernel names, paths, guards and break reasons are long unbroken words: they wrap inside their box
   so that the page fits a 700 px window (the module's source scrolls inside its own box instead). */
header p, section.module h2, .example, .reason, .callout, figcaption, ul.loose li, code.src, pre.source .note { overflow-wrap: anywhere; }
@media (max-width: 760px) { main { padding: 10px 8px; } header { padding: 10px 8px; } section.module { padding: 8px; } }
svg.staircase text { font: 11px system-ui, sans-serif; fill: #1f2328; }
svg.staircase .eager { stroke: var(--eager); }
svg.staircase .compiled { stroke: var(--compiled); }
pre.source { margin: 8px 0 0; background: #f6f8fa; border: 1px solid var(--line); border-radius: 6px; padding: 6px 0; overflow-x: auto; font: 12.5px/1.5 ui-monospace, SFMono-Regular, Menlo, monospace; }
pre.source .line { display: block; padding: 0 10px; white-space: pre; }
pre.source .ln { display: inline-block; width: 3.5em; color: var(--muted); user-select: none; }
pre.source .line.finding { background: #fff8c5; }
pre.source .line.break-site { box-shadow: inset 4px 0 0 var(--bad); }
pre.source .note { display: block; white-space: pre-wrap; padding: 2px 10px 4px 4.5em; color: #1f2328; background: #fff8c5; font-family: system-ui, sans-serif; font-size: 12.5px; }
pre.source .note.break { background: #ffebe9; }
pre.source .note .code { font-weight: 700; }
.gap { color: var(--muted); padding: 0 10px; display: block; }
ul.loose { margin: 4px 0; }
"""


def _e(text: Any) -> str:
    return html.escape("" if text is None else str(text), quote=True)


def _fmt(value: Any, suffix: str = "") -> str:
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:g}{suffix}"
    return f"{value}{suffix}"


# ---------------------------------------------------------------------------- staircase
def staircase_svg(timeline: Optional[dict], *, width: int = 640, height: int = 220) -> str:
    """Cumulative kernel launches over one forward's time: one step per launch, per mode."""
    timeline = timeline or {}
    series = [(mode, timeline.get(mode) or []) for mode in ("eager", "compiled")]
    if not any(points for _, points in series):
        return '<p class="reason">No launch timeline (the module did not run in both modes).</p>'
    pad_l, pad_r, pad_t, pad_b = 44, 130, 12, 30  # pad_r: room for the legend ("compiled: 1234")
    w, h = width - pad_l - pad_r, height - pad_t - pad_b
    t_max = max((s + d) for _, pts in series for _, s, d in pts) or 1.0
    n_max = max(len(pts) for _, pts in series) or 1

    def x(t: float) -> float:
        return round(pad_l + w * t / t_max, 1)

    def y(n: float) -> float:
        return round(pad_t + h - h * n / n_max, 1)

    parts = [
        f'<svg class="staircase" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="kernel launches over time, eager vs compiled">',
        f'<line x1="{pad_l}" y1="{pad_t + h}" x2="{pad_l + w}" y2="{pad_t + h}" stroke="#57606a"/>',
        f'<line x1="{pad_l}" y1="{pad_t}" x2="{pad_l}" y2="{pad_t + h}" stroke="#57606a"/>',
        f'<text x="{pad_l + w / 2}" y="{height - 6}" text-anchor="middle">time in one forward (µs, 0–{t_max:.0f})</text>',
        f'<text x="12" y="{pad_t + h / 2}" transform="rotate(-90 12 {pad_t + h / 2})" text-anchor="middle">launches</text>',
        f'<text x="{pad_l - 6}" y="{pad_t + 10}" text-anchor="end">{n_max}</text>',
        f'<text x="{pad_l - 6}" y="{pad_t + h}" text-anchor="end">0</text>',
    ]
    for i, (mode, pts) in enumerate(series):
        coords = [f"{x(0)},{y(0)}"]
        count = 0
        for _name, start, _dur in pts:
            coords.append(f"{x(start)},{y(count)}")
            count += 1
            coords.append(f"{x(start)},{y(count)}")
        end = max((s + d) for _, s, d in pts) if pts else 0
        coords.append(f"{x(end)},{y(count)}")
        parts.append(
            f'<polyline class="{mode}" data-launches="{len(pts)}" fill="none" stroke-width="2" points="{" ".join(coords)}"/>'
        )
        for name, start, dur in pts[:400]:
            parts.append(
                f'<rect class="{mode} launch" x="{x(start)}" y="{pad_t + h + 2 + 5 * i}" width="{max(0.8, x(start + dur) - x(start))}" '
                f'height="4" fill="{"#bc4c00" if mode == "eager" else "#0969da"}" stroke="none"><title>{_e(name)} '
                f'({dur:.1f} µs)</title></rect>'
            )
        ly = pad_t + 14 + 18 * i
        parts.append(f'<line class="{mode}" x1="{pad_l + w + 12}" y1="{ly - 4}" x2="{pad_l + w + 32}" y2="{ly - 4}" stroke-width="2"/>')
        parts.append(f'<text x="{pad_l + w + 36}" y="{ly}">{mode}: {len(pts)}</text>')
    parts.append("</svg>")
    return "".join(parts)


# ---------------------------------------------------------------------------- sections
def _numbers(m: dict, example: Optional[dict]) -> str:
    rows = [
        ("graph-break sites", len(m.get("break_sites") or []) + int(m.get("frame_skips") or 0)),
        ("compiled regions per forward", m.get("compiled_regions")),
        ("compiles per call", ", ".join(map(str, m.get("compiles_per_call") or [])) or None),
        ("recompiles", m.get("recompiles")),
        ("recompile limit hit", m.get("recompile_limit_hit")),
        ("kernels per forward, eager → compiled", f"{_fmt(m.get('kernels_eager'))} → {_fmt(m.get('kernels_compiled'))}"),
        ("compile backend", m.get("backend")),
        (
            "host syncs per forward" + (" (CPU proxy: sync-prone ops)" if m.get("sync_method") == "cpu-proxy" else ""),
            f"{_fmt(m.get('host_syncs_eager'))} → {_fmt(m.get('host_syncs_compiled'))}",
        ),
        ("median µs per forward, eager → compiled", f"{_fmt(m.get('eager_us'))} → {_fmt(m.get('compiled_us'))}"),
        ("eager and compiled agree (allclose)", m.get("outputs_allclose")),
        ("first compiled call", _fmt(m.get("first_call_s"), " s")),
    ]
    if m.get("eager_error"):
        rows.append(("eager raises", m["eager_error"]))
    if m.get("compiled_error"):
        rows.append(("compiled raises", m["compiled_error"]))
    hover = {"kernels per forward, eager → compiled": _kernel_names(m)}
    body = "".join(
        f"<tr><th>{_e(k)}</th><td" + (f' title="{_e(hover[k])}"' if hover.get(k) else "") + f">{_e(_fmt(v))}</td></tr>"
        for k, v in rows
    )
    return f'<table class="numbers">{body}</table>'


def _kernel_names(m: dict) -> str:
    parts = []
    for mode in ("eager", "compiled"):
        names = m.get(f"kernel_names_{mode}") or {}
        if names:
            parts.append(f"{mode}: " + ", ".join(f"{k} ×{v}" for k, v in sorted(names.items(), key=lambda kv: -kv[1])))
    return "\n".join(parts)


def _line_text(path: Optional[str], line: Optional[int]) -> str:
    try:
        lines = Path(path).read_text(encoding="utf-8", errors="replace").splitlines() if path else []
    except OSError:
        return ""
    return lines[line - 1].strip() if line and 1 <= line <= len(lines) else ""


def _where(path: Optional[str], line: Optional[int], root: Path) -> str:
    if not path:
        return "no source location"  # torch gave none (e.g. a guard past the recompile limit)
    try:
        shown = os.path.relpath(os.path.realpath(path), os.path.realpath(root))
    except ValueError:
        shown = str(path)
    return shown if line is None else f"{shown}:{line}"


def _slower_callout(m: dict) -> str:
    """A compiled module slower than eager deserves a warning of its own (a break + sync pattern)."""
    e, c = m.get("eager_us"), m.get("compiled_us")
    if not e or not c or c <= e:
        return ""
    return (
        f'<p class="callout">The compiled module is <b>slower than eager</b>: {c:g} µs vs {e:g} µs per forward '
        f"({e / c:.2f}× eager). Its graph breaks and recompiles below are the usual cause.</p>"
    )


def _recompiles(m: dict, root: Path) -> str:
    events = m.get("recompile_events") or []
    if not events:
        return ""
    items = []
    for ev in events[:16]:
        frames = ev.get("frames") or []
        file, line = (frames[-1][0], frames[-1][1]) if frames else ((ev.get("function") or [None, None])[:2])
        text = _line_text(file, line)
        items.append(
            f"<li>guard <code class=\"src\">{_e(ev.get('guard'))}</code> failed — {_e(_where(file, line, root))}"
            + (f' <code class="src">{_e(text)}</code>' if text else "") + "</li>"
        )
    return f'<p class="reason">recompiles (the guard that failed, and where its value was read):</p><ul class="loose">{"".join(items)}</ul>'


def _kernel_list(m: dict) -> str:
    names = m.get("kernel_names_compiled") or {}
    if not names:
        return ""
    items = "".join(f"<li><code class=\"src\">{_e(k)}</code> ×{_e(v)}</li>" for k, v in sorted(names.items(), key=lambda kv: -kv[1])[:30])
    return f'<details><summary>kernels of one compiled forward ({sum(names.values())})</summary><ul class="loose">{items}</ul></details>'


def _source(path: Optional[str], findings: list[Finding], sites: list, context: int = 3, links: Optional[dict] = None) -> str:
    try:
        lines = Path(path).read_text(encoding="utf-8", errors="replace").splitlines() if path else []
    except OSError:
        lines = []
    if not lines:
        return '<p class="reason">Source not available.</p>'
    notes: dict[int, list[str]] = defaultdict(list)
    marked_findings: set = set()
    for f in findings:
        marked_findings.update(range(f.line, f.end_line + 1))
        status = (f.confirmation or {}).get("status", "")
        badge = f' <span class="status {_e(status)}">{_e(status)}</span>' if status else ""
        evidence = (f.confirmation or {}).get("summary") or ""
        notes[f.line].append(
            f'<span class="note finding-note" data-code="{_e(f.code)}"><span class="code">{_code(f.code, links)}</span> '
            f"{_e(f.message)}{badge}" + (f"<br>{_e(evidence)}" if evidence else "") + "</span>"
        )
    site_lines: set = set()
    for site in sites:
        gb, _file, line, reason = site[:4]
        if line:
            site_lines.add(line)
            notes[line].append(
                f'<span class="note break" data-gb="{_e(gb or "")}">torch graph break {_e(gb or "")}: {_e(reason)}</span>'
            )
    keep: set = set()
    for ln in set(notes) | marked_findings | site_lines:
        keep.update(range(max(1, ln - context), min(len(lines), ln + context) + 1))
    if len(lines) <= 80:
        keep = set(range(1, len(lines) + 1))
    out, prev = [], 0
    for n in sorted(keep):
        if prev and n != prev + 1:
            out.append('<span class="gap">⋮</span>')
        classes = ["line"]
        if n in marked_findings:
            classes.append("finding")
        if n in site_lines:
            classes.append("break-site")
        out.append(f'<span class="{" ".join(classes)}" id="L{n}"><span class="ln">{n}</span>{_e(lines[n - 1])}</span>')
        out.extend(notes.get(n, []))
        prev = n
    return '<pre class="source">' + "".join(out) + "</pre>"


def _code(code: str, links: Optional[dict]) -> str:
    """A rule code, linked to its docs when the ``docs-url`` setting says where they are."""
    url = (links or {}).get(code)
    return f'<a href="{_e(url)}">{_e(code)}</a>' if url else _e(code)


def _module_section(index: int, unit: Any, worker: dict, root: Path, extra: list[Finding], links: Optional[dict] = None) -> str:
    label = unit.label
    findings = list(unit.findings) + [f for f in extra if os.path.realpath(Path(root) / f.path) == os.path.realpath(unit.abs_path)]
    out = [f'<section class="module" id="m{index}" data-label="{_e(label)}">', f"<h2>{_e(label)}</h2>"]
    statuses = sorted({(f.confirmation or {}).get("status", "unconfirmed") for f in findings})
    out.append("<p>" + " ".join(f'<span class="status {_e(s)}">{_e(s)}</span>' for s in statuses) + "</p>")
    example = worker.get("example")
    if example:
        out.append(f'<p class="example">example: {_e(example.get("kind"))} — {_e(example.get("detail"))}</p>')
    if not worker.get("ok"):
        out.append(f'<p class="reason">not run: {_e(worker.get("reason"))}</p>')
        if worker.get("hint"):
            out.append(f'<p class="reason">hint: {_e(worker.get("hint"))}</p>')
        out.append(_source(unit.abs_path, findings, [], links=links))
        out.append("</section>")
        return "".join(out)
    m = worker["measurement"]
    where = f"{m.get('device')} ({m.get('device_name')}), torch {m.get('torch_version')}"
    out.append(f'<p class="example">measured on {_e(where)}</p>')
    out.append(_slower_callout(m))
    out.append(_numbers(m, example))
    safe = (worker.get("variants") or {}).get("safe-fixes") or {}
    if safe.get("measurement"):
        fixes = ", ".join(f"{x['code']} at line {x['line']}" for x in safe.get("fixes") or [])
        out.append(f'<p class="callout">The module fails because of {_e(fixes)}; the rest was measured with its safe fix applied in memory.</p>')
        m = safe["measurement"]
        out.append(_numbers(m, example))
    fixed = ((worker.get("variants") or {}).get("fixed") or {}).get("measurement")
    if fixed:
        out.append(
            f'<p class="example">with the fix applied: {_e(_fmt(fixed.get("kernels_compiled")))} kernels per compiled forward, '
            f'{_e(len(fixed.get("break_sites") or []))} break sites</p>'
        )
    out.append(
        "<figure>" + staircase_svg(m.get("timeline"))
        + "<figcaption>Kernel launches over one forward: each step is one launch "
        "(CPU: inductor C++ kernels and aten ops; CUDA: device kernels). Fused code climbs in few steps.</figcaption></figure>"
    )
    real = os.path.realpath(unit.abs_path)
    sites = [s for s in m.get("break_sites") or [] if s[1] and os.path.realpath(s[1]) == real]
    out.append(_source(unit.abs_path, findings, sites, links=links))
    elsewhere = [s for s in m.get("break_sites") or [] if s not in sites]
    if elsewhere:
        items = "".join(
            f"<li>{_e(s[0] or '')} {_e(_where(s[1], s[2], root))} — {_e(s[3])}"
            + (f' <code class="src">{_e(_line_text(s[1], s[2]))}</code>' if _line_text(s[1], s[2]) else "")
            + (f"<br>via {_e(' → '.join(f'{fr[2]} ({_where(fr[0], fr[1], root)})' for fr in s[4]))}" if len(s) > 4 and s[4] else "")
            + "</li>"
            for s in elsewhere
        )
        out.append(f'<p class="reason">graph breaks in other files:</p><ul class="loose">{items}</ul>')
    out.append(_recompiles(m, root))
    out.append(_kernel_list(m))
    out.append("</section>")
    return "".join(out)


def render_report(result: RunResult, unit_results: Iterable[Any], *, root: Path, docs_url: Optional[str] = None) -> str:
    unit_results = list(unit_results)
    counts: dict[str, int] = defaultdict(int)
    for f in result.findings:
        counts[(f.confirmation or {}).get("status", "not run")] += 1
    torches = sorted(
        {str(ur.worker.get("measurement", {}).get("torch_version")) for ur in unit_results if ur.worker.get("ok")}
    )
    devices = sorted({str(ur.worker.get("measurement", {}).get("device")) for ur in unit_results if ur.worker.get("ok")})
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    head = (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        "<title>fusionlint confirm report</title>"
        f"<style>{_CSS}</style></head><body>"
        f"<header><h1>fusionlint confirm report</h1><p>fusionlint {_e(__version__)} · torch {_e(', '.join(torches) or '–')}"
        f" · device {_e(', '.join(devices) or '–')} · {_e(stamp)}</p></header><main>"
    )
    summary = '<div class="summary" id="summary">' + "".join(
        f'<div class="count" data-status="{_e(k)}"><b>{v}</b>{_e(k)}</div>' for k, v in sorted(counts.items())
    ) + f'<div class="count" data-status="modules"><b>{len(unit_results)}</b>modules run</div></div>'
    # findings the confirm pass added (FL900, FL902) name their module in the confirmation
    labels = {ur.unit.label for ur in unit_results}
    links: dict = {}
    if docs_url:
        from fusionlint.registry import all_rules

        links = {code: rule.help_url(docs_url) for code, rule in all_rules().items()}
    added: dict[str, list[Finding]] = defaultdict(list)
    own = {id(f) for ur in unit_results for f in ur.unit.findings}
    for f in result.findings:
        module = (f.confirmation or {}).get("module")
        if id(f) not in own and module in labels:
            added[module].append(f)
    sections = [
        _module_section(i, ur.unit, ur.worker, root, added.get(ur.unit.label, []), links)
        for i, ur in enumerate(unit_results, 1)
    ]
    covered = own | {id(f) for fs in added.values() for f in fs}
    rest = [f for f in result.findings if id(f) not in covered]
    tail = ""
    if rest:
        items = "".join(
            f"<li>{_e(f.path)}:{f.line} <b>{_e(f.code)}</b> {_e(f.message)}"
            + (f' <span class="status {_e(f.confirmation.get("status"))}">{_e(f.confirmation.get("status"))}</span>'
               f' {_e(f.confirmation.get("summary") or "")}' if f.confirmation else "")
            + "</li>"
            for f in rest
        )
        tail = f'<section class="module" id="other"><h2>Other findings</h2><ul class="loose">{items}</ul></section>'
    if not sections and not rest:
        tail = '<p class="reason">Nothing to confirm: no findings.</p>'
    return head + summary + "".join(sections) + tail + "</main></body></html>\n"


def write_report(path: Path, result: RunResult, unit_results: Iterable[Any], *, root: Path, docs_url: Optional[str] = None) -> None:
    from fusionlint.files import atomic_write

    atomic_write(Path(path), render_report(result, unit_results, root=root, docs_url=docs_url))
