"""Recall of the static pass on real models: graph-break sites and recompile causes that torch records.

    python bench/recall.py                       # measure (incremental) + static pass + score
    python bench/recall.py --limit 10            # the first 10 models only
    python bench/recall.py --only 'timm:vit*'    # models whose name matches a glob (repeatable)
    python bench/recall.py --rescore             # static pass only, against the newest saved raw JSON
    python bench/recall.py --rescore bench/results/recall-2025-01-01.json
    python bench/recall.py --rescore --conditional [--only NAME]   # + the conditional passes

It creates its own venv in .bench/venv (git-ignored) with pinned torch (CPU), timm, transformers, MONAI,
diffusers, PyTorch Geometric, vit-pytorch and this checkout of fusionlint (`pip install -e .`, so the static pass runs on the current sources),
builds each model with random weights, and records with Dynamo's `eager` backend every graph-break
site (innermost frame inside the model package, from the `graph_breaks` log) and every recompile (with
the failed guard's source line, from the `recompiles` log; for a failed input-size guard, the package
line that fixed that size while the failed entry was compiled, from the `dynamic` log), calling each
model at 3 batch sizes x 3 sizes in train mode and in eval mode, plus the lines each eager forward
executed. Models are
measured in worker subprocesses (bench/recall_worker.py), cached in .bench/cache/ by package version,
torch version and model name, so a rerun measures only what is new. Then `fusionlint check --format
json --select ALL` runs on the installed package sources and the sites are matched (bench/recall_match.py).

Output: per-site HIT/miss lines and the table on stdout, bench/results/recall-<date>.txt, and
bench/results/recall-<date>.json with the raw sites and executed lines (what --rescore reads).

Some findings state the input under which they break (FL102: "when `x.dtype == torch.float16` holds";
FL103: "once `seq_len` is a dynamic size"). `--conditional` runs, for each such finding on an executed
line without a recorded break, the models that executed it again with the condition met (float16 model
and inputs; `dynamic=True`), and saves those break sites in <raw>-conditional.json beside the raw JSON;
every later score reads it and prints the conditional rows apart from the plain ones.
"""

from __future__ import annotations

import argparse
import collections
import datetime
import fnmatch
import hashlib
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

import recall_match  # noqa: E402
import recall_models  # noqa: E402

BENCH = REPO / ".bench"
VENV = BENCH / "venv"
PY = VENV / "bin" / "python"
RESULTS = HERE / "results"
# Pinned so a result names exactly what it measured. torch installs from the local CPU wheel; never
# leave it unpinned (an open range pulls a multi-GB CUDA build). timm is installed without its
# dependencies because it requires torchvision, which cannot be installed beside this torch build
# (see bench/torchvision_stub.py); its other runtime dependencies are listed here.
PINS = [
    "torch==2.13.0",
    "numpy==2.4.6",
    "pillow==13.0.0",
    "pyyaml==6.0.4",
    "safetensors==0.8.0",
    "huggingface_hub==2.4.0",
    "transformers==5.24.0",
    "monai==1.6.1",
    "einops==0.8.2",
    "diffusers==0.42.1",
    "torch_geometric==2.8.1",
    "einx==0.4.3",
    "frozendict==2.5.1",
    "loguru==0.7.3",
]
NO_DEPS_PINS = ["timm==1.0.31", "vit-pytorch==1.26.14", "x-transformers==2.31.10", "torch-einops-utils==0.2.0",
                # more lucidrains packages and Meta's ESM, none of them measured while the rules were written
                # (2026-12-05): their dependencies are the pins above plus the three after them
                "vector-quantize-pytorch==1.32.0", "perceiver-pytorch==0.11.0", "performer-pytorch==1.1.4",
                "local-attention==1.11.2", "hyper-connections==0.4.11", "axial-positional-embedding==0.3.12",
                "fair-esm==2.0.0",
                # and the "moe" set, the same day: mixtures of experts and byte-level / ring attention models
                "mixture-of-experts==0.2.3", "soft-moe-pytorch==0.1.9", "MEGABYTE-pytorch==0.3.6",
                "ring-attention-pytorch==0.5.20", "beartype==0.23.1", "jaxtyping==0.3.11", "wadler-lindig==0.1.8",
                # and the "kornia" set, the same day: kornia's augmentations and filters, mambapy's Mamba
                "kornia==0.9.0", "kornia-rs==0.2.0", "mambapy==1.2.0",
                # and the "lucid2" set, the same day: axial, LSH and linear attention, EGNN, product keys, CoLT5
                "axial-attention==0.6.1", "reformer-pytorch==1.4.4", "linear-attention-transformer==0.19.1",
                "linformer==0.2.3", "egnn-pytorch==0.2.8", "product-key-memory==0.3.0", "colt5-attention==0.11.2",
                # and the "mix" set, the same day: Conformer, minGRU, Nystromformer, TabNet, e3nn
                "conformer==0.3.2", "minGRU-pytorch==0.2.1", "nystrom-attention==0.0.14", "pytorch-tabnet==4.1.0",
                "e3nn==0.6.0", "opt_einsum_fx==0.1.4", "opt_einsum==3.4.0",
                # and the "rl" set, the same day: Stable-Baselines3's policies
                "stable-baselines3==2.9.2", "gymnasium==1.4.0", "cloudpickle==3.1.3", "farama-notifications==0.0.4"]


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def ensure_venv() -> None:
    stamp = BENCH / "venv.pins"
    wanted = "\n".join(PINS + NO_DEPS_PINS)
    if PY.exists() and stamp.exists() and stamp.read_text() == wanted:
        return
    log(f"creating the bench venv in {VENV} (pinned: {', '.join(PINS + NO_DEPS_PINS)})")
    BENCH.mkdir(exist_ok=True)
    if not PY.exists():
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    pip = [str(PY), "-m", "pip", "install", "-q"]
    subprocess.run(pip + PINS, check=True)
    subprocess.run(pip + ["--no-deps"] + NO_DEPS_PINS, check=True)
    # fusionlint's own dependencies come from its pyproject.toml (a list here went stale: pathspec)
    subprocess.run(pip + ["-e", str(REPO)], check=True)
    stamp.write_text(wanted)


def venv_facts() -> dict:
    code = (
        "import importlib.metadata as m, json, sysconfig;"
        "print(json.dumps({'site': sysconfig.get_paths()['purelib'], 'versions': {p: m.version(p) for p in "
        "('torch', 'timm', 'transformers', 'monai', 'diffusers', 'torch_geometric', 'vit_pytorch', 'x_transformers', "
        "'vector_quantize_pytorch', 'perceiver_pytorch', 'performer_pytorch', 'local_attention', 'fair_esm', "
        "'mixture_of_experts', 'soft_moe_pytorch', 'MEGABYTE_pytorch', 'ring_attention_pytorch', 'kornia', 'mambapy', "
        "'axial_attention', 'reformer_pytorch', 'linear_attention_transformer', 'egnn_pytorch', 'product_key_memory', "
        "'colt5_attention', 'conformer', 'minGRU_pytorch', 'nystrom_attention', 'pytorch_tabnet', 'e3nn', 'stable_baselines3', 'fusionlint')}}))"
    )
    out = subprocess.run([str(PY), "-c", code], check=True, capture_output=True, text=True).stdout
    facts = json.loads(out)
    facts["versions"]["esm"] = facts["versions"]["fair_esm"]  # fair-esm installs the package `esm`
    return facts


def _safe(name: str) -> str:
    return name.replace(":", "__").replace("/", "_")


def cache_dir(name: str, versions: dict) -> Path:
    pkg = recall_models.package_of(name)
    return BENCH / "cache" / f"{pkg}-{versions[pkg]}+torch-{versions['torch']}"


def model_dir(name: str, versions: dict, condition: str | None = None) -> Path:
    """Where a model's measurement is cached; a conditional pass in a folder of its own."""
    base = cache_dir(name, versions)
    return base / f"condition-{condition}" if condition else base


def measure(names: list[str], versions: dict, jobs: int, timeout: int, chunk: int, condition: str | None = None) -> None:
    """Run the uncached models in worker subprocesses, `jobs` at a time, `chunk` models per worker
    (with `condition`: the worker's pass with that condition met, cached apart)."""

    def cache_dir(n: str, versions: dict) -> Path:
        return model_dir(n, versions, condition)

    pending = [n for n in names if not (cache_dir(n, versions) / f"{_safe(n)}.json").exists()]
    log(f"{len(names) - len(pending)} models cached, {len(pending)} to measure with {jobs} workers")
    queue: list[list[str]] = []
    by_dir = collections.defaultdict(list)
    for n in pending:
        by_dir[cache_dir(n, versions)].append(n)
    # chunks of one package each (a worker writes to one cache dir), packages interleaved so that an
    # interrupted run still covers all of them
    chunks = [[ns[i : i + chunk] for i in range(0, len(ns), chunk)] for ns in by_dir.values()]
    for i in range(max(map(len, chunks), default=0)):
        queue += [c[i] for c in chunks if i < len(c)]
    running: list[tuple[subprocess.Popen, list[str], float]] = []
    env = dict(os.environ, OMP_NUM_THREADS="1", TOKENIZERS_PARALLELISM="false", HF_HUB_OFFLINE="1")
    while queue or running:
        while queue and len(running) < jobs:
            group = queue.pop(0)
            cdir = cache_dir(group[0], versions)
            cmd = [str(PY), str(HERE / "recall_worker.py"), "--cache", str(cdir), "--timeout", str(timeout)]
            cmd += ["--condition", condition] if condition else []
            cmd += group
            proc = subprocess.Popen(cmd, env=env, stdout=sys.stderr, stderr=subprocess.DEVNULL)
            running.append((proc, group, time.monotonic()))
        time.sleep(1)
        for item in list(running):
            proc, group, started = item
            overdue = time.monotonic() - started > timeout * len(group) + 120
            if proc.poll() is None and not overdue:
                continue
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            running.remove(item)
            cdir = cache_dir(group[0], versions)
            rest = []
            for n in group:
                if (cdir / f"{_safe(n)}.json").exists():
                    continue
                marker = cdir / f"{_safe(n)}.started"
                if marker.exists():  # the worker died on this model: record it, go on with the rest
                    why = "killed after the worker's time limit" if overdue else f"worker died (exit {proc.returncode})"
                    (cdir / f"{_safe(n)}.json").write_text(json.dumps({"name": n, "status": "failed", "error": why}))
                    marker.unlink()
                    log(f"{n}: failed {why}")
                else:
                    rest.append(n)
            if rest:
                queue.append(rest)


def collect(names: list[str], versions: dict, site: str) -> dict:
    """The cached per-model results → the raw record (sites with the models that hit them)."""
    models, breaks, recompiles = [], {}, {}
    kinds = collections.Counter()
    coverage: dict[str, set[int]] = {}
    for n in names:
        cached = cache_dir(n, versions) / f"{_safe(n)}.json"
        if not cached.exists():  # only after an interrupted measurement
            log(f"{n}: not measured yet, left out")
            continue
        r = json.loads(cached.read_text())
        models.append({k: r.get(k) for k in ("name", "status", "error", "sizes", "calls", "seconds")})
        if r["status"] != "ok":
            continue
        for b in r["breaks"]:
            key = f"{b['path']}:{b['line']}"
            entry = breaks.setdefault(key, {**{k: b[k] for k in ("path", "line", "code")}, "reasons": {}, "models": []})
            entry["reasons"].setdefault(b["reason"], b["gb"])
            if n not in entry["models"]:
                entry["models"].append(n)
        # a model measured before specializations were recorded has none (its size guards keep no line)
        for rc in recall_match.attribute_specializations(r["recompiles"], r.get("specializations", [])):
            # classified here, not in the worker, so a changed classification needs no re-measurement
            rc["kind"] = recall_match.recompile_kind(rc["guard"], rc["path"], recall_models.PACKAGES)
            kinds[rc["kind"]] += 1
            if not rc["kind"].startswith("package-line"):
                continue
            key = f"{rc['path']}:{rc['line']}"
            entry = recompiles.setdefault(
                key, {"path": rc["path"], "line": rc["line"], "code": rc["code"], "mode_switch": True, "guards": [], "models": []}
            )
            if rc.get("specialized"):
                entry["specialized"] = True
            entry["mode_switch"] &= rc["kind"] == "package-line-mode-switch"
            if rc["guard"] not in entry["guards"] and len(entry["guards"]) < 3:
                entry["guards"].append(rc["guard"])
            if n not in entry["models"]:
                entry["models"].append(n)
        for path, runs in r.get("coverage", {}).items():
            coverage.setdefault(path, set()).update(recall_match.expand_lines(runs))
    return {
        "date": datetime.date.today().isoformat(),
        "versions": versions,
        "site": site,
        "models": models,
        "break_sites": sorted(breaks.values(), key=lambda e: (e["path"], e["line"])),
        "recompile_causes": sorted(recompiles.values(), key=lambda e: (e["path"], e["line"])),
        "recompile_kinds": dict(kinds),
        "coverage": {p: recall_match.compress_lines(v) for p, v in sorted(coverage.items())},
    }


def conditional_targets(raw: dict, findings: list, versions: dict, only: list[str] | None) -> dict[str, list[str]]:
    """condition -> the models to run with it met: for every graph-break finding (any rule) on an
    executed line with no recorded break whose message states a measurable condition, the models
    whose eager forward ran that line (read from their cached measurement)."""
    executed = {p: recall_match.expand_lines(r) for p, r in raw["coverage"].items()}
    breaks = [(b["path"], b["line"]) for b in raw["break_sites"]]
    unconfirmed = recall_match.score(breaks, [], executed, findings).unconfirmed
    lines: dict[str, set[tuple[str, int]]] = collections.defaultdict(set)
    for f in unconfirmed:
        cond = recall_match.stated_condition(f.message)
        if cond in recall_match.CONDITIONS:  # a configuration condition has no pass
            lines[cond].add((f.path, f.line))
    names = select([m["name"] for m in raw["models"] if m["status"] == "ok"], only, None)
    # which models ran a line is read from their cached plain measurement: without it the targets
    # would come out empty and the saved record would be overwritten by one with no passes
    uncached = [n for n in names if not (cache_dir(n, versions) / f"{_safe(n)}.json").exists()]
    if lines and uncached:
        raise SystemExit(
            f"error: --conditional needs the plain measurement of every model in {BENCH / 'cache'} "
            f"({len(uncached)} of {len(names)} missing, e.g. {uncached[0]}); run `python bench/recall.py` "
            "first (cached models are not measured again), or rescore without --conditional"
        )
    targets: dict[str, list[str]] = {}
    for cond, wanted in sorted(lines.items()):
        for n in names:
            cached = cache_dir(n, versions) / f"{_safe(n)}.json"
            cov = json.loads(cached.read_text()).get("coverage", {})
            ran = {p: recall_match.expand_lines(r) for p, r in cov.items()}
            if any(line in ran.get(path, ()) for path, line in wanted):
                targets.setdefault(cond, []).append(n)
    return targets


def collect_conditions(targets: dict[str, list[str]], versions: dict, raw_name: str) -> dict:
    """The conditional passes' cached results → their raw record (break sites per condition)."""
    passes = {}
    for cond, names in sorted(targets.items()):
        models, breaks = [], {}
        for n in names:
            cached = model_dir(n, versions, cond) / f"{_safe(n)}.json"
            if not cached.exists():
                log(f"{n} ({cond}): not measured yet, left out")
                continue
            r = json.loads(cached.read_text())
            models.append({k: r.get(k) for k in ("name", "status", "error", "sizes", "calls", "call_errors", "seconds")})
            for b in r.get("breaks", []):
                key = f"{b['path']}:{b['line']}"
                entry = breaks.setdefault(key, {**{k: b[k] for k in ("path", "line", "code")}, "reasons": {}, "models": []})
                entry["reasons"].setdefault(b["reason"], b["gb"])
                if n not in entry["models"]:
                    entry["models"].append(n)
        passes[cond] = {"models": models, "break_sites": sorted(breaks.values(), key=lambda e: (e["path"], e["line"]))}
    return {"date": datetime.date.today().isoformat(), "measured_for": raw_name, "versions": versions, "passes": passes}


def conditional_path(raw_path: Path) -> Path:
    return raw_path.with_name(f"{raw_path.stem}-conditional.json")


def static_pass(site: str) -> tuple[list[recall_match.Finding], set[str], int]:
    """fusionlint (the venv's, i.e. this checkout) over the installed package sources, every rule."""
    # this checkout's sources, whatever the (shared) bench venv's editable install points at
    fusionlint = [str(PY), str(HERE / "recall_lint.py")]
    # cached by the linter's own sources: a rescore after an analysis change reruns it, a second report does not
    digest = hashlib.sha256(site.encode())
    digest.update(" ".join(recall_models.PACKAGES).encode())  # a package added to the bench is linted too
    for src in sorted([*(REPO / "fusionlint").rglob("*.py"), *(REPO / "rules").rglob("*.py")]):
        digest.update(src.read_bytes())
    cached = BENCH / f"static-{digest.hexdigest()[:16]}.json"
    rules = json.loads(subprocess.run([*fusionlint, "rules", "--format", "json"], check=True, capture_output=True, text=True).stdout)
    default_codes = {r["code"] for r in rules["rules"] if r["default"]}
    dirs = [os.path.join(site, p) for p in recall_models.PACKAGES]
    if cached.exists():
        data = json.loads(cached.read_text())
    else:
        log("static pass: fusionlint check --format json --select ALL " + " ".join(recall_models.PACKAGES))
        proc = subprocess.run(
            [*fusionlint, "check", "--format", "json", "--select", "ALL", "--exit-zero", *dirs],
            capture_output=True,
            text=True,
            cwd=site,
        )
        if proc.returncode != 0:
            raise SystemExit(f"fusionlint failed (exit {proc.returncode}): {proc.stderr[-2000:]}")
        data = json.loads(proc.stdout)
        cached.write_text(proc.stdout)
    findings = []
    for f in data["findings"]:
        path = f["path"].replace("\\", "/")
        # JSON paths are relative to the project root fusionlint chose (the nearest pyproject.toml above
        # site-packages, i.e. this repo, or the working directory): resolve against both
        rel = None
        for base in (site, str(REPO)):
            candidate = os.path.normpath(os.path.join(base, path))
            if os.path.exists(candidate):
                rel = recall_match.relative_to_roots(candidate, [os.path.normpath(site)])
                break
        if rel is None:
            raise SystemExit(f"cannot place finding path {path!r} under {site}")
        findings.append(
            recall_match.Finding(
                rel, f["line"], f.get("end_line") or f["line"], f["code"], frozenset(f["effects"]), f.get("message", "")
            )
        )
    return findings, default_codes, len(data["errors"])


def report(raw: dict, findings: list, default_codes: set[str], file_errors: int, conditional: dict | None = None) -> str:
    executed = {p: recall_match.expand_lines(r) for p, r in raw["coverage"].items()}
    breaks = [(b["path"], b["line"]) for b in raw["break_sites"]]
    causes = [(c["path"], c["line"]) for c in raw["recompile_causes"]]
    default_findings = [f for f in findings if f.code in default_codes]
    default = recall_match.score(breaks, causes, executed, default_findings)
    every = recall_match.score(breaks, causes, executed, findings)
    # the same, without the causes that are only a train/eval mode switch (a `.training` guard)
    code_causes = [(c["path"], c["line"]) for c in raw["recompile_causes"] if not c.get("mode_switch")]
    default_code = recall_match.score(breaks, code_causes, executed, default_findings)
    every_code = recall_match.score(breaks, code_causes, executed, findings)
    v = raw["versions"]
    ok = [m for m in raw["models"] if m["status"] == "ok"]
    failed = [m for m in raw["models"] if m["status"] != "ok"]
    per_pkg = collections.Counter(recall_models.package_of(m["name"]) for m in ok)
    out = [
        f"# fusionlint recall on real models ({raw['date']}; scored {datetime.date.today().isoformat()})",
        f"torch {v['torch']} CPU, Dynamo backend 'eager'; timm {v['timm']}, transformers {v['transformers']}, "
        f"MONAI {v['monai']}" + "".join(
            f", {label} {v[key]}" for key, label in
            (("diffusers", "diffusers"), ("torch_geometric", "PyG"), ("vit_pytorch", "vit-pytorch"),
             ("x_transformers", "x-transformers"), ("vector_quantize_pytorch", "vector-quantize-pytorch"),
             ("perceiver_pytorch", "perceiver-pytorch"), ("performer_pytorch", "performer-pytorch"),
             ("local_attention", "local-attention"), ("fair_esm", "fair-esm"),
             ("mixture_of_experts", "mixture-of-experts"), ("soft_moe_pytorch", "soft-moe-pytorch"),
             ("MEGABYTE_pytorch", "MEGABYTE-pytorch"), ("ring_attention_pytorch", "ring-attention-pytorch"),
             ("kornia", "kornia"), ("mambapy", "mambapy"), ("axial_attention", "axial-attention"),
             ("reformer_pytorch", "reformer-pytorch"), ("linear_attention_transformer", "linear-attention-transformer"),
             ("egnn_pytorch", "egnn-pytorch"), ("product_key_memory", "product-key-memory"),
             ("colt5_attention", "colt5-attention"), ("conformer", "conformer"), ("minGRU_pytorch", "minGRU-pytorch"),
             ("nystrom_attention", "nystrom-attention"), ("pytorch_tabnet", "pytorch-tabnet"), ("e3nn", "e3nn"),
             ("stable_baselines3", "Stable-Baselines3")) if v.get(key))
        + f"; fusionlint {v['fusionlint']} (this checkout)",
        f"models measured: {len(ok)} ({', '.join(f'{p} {n}' for p, n in sorted(per_pkg.items()))}); "
        f"failed to build or run, skipped: {len(failed)}",
        f"static pass: {len(findings)} findings with --select ALL, "
        f"{sum(f.code in default_codes for f in findings)} with the default rules; {file_errors} file errors",
        f"recompiles by kind (all guard failures): {json.dumps(raw['recompile_kinds'], sort_keys=True)}",
        "",
        "## Sites",
    ]
    for b in raw["break_sites"]:
        verdict, codes = default.hits[("break", b["path"], b["line"])]
        label = {"exact": "HIT ", "span": "span", "miss": "miss"}[verdict]
        reason = next(iter(b["reasons"]))
        out.append(
            f"{label} break     {b['path']}:{b['line']}  {b['code'][:70]!r}  [{', '.join(codes) or '-'}]  "
            f"{len(b['models'])} models; {reason[:90]}"
        )
    for c in raw["recompile_causes"]:
        verdict, codes = default.hits[("recompile", c["path"], c["line"])]
        opt_in = ""
        if verdict == "miss":  # found only by a rule that is off by default?
            verdict, codes = every.hits[("recompile", c["path"], c["line"])]
            opt_in = " (opt-in rule)" if verdict != "miss" else ""
        label = {"exact": "HIT ", "span": "span", "miss": "miss"}[verdict] + opt_in
        label += " (mode switch)" if c.get("mode_switch") else ""
        label += " (size fixed here)" if c.get("specialized") else ""
        out.append(
            f"{label} recompile {c['path']}:{c['line']}  {(c['code'] or '')[:70]!r}  [{', '.join(codes) or '-'}]  "
            f"{len(c['models'])} models; guard {c['guards'][0][:80]}"
        )
    out += ["", "## Table", "", "| measure | default rules | --select ALL |", "|---|---|---|"]
    for (label, hit, total), (_, hit_all, total_all) in zip(default.table(), every.table()):
        out.append(f"| {label} | {_pct(hit, total)} | {_pct(hit_all, total_all)} |")
        if label.startswith("precision"):
            # a finding that says its line runs eagerly today (after a loop whose every iteration breaks)
            # claims no break now: the row without them, beside the plain one
            eager = [sum(recall_match.stated_condition(f.message) == "eager" for f in s.unconfirmed) for s in (default, every)]
            out.append(
                f"| ... leaving out the findings that say their line runs eagerly today | {_pct(hit, total - eager[0])} "
                f"| {_pct(hit_all, total_all - eager[1])} |"
            )
        if label.startswith("recompile causes found"):
            out.append(
                f"| ... of them not a train/eval mode switch | {_pct(default_code.recompile_exact, default_code.recompile_causes)} "
                f"| {_pct(every_code.recompile_exact, every_code.recompile_causes)} |"
            )
    out += ["", "A break site is found when a graph-break or host-sync finding starts on its line ('exact'),",
            "or, for the 'span' rows, when the site's line lies within a finding's lines (line..end_line).",
            "A recompile cause is the source line of the failed guard, counted only when it is a line of the",
            "model package (input-shape, grad-mode and torch-internal guard failures have no such line).",
            "Precision: findings with the graph-break effect whose line ran in an eager forward, and among",
            "them those at a line where a graph break was recorded.", "", "## Most common missed break sites", ""]
    misses = [b for b in raw["break_sites"] if default.hits[("break", b["path"], b["line"])][0] == "miss"]
    for b in sorted(misses, key=lambda b: -len(b["models"]))[:15]:
        reason = next(iter(b["reasons"]))
        out.append(f"- {b['path']}:{b['line']} `{b['code']}` ({len(b['models'])} models): {reason}")
    out += ["", "## Graph-break findings on executed lines where no break was recorded (default rules)", ""]
    out += [
        f"- {f.path}:{f.line} {f.code}" + (f" (states: {cond})" if (cond := recall_match.stated_condition(f.message)) else "")
        for f in sorted(default.unconfirmed, key=lambda f: (f.path, f.line))
    ]
    out += ["", "## Recompile findings on executed lines where no failed guard was recorded (default rules)", ""]
    out += [f"- {f.path}:{f.line} {f.code}" for f in sorted(default.unconfirmed_recompiles, key=lambda f: (f.path, f.line))]
    out += ["", "## Recompile findings on executed lines, by rule (--select ALL)", "",
            "| rule | at a recorded failed guard / on executed lines |", "|---|---|"]
    out += [f"| {code} | {real}/{total} |" for code, (real, total) in sorted(every.recompiles_by_rule.items())]
    out += _conditional_section(conditional, default, every, raw, default_findings)
    if failed:
        out += ["", "## Models skipped (failed to build or run)", ""]
        out += [f"- {m['name']}: {(m['error'] or '')[:160]}" for m in failed]
    return "\n".join(out) + "\n"


def _conditional_section(conditional: dict | None, default, every, raw: dict, findings: list) -> list[str]:
    """Findings whose message states a condition (float16, a dynamic size), judged by the pass that ran
    with it met: real when that pass recorded a break at the finding's line. Kept apart from the plain
    precision row above, which counts only the plain runs."""
    out = ["", "## Findings with a stated condition, measured with it met (conditional passes)", ""]
    if conditional is None:
        return out + ["No conditional passes saved (`python bench/recall.py --conditional`): not scored."]
    passes = conditional["passes"]
    sites = {c: {(b["path"], b["line"]) for b in p["break_sites"]} for c, p in passes.items()}
    for cond, p in sorted(passes.items()):
        ok = [m["name"] for m in p["models"] if m["status"] == "ok"]
        failed = [f"{m['name']} ({(m['error'] or '')[:80]})" for m in p["models"] if m["status"] != "ok"]
        out.append(
            f"pass `{cond}`: {len(ok)} models ran ({', '.join(ok) or '-'}); failed: {', '.join(failed) or 'none'}; "
            f"{len(p['break_sites'])} break sites"
        )
    rows = []
    for label, s in (("default rules", default), ("--select ALL", every)):
        judged = recall_match.score_conditions(s.unconfirmed, sites)
        real = sum(j.verdict == "real" for j in judged)
        rows.append((label, s, judged, real))
    out += ["", "| measure | default rules | --select ALL |", "|---|---|---|"]
    (_, d, dj, dr), (_, e, ej, er) = rows
    out.append(
        "| precision, plain runs only (as above) | "
        f"{_pct(d.executed_break_findings_real, d.executed_break_findings)} | {_pct(e.executed_break_findings_real, e.executed_break_findings)} |"
    )
    out.append(
        f"| unconfirmed findings stating a condition whose pass broke at their line | {dr}/{len(dj)} | {er}/{len(ej)} |"
    )
    out.append(
        "| precision, counting a conditional finding real when its condition's pass broke at its line | "
        f"{_pct(d.executed_break_findings_real + dr, d.executed_break_findings)} | "
        f"{_pct(e.executed_break_findings_real + er, e.executed_break_findings)} |"
    )
    out += ["", "Per finding (default rules):", ""]
    for j in dj:
        f = j.finding
        out.append(f"- {f.path}:{f.line} {f.code}: condition {j.condition or '-'}: {j.verdict}")
    # what the passes broke on beyond the plain runs' sites: recall under the condition (not in the table)
    plain = {(b["path"], b["line"]) for b in raw["break_sites"]}
    by_start, by_path = recall_match.index_findings(findings, recall_match.BREAK_EFFECTS)
    out += ["", "Break sites recorded only under a condition (models of that pass only; default rules):", ""]
    for cond, p in sorted(passes.items()):
        for b in p["break_sites"]:
            if (b["path"], b["line"]) in plain:
                continue
            verdict, codes = recall_match.match_site((b["path"], b["line"]), by_start, by_path)
            label = {"exact": "HIT ", "span": "span", "miss": "miss"}[verdict]
            out.append(f"- {label} [{cond}] {b['path']}:{b['line']} `{b['code'][:70]}` [{', '.join(codes) or '-'}]; "
                       f"{next(iter(b['reasons']))[:70]}")
    return out


def _commit() -> str:
    proc = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True)
    dirty = subprocess.run(["git", "status", "--porcelain", "--", "fusionlint", "rules"], cwd=REPO, capture_output=True, text=True)
    return (proc.stdout.strip() or "unknown") + ("-dirty" if dirty.stdout.strip() else "")


def _pct(hit: int, total: int) -> str:
    return f"{hit}/{total} ({100 * hit / total:.0f} %)" if total else "0/0"


def select(names: list[str], only: list[str] | None, limit: int | None) -> list[str]:
    if only:
        names = [n for n in names if any(fnmatch.fnmatch(n, p) or p in n for p in only)]
    return names[:limit] if limit else names


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, help="measure only the first N selected models")
    parser.add_argument("--only", action="append", help="glob or substring of model names (repeatable)")
    parser.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    parser.add_argument("--timeout", type=int, default=240, help="seconds per model (default 240)")
    parser.add_argument("--chunk", type=int, default=6, help="models per worker process (default 6)")
    parser.add_argument("--rescore", nargs="?", const="latest", metavar="RAW_JSON",
                        help="rerun only the static pass against saved sites (default: the newest results JSON)")
    parser.add_argument("--conditional", action="store_true",
                        help="also run the conditional passes (float16, dynamic sizes) for the findings that state one, "
                             "on the models that executed them; saved as <raw>-conditional.json")
    parser.add_argument("--no-static", action="store_true", help="measure only, skip the static pass and scoring")
    parser.add_argument("--cached-only", action="store_true", help="measure nothing; score the cached models")
    args = parser.parse_args()
    ensure_venv()
    facts = venv_facts()
    RESULTS.mkdir(exist_ok=True)
    if args.rescore:
        # the newest full measurement: `recall-<date>.json`, not a renamed partial one
        # (`recall-2026-12-04-diffusers.json`) nor a conditional record
        saved = [p for p in RESULTS.glob("recall-*.json") if re.fullmatch(r"recall-\d{4}-\d{2}-\d{2}\.json", p.name)]
        path = Path(args.rescore) if args.rescore != "latest" else max(saved, default=None)
        if path is None or not path.exists():
            print(f"error: no saved raw sites ({args.rescore}); run bench/recall.py first", file=sys.stderr)
            return 2
        raw = json.loads(path.read_text())
        pinned = {k: raw["versions"][k] for k in ("torch", "timm", "transformers", "monai")}
        installed = {k: facts["versions"][k] for k in pinned}
        if pinned != installed:
            print(f"error: {path} was measured on {pinned}, the bench venv has {installed}", file=sys.stderr)
            return 2
        raw["versions"]["fusionlint"] = facts["versions"]["fusionlint"]
    else:
        names = select(recall_models.all_names(), args.only, args.limit)
        if not names:
            print("error: no model matches --only", file=sys.stderr)
            return 2
        if not args.cached_only:
            measure(names, facts["versions"], args.jobs, args.timeout, args.chunk)
        raw = collect(names, facts["versions"], facts["site"])
        path = RESULTS / f"recall-{raw['date']}.json"
        path.write_text(json.dumps(raw, indent=None, separators=(",", ":")) + "\n")
        log(f"raw sites written to {path.relative_to(REPO)}")
        if args.no_static:
            return 0
    commit = _commit()  # the code the static pass runs: taken before it runs, not after
    findings, default_codes, errors = static_pass(facts["site"])
    cond_path = conditional_path(path)
    if args.conditional:
        # --only picks what is measured now; the record holds every target already measured (cached)
        targets = conditional_targets(raw, findings, facts["versions"], None)
        for cond, names in sorted(targets.items()):
            names = select(names, args.only, None)
            if names:
                log(f"conditional pass {cond}: {', '.join(names)}")
                measure(names, facts["versions"], args.jobs, args.timeout, args.chunk, condition=cond)
        record = collect_conditions(targets, facts["versions"], path.name)
        cond_path.write_text(json.dumps(record, indent=None, separators=(",", ":")) + "\n")
        log(f"conditional passes written to {cond_path}")
    conditional = json.loads(cond_path.read_text()) if cond_path.exists() else None
    text = report(raw, findings, default_codes, errors, conditional)
    print(text)
    today = datetime.date.today().isoformat()
    # a rescore must not overwrite the text of the measurement it rescored: name it after both, and the commit
    out = RESULTS / (f"recall-{raw['date']}-rescored-{today}-at-{commit}.txt" if args.rescore else f"recall-{today}.txt")
    out.write_text(text)
    log(f"results written to {out.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
