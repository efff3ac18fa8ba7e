"""How fast the confirm pass gets through modules: modules per minute, wall seconds.

    python bench/confirm_speed.py                               # fixtures/ on the CPU, --jobs = CPU cores
    python bench/confirm_speed.py fixtures/ --device cuda       # on a GPU (one worker per visible GPU)
    python bench/confirm_speed.py examples/ --jobs 2 --save     # also write bench/results/confirm_speed-<device>.json

Runs ``fusionlint check PATH --confirm --no-confirm-cache --format json`` in a subprocess (so the
numbers include starting the workers and importing torch, as a user sees it), then counts the
modules from its per-module lines and the confirmations from its JSON.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
_MODULE_LINE = re.compile(r"^confirm (\S+): (ok|unconfirmed)")


def run(path: str, device: str, jobs: int | None, extra: list[str]) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out.json"
        cmd = [sys.executable, "-m", "fusionlint.cli", "check", path, "--confirm", "--device", device,
               "--no-confirm-cache", "--format", "json", "-o", str(out), *extra]
        if jobs:
            cmd += ["--jobs", str(jobs)]
        # the checkout first, whatever else the environment needs (a device run's --target site dir)
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")])))
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, cwd=HERE, capture_output=True, text=True, env=env)
        wall = time.perf_counter() - t0
        if proc.returncode not in (0, 1) or not out.exists():
            sys.exit(f"fusionlint exited {proc.returncode}:\n{proc.stderr[-3000:]}")
        doc = json.loads(out.read_text())
    modules = [m.groups() for m in map(_MODULE_LINE.match, proc.stderr.splitlines()) if m]
    statuses = collections.Counter((f.get("confirmation") or {}).get("status", "none") for f in doc["findings"])
    return {
        "path": path,
        "device": device,
        "jobs": jobs,
        "cpu_cores": os.cpu_count(),
        "load_average_1m": round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None,
        "wall_s": round(wall, 1),
        "modules": len(modules),
        "modules_unconfirmed": sum(1 for _label, state in modules if state == "unconfirmed"),
        "modules_per_minute": round(len(modules) / wall * 60, 1) if wall else None,
        "findings": dict(sorted(statuses.items())),
        "by_code": dict(sorted(collections.Counter(f["code"] for f in doc["findings"]).items())),
        "python": platform.python_version(),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("path", nargs="?", default="fixtures/")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--jobs", type=int, default=None)
    ap.add_argument("--save", action="store_true", help="write bench/results/confirm_speed-<device>.json")
    args, extra = ap.parse_known_args()  # anything else goes to fusionlint (e.g. --confirm-backend eager)
    res = run(args.path, args.device, args.jobs, extra)
    try:
        from importlib.metadata import version

        res["torch"] = version("torch")
    except Exception:
        res["torch"] = None
    print(f"{res['modules']} modules in {res['wall_s']} s on {args.device} (--jobs {args.jobs or 'default'}): "
          f"{res['modules_per_minute']} modules/minute; findings {res['findings']}")
    if args.save:
        dest = HERE / "bench" / "results" / f"confirm_speed-{args.device.replace(':', '')}.json"
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(json.dumps(res, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {dest.relative_to(HERE)}")


if __name__ == "__main__":
    main()
