"""The issue's measured reference, reproduced by the confirm pass: compiled vs eager per threshold.

    python bench/threshold_reference.py --device cuda --save       # examples/threshold_reference (H200 size)
    python bench/threshold_reference.py examples/threshold --device cpu            # the small CI size

Runs the static pass and then the confirm pass (one worker, so no module's timing shares the
machine with another's compile; inductor, as ``--report`` does) over the four clamp-threshold
variants and prints, per module: frame compiles over all calls, compiled regions in one forward,
graph-break sites, recompiles, the median eager and compiled forward, and compiled speed as a
multiple of eager. ``--save`` writes the numbers (with date, device and torch version) to
``bench/results/threshold_reference-<device>-<date>.json`` and the HTML evidence report beside it.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(HERE))


def rows(units: list) -> list[dict]:
    out = []
    for ur in units:
        w = ur.worker
        row = {"module": ur.unit.label, "ok": bool(w.get("ok")), "seconds": ur.seconds}
        if not w.get("ok"):
            row["reason"] = w.get("reason")
            out.append(row)
            continue
        m = w["measurement"]
        e, c = m.get("eager_us"), m.get("compiled_us")
        row.update(
            frame_compiles=sum(m.get("compiles_per_call") or []),
            compiles_per_call=m.get("compiles_per_call"),
            compiled_regions_per_forward=m.get("compiled_regions"),
            break_sites=[[Path(s[1] or "?").name, s[2], s[0], s[3]] for s in m.get("break_sites") or []],
            recompiles=m.get("recompiles"),
            recompile_limit_hit=m.get("recompile_limit_hit"),
            host_syncs_eager=m.get("host_syncs_eager"),
            host_syncs_compiled=m.get("host_syncs_compiled"),
            kernels_eager=m.get("kernels_eager"),
            kernels_compiled=m.get("kernels_compiled"),
            eager_ms=round(e / 1000, 3) if e else None,
            compiled_ms=round(c / 1000, 3) if c else None,
            speed_vs_eager=round(e / c, 2) if e and c else None,
            backend=m.get("backend"),
            device_name=m.get("device_name"),
            torch=m.get("torch_version"),
        )
        out.append(row)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="*", default=["examples/threshold_reference"])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--timing-runs", type=int, default=50)
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per module")
    ap.add_argument("--save", action="store_true")
    ap.add_argument("--tag", default="", help="added to the saved files' names (a run split in parts)")
    ap.add_argument("--out-dir", type=Path, default=HERE / "bench" / "results")
    args = ap.parse_args()

    from fusionlint.config import Settings
    from fusionlint.confirm import orchestrate
    from fusionlint.report.html import write_report
    from fusionlint.runner import run

    settings = Settings(root=HERE, confirm={"timing-runs": args.timing_runs})
    result = run([str(HERE / p) for p in args.paths], settings).result
    date = dt.date.today().isoformat()
    stem = "-".join(filter(None, ["threshold_reference", args.device.replace(":", ""), date, args.tag]))
    report = args.out_dir / f"{stem}.html"
    args.out_dir.mkdir(parents=True, exist_ok=True)
    units = orchestrate.confirm_findings(
        result, settings=settings, device=args.device, jobs=1, use_cache=False, timeout=args.timeout,
        report_path=report, progress=lambda line: print(line, file=sys.stderr, flush=True),
    )
    write_report(report, result, units, root=HERE)
    table = rows(units)
    findings = [
        {"path": f.path, "line": f.line, "code": f.code, "status": (f.confirmation or {}).get("status")}
        for f in result.findings
    ]
    head = f"{'module':<45} {'compiles':>8} {'regions':>7} {'breaks':>6} {'recomp':>6} {'eager ms':>9} {'comp ms':>8} {'speed':>6}"
    print(head)
    for r in table:
        if not r["ok"]:
            print(f"{r['module']:<45} not run: {r['reason']}")
            continue
        print(f"{r['module']:<45} {r['frame_compiles']:>8} {r['compiled_regions_per_forward']!s:>7} "
              f"{len(r['break_sites']):>6} {r['recompiles']!s:>6} {r['eager_ms']!s:>9} {r['compiled_ms']!s:>8} "
              f"{(str(r['speed_vs_eager']) + 'x') if r['speed_vs_eager'] else '-':>6}")
    for f in findings:
        print(f"finding {f['path']}:{f['line']} {f['code']} {f['status']}")
    doc = {"date": date, "paths": args.paths, "device": args.device, "timing_runs": args.timing_runs,
           "modules": table, "findings": findings, "report": report.name}
    if args.save:
        dest = args.out_dir / f"{stem}.json"
        dest.write_text(json.dumps(doc, indent=2) + "\n")
        print(f"wrote {dest} and {report}")


if __name__ == "__main__":
    main()
