#!/usr/bin/env python3
"""Measure every rule fixture (bad.py and good.py) on a device and turn the results into
docs/gpu-evidence.md.

  python scripts/gpu_evidence.py run --device cuda --out DIR [--jobs N] [--timing-runs 20]
      measures fixtures/*/{bad,good}.py with fusionlint.confirm.measure (eager vs torch.compile)
      and writes DIR/measure-<device>.json (needs torch; not libcst: runs on a bare GPU box)
  python scripts/gpu_evidence.py render DIR/measure-cuda.json [--confirm confirm.json]
      [--cpu measure-cpu.json] [-o docs/gpu-evidence.md]
      writes the markdown table; verdicts use each rule's declared effects (needs fusionlint's deps)

Only numbers from the JSON files go into the markdown: nothing here is typed in by hand.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.util
import json
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
_DIR_RE = re.compile(r"^FL\d{3}_\w+$")
BENIGN_RECOMPILES = 1


def fixture_dirs(only: list[str] | None = None) -> list[Path]:
    dirs = sorted(
        d for d in FIXTURES.iterdir() if d.is_dir() and _DIR_RE.match(d.name) and (d / "bad.py").is_file() and (d / "good.py").is_file()
    )
    if only:
        dirs = [d for d in dirs if any(d.name.startswith(o) for o in only)]
    return dirs


# ---------------------------------------------------------------------------- run
def _load(path: Path):
    name = f"_gpu_evidence_{path.parent.name}_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def measure_dirs(dirs: list[Path], device: str, timing_runs: int) -> dict:
    sys.path.insert(0, str(ROOT))
    import torch

    from fusionlint.confirm.measure import isolated_torch_config, measure, measurement_to_dict

    if device == "cpu":
        torch.set_num_threads(1)
        import torch._inductor.config as ic

        ic.compile_threads = 1
    out: dict = {}
    for d in dirs:
        entry: dict = {}
        for kind in ("bad", "good"):
            path = d / f"{kind}.py"
            t0 = time.perf_counter()
            try:
                with isolated_torch_config():
                    mod = _load(path)
                    m = measure(
                        mod.Model,
                        mod.example_inputs,
                        device=device,
                        exercise=getattr(mod, "exercise", None),
                        user_files=[str(path)],
                        timing_runs=timing_runs,
                        grad=bool(getattr(mod, "GRAD", False)),
                    )
                rec = measurement_to_dict(m)
                rec["cpu_unobservable"] = dict(getattr(mod, "CPU_UNOBSERVABLE", {}) or {})
            except Exception as e:  # a fixture that cannot even be imported
                rec = {"harness_error": f"{type(e).__name__}: {e}"[:300]}
            rec["wall_s"] = round(time.perf_counter() - t0, 2)
            rec.pop("timeline", None)
            entry[kind] = rec
            print(f"{d.name}/{kind}.py: {rec.get('wall_s')} s", file=sys.stderr, flush=True)
        out[d.name] = entry
        if device.startswith("cuda"):
            torch.cuda.empty_cache()
    return out


def cmd_run(args) -> int:
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    dirs = fixture_dirs(args.only.split(",") if args.only else None)
    if args.part:
        k, n = (int(x) for x in args.part.split("/"))
        dirs = [d for i, d in enumerate(dirs) if i % n == k - 1]
        result = measure_dirs(dirs, args.device, args.timing_runs)
        Path(args.part_out).write_text(json.dumps(result))
        return 0
    t0 = time.perf_counter()
    jobs = max(1, args.jobs)
    fixtures: dict = {}
    if jobs == 1:
        fixtures = measure_dirs(dirs, args.device, args.timing_runs)
    else:
        procs = []
        for k in range(1, jobs + 1):
            part_out = out_dir / f".part-{k}.json"
            cmd = [sys.executable, __file__, "run", "--device", args.device, "--out", str(out_dir), "--part", f"{k}/{jobs}",
                   "--part-out", str(part_out), "--timing-runs", str(args.timing_runs)]
            if args.only:
                cmd += ["--only", args.only]
            procs.append((subprocess.Popen(cmd), part_out))
        for proc, part_out in procs:
            proc.wait()
            if part_out.is_file():
                fixtures.update(json.loads(part_out.read_text()))
                part_out.unlink()
            else:
                print(f"part {part_out.name} failed (exit {proc.returncode})", file=sys.stderr)
    import torch

    doc = {
        "torch": torch.__version__,
        "device": args.device,
        "device_name": torch.cuda.get_device_name(0) if args.device.startswith("cuda") else platform.processor() or "cpu",
        "python": platform.python_version(),
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "timing_runs": args.timing_runs,
        "wall_s": round(time.perf_counter() - t0, 1),
        "fixtures": dict(sorted(fixtures.items())),
    }
    dev = "cuda" if args.device.startswith("cuda") else "cpu"
    path = out_dir / f"measure-{dev}.json"
    path.write_text(json.dumps(doc, indent=1))
    print(f"wrote {path} ({len(fixtures)} fixtures, {doc['wall_s']} s)", file=sys.stderr)
    return 0


# ---------------------------------------------------------------------------- render
def _observed(effect: str, m: dict, other: dict | None, path_name: str) -> bool | None:
    """Is ``effect`` present in measurement ``m``? (extra-kernel compares with ``other``)"""
    if m.get("harness_error"):
        return None
    ran = bool(m.get("compiled_ok"))
    if effect == "graph-break":
        return bool(m.get("break_sites") or m.get("other_break_sites") or m.get("frame_skips")) if ran else None
    if effect == "recompile":
        return (int(m.get("recompiles") or 0) > BENIGN_RECOMPILES or bool(m.get("recompile_limit_hit"))) if ran else None
    if effect == "extra-kernel":
        if not ran or other is None or other.get("kernels_compiled") is None or m.get("kernels_compiled") is None:
            return None
        return m["kernels_compiled"] > other["kernels_compiled"]
    if effect == "host-sync":
        return bool(m.get("host_syncs_compiled")) if ran else None
    if effect == "runtime-error":
        return not (m.get("eager_ok") and m.get("compiled_ok"))
    if effect == "silent-divergence":
        if m.get("eager_ok") is False and ran:
            return True
        if m.get("eager_ok") and ran:
            return m.get("outputs_allclose") is False or m.get("inputs_allclose") is False
        return None
    return None


def _cell(v) -> str:
    if v is None:
        return "–"
    if isinstance(v, bool):
        return "yes" if v else "no"
    return str(v)


def _sync_cell(m: dict) -> str:
    d = (m.get("sync_detail") or {}).get("compiled") or {}
    if m.get("sync_method") == "cuda":
        return (f"{_cell(m.get('host_syncs_compiled'))} ({d.get('sync_debug_warnings', '–')} warn, "
                f"{d.get('dtoh_copies', '–')} DtoH, {d.get('synchronize_calls', '–')} sync)")
    return f"{_cell(m.get('host_syncs_compiled'))} (CPU proxy)"


def _row(name: str, kind: str, m: dict) -> str:
    if m.get("harness_error"):
        return f"| {name} | {kind} | harness error: {m['harness_error']} |" + " |" * 8
    sites = [f"{s[0] or '?'}@{s[2]}" for s in m.get("break_sites") or []]
    sites += [f"{s[0] or '?'}@{Path(s[1]).name if s[1] else '?'}:{s[2]}" for s in m.get("other_break_sites") or []]
    if m.get("frame_skips"):
        sites.append(f"{m['frame_skips']} frame skip")
    err = m.get("eager_error") and "eager: " + m["eager_error"] or m.get("compiled_error") and "compiled: " + m["compiled_error"]
    ok = "error" if err else ("yes" if m.get("outputs_allclose") and m.get("inputs_allclose") else "**no**")
    rec = f"{m.get('recompiles', 0)}" + (", **limit**" if m.get("recompile_limit_hit") else "")
    times = f"{_cell(m.get('eager_us'))} → {_cell(m.get('compiled_us'))}"
    err_txt = f" ({err[:90]})" if err else ""
    return (
        f"| {name} | {kind} | {', '.join(sites) or ('0' if m.get('compiled_ok') else '–')} | {_cell(m.get('compiled_regions'))} | {rec} | "
        f"{_cell(m.get('kernels_eager'))} → {_cell(m.get('kernels_compiled'))} | {_sync_cell(m)} | {ok}{err_txt} | {times} |"
    )


def _rules() -> dict:
    sys.path.insert(0, str(ROOT))
    from fusionlint.registry import all_rules

    return all_rules()


def _confirm_statuses(path: str | None) -> dict:
    if not path:
        return {}
    doc = json.loads(Path(path).read_text())
    out: dict = {}
    for f in doc.get("findings", []):
        parts = Path(f["path"]).parts
        if len(parts) >= 2 and _DIR_RE.match(parts[-2]):
            key = (parts[-2], parts[-1])
            conf = f.get("confirmation") or {}
            out.setdefault(key, []).append((f["code"], f["line"], conf.get("status"), conf.get("summary") or conf.get("reason")))
    return out


def render(doc: dict, rules: dict, confirm: dict, cpu: dict | None, notes_text: str = "") -> str:
    dev = "CUDA" if str(doc["device"]).startswith("cuda") else "CPU"
    lines = [
        f"# {'GPU' if dev == 'CUDA' else 'CPU'} evidence: every rule fixture measured on {dev}",
        "",
        f"Generated by `scripts/gpu_evidence.py` from `measure-{dev.lower()}.json`. Measured on **{doc['device_name']}** "
        f"with **torch {doc['torch']}**, Python {doc['python']}, {doc['date']} "
        f"({len(doc['fixtures'])} fixtures, {doc['wall_s']} s wall). Each `bad.py` and `good.py` was run eager and "
        "under `torch.compile` (default backend) by `fusionlint.confirm.measure.measure` with the fixture's "
        f"`exercise` when it has one; times are medians of {doc['timing_runs']} calls after warm-up (tiny shapes: "
        "they show overhead, not speed-ups).",
        "",
        "Columns: **breaks** = distinct graph-break sites (GB id @ line in the fixture file); **regions** = "
        "\"Torch-Compiled Region\" events in one forward after the exercise (0 = the frame fell back to eager); "
        "**recompiles** = compilation-metrics entries with a recompile reason, **limit** = `recompile_limit` hit; "
        "**kernels** = device kernels per forward, eager → compiled (Memcpy/Memset excluded); **syncs** = host syncs "
        "in one compiled forward: the largest of sync-debug warnings, DtoH copies and synchronize calls beyond the "
        "harness's own; **allclose** = eager vs compiled outputs and inputs after the call.",
        "",
    ]
    # verdicts
    lines += [f"## Verdicts (claimed effect present in bad.py and absent in good.py, on {dev})", "",
              f"| fixture | rule effects | {dev} verdict per effect | confirm pass "
              f"(`check fixtures/ {'--confirm-on-gpu' if dev == 'CUDA' else '--confirm --device cpu'}`) |",
              "|---|---|---|---|"]
    for name, entry in doc["fixtures"].items():
        code = name.split("_", 1)[0]
        rule = rules.get(code)
        effects = [e.value for e in rule.effects] if rule else []
        bad, good = entry.get("bad", {}), entry.get("good", {})
        verdicts = []
        for eff in effects:
            on_bad = _observed(eff, bad, good, "bad.py")
            on_good = _observed(eff, good, bad, "good.py") if eff != "extra-kernel" else False
            if on_bad is None:
                why = bad.get("harness_error") or bad.get("compiled_error") or bad.get("eager_error") or ""
                v = "not measurable" + (f" ({why[:80]})" if why else "")
            elif on_bad and not on_good:
                v = "✔ shown"
            elif on_bad and on_good:
                v = "✘ also in good.py"
            else:
                v = "✘ not shown"
            verdicts.append(f"{eff}: {v}")
        conf = confirm.get((name, "bad.py"), [])
        mine = [c for c in conf if c[0] == code]
        conf_txt = "; ".join(f"{c[0]}:{c[1]} {c[2]}" for c in mine) or ("no finding" if confirm else "–")
        others = [c for c in conf if c[0] != code]
        if others:
            conf_txt += " (also " + "; ".join(f"{c[0]}:{c[1]} {c[2]}" for c in others) + ")"
        good_conf = confirm.get((name, "good.py"), [])
        if good_conf:
            conf_txt += " · good.py: " + "; ".join(f"{c[0]}:{c[1]} {c[2]}" for c in good_conf)
        lines.append(f"| {name} | {', '.join(effects) or '?'} | {'<br>'.join(verdicts)} | {conf_txt} |")
    lines += ["", f"## Measurements ({dev})", "",
              "| fixture | file | breaks | regions | recompiles | kernels e→c | syncs | allclose | µs e→c |",
              "|---|---|---|---|---|---|---|---|---|"]
    for name, entry in doc["fixtures"].items():
        for kind in ("bad", "good"):
            lines.append(_row(name, kind, entry.get(kind, {})))
    if cpu:
        lines += ["", f"## The same fixtures on CPU (torch {cpu['torch']}, {cpu['device_name']}), for comparison", "",
                  "Syncs on CPU are a proxy: sync-prone aten ops (`_local_scalar_dense`, `nonzero`, ...) outside guard "
                  "evaluation; `.tolist()` and `.cpu()` do not show up in it.", "",
                  "| fixture | file | breaks | regions | recompiles | kernels e→c | syncs | allclose | µs e→c |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for name, entry in cpu["fixtures"].items():
            for kind in ("bad", "good"):
                lines.append(_row(name, kind, entry.get(kind, {})))
    notes = []
    for name, entry in doc["fixtures"].items():
        unobs = (entry.get("bad") or {}).get("cpu_unobservable") or {}
        for eff, why in unobs.items():
            notes.append(f"- {name}: {eff} is declared CPU-unobservable: {why}")
    if notes:
        lines += ["", "## Effects the CPU cannot show (from the fixtures' `CPU_UNOBSERVABLE`)", ""] + notes
    if notes_text:
        lines += ["", "## Notes", "", notes_text.strip()]
    lines += ["", "Reproduce: `python scripts/gpu_evidence.py run --device cuda --out DIR` on a GPU machine, then "
              "`python scripts/gpu_evidence.py render DIR/measure-cuda.json --confirm DIR/confirm-gpu.json "
              "--cpu docs/gpu-evidence/measure-cpu.json --notes docs/gpu-evidence/notes.md -o docs/gpu-evidence.md` "
              "(the raw JSON of this page is in `docs/gpu-evidence/`).", ""]
    return "\n".join(lines)


def cmd_render(args) -> int:
    doc = json.loads(Path(args.measure).read_text())
    cpu = json.loads(Path(args.cpu).read_text()) if args.cpu else None
    notes_text = Path(args.notes).read_text(encoding="utf-8") if args.notes else ""
    text = render(doc, _rules(), _confirm_statuses(args.confirm), cpu, notes_text)
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


def cmd_device(args) -> int:
    """On the GPU machine, in one go: the measurements and the CLI confirm pass over fixtures/, in parallel."""
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    dev = "cuda" if args.device.startswith("cuda") else "cpu"
    measure_cmd = [sys.executable, __file__, "run", "--device", args.device, "--out", str(out), "--jobs", str(args.jobs),
                   "--timing-runs", str(args.timing_runs)]
    confirm_cmd = [sys.executable, "-m", "fusionlint.cli", "check", "fixtures/",
                   *(["--confirm-on-gpu"] if dev == "cuda" else ["--confirm", "--device", "cpu"]),
                   "--jobs", str(args.jobs), "--format", "json", "-o", str(out / f"confirm-{'gpu' if dev == 'cuda' else 'cpu'}.json"),
                   "--report", str(out / f"report-{'gpu' if dev == 'cuda' else 'cpu'}.html")]
    t0 = time.perf_counter()
    with open(out / "measure.log", "w") as mlog, open(out / "confirm.log", "w") as clog:
        pm = subprocess.Popen(measure_cmd, cwd=ROOT, env=env, stdout=mlog, stderr=subprocess.STDOUT)
        pc = subprocess.Popen(confirm_cmd, cwd=ROOT, env=env, stdout=clog, stderr=subprocess.STDOUT)
        codes = {}
        for name, proc in (("measure", pm), ("confirm", pc)):
            try:
                codes[name] = proc.wait(timeout=max(1.0, args.budget - (time.perf_counter() - t0)))
            except subprocess.TimeoutExpired:
                proc.kill()
                codes[name] = "timeout"
    print(f"device run: {codes} in {time.perf_counter() - t0:.0f} s (confirm exits 1 when findings remain)")
    return 0 if codes.get("measure") == 0 and codes.get("confirm") in (0, 1) else 1


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--device", default="cuda")
    r.add_argument("--out", default="gpu-evidence-out")
    r.add_argument("--jobs", type=int, default=1)
    r.add_argument("--only", default=None, help="comma-separated fixture dir prefixes, e.g. FL101,FL201")
    r.add_argument("--timing-runs", type=int, default=20)
    r.add_argument("--part", default=None, help=argparse.SUPPRESS)
    r.add_argument("--part-out", default=None, help=argparse.SUPPRESS)
    r.set_defaults(func=cmd_run)
    v = sub.add_parser("device", help="measurements + `check fixtures/ --confirm-on-gpu`, in parallel")
    v.add_argument("--device", default="cuda")
    v.add_argument("--out", required=True)
    v.add_argument("--jobs", type=int, default=4)
    v.add_argument("--timing-runs", type=int, default=20)
    v.add_argument("--budget", type=float, default=540.0, help="seconds before both are stopped")
    v.set_defaults(func=cmd_device)
    d = sub.add_parser("render")
    d.add_argument("measure")
    d.add_argument("--confirm", default=None, help="JSON report of `fusionlint check fixtures/ --confirm-on-gpu --format json`")
    d.add_argument("--cpu", default=None, help="measure-cpu.json for a comparison table")
    d.add_argument("--notes", default=None, help="a markdown file of observations to append")
    d.add_argument("-o", "--output", default=None)
    d.set_defaults(func=cmd_render)
    args = p.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
