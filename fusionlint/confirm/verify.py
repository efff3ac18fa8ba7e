"""``fusionlint check --fix --verify``: write a fix only if the module still computes the same thing
and the effect the fix claims to remove really shrinks.

For each module of the file whose findings carry a fix, one worker measures the file as it is and
the fixed text (a variant run in the same process, on the same inputs, with the same seeds).
A fix is written when, for every such module: the fixed module runs, its eager outputs are
``allclose`` to the original's, no measured cost grows, and at least one cost the fixed findings
claim (breaks, recompiles, kernels, sync-prone ops, an error, a divergence) goes down.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any, Callable, Optional

from fusionlint.confirm import orchestrate as orch
from fusionlint.confirm.template import Templates
from fusionlint.rule import Effect, Finding


def _costs(m: dict) -> dict:
    return {
        Effect.GRAPH_BREAK: len(m.get("break_sites") or []) + int(m.get("frame_skips") or 0),
        Effect.RECOMPILE: int(m.get("recompiles") or 0) + (100 if m.get("recompile_limit_hit") else 0),
        Effect.EXTRA_KERNEL: m.get("kernels_compiled"),
        Effect.HOST_SYNC: m.get("host_syncs_compiled"),
        Effect.RUNTIME_ERROR: int(not m.get("eager_ok")) + int(not m.get("compiled_ok")),
        Effect.SILENT_DIVERGENCE: int(
            bool(m.get("eager_ok") is False and m.get("compiled_ok"))
            or m.get("outputs_allclose") is False
            or m.get("inputs_allclose") is False
        ),
    }


_LABEL = {
    Effect.GRAPH_BREAK: "breaks",
    Effect.RECOMPILE: "recompiles",
    Effect.EXTRA_KERNEL: "kernels",
    Effect.HOST_SYNC: "sync-prone ops",
    Effect.RUNTIME_ERROR: "errors",
    Effect.SILENT_DIVERGENCE: "divergence",
}


def judge(worker: dict, claimed: set) -> tuple[bool, str]:
    """(accept, why) for one module's worker result with a "fixed" variant."""
    if not worker.get("ok"):
        return False, f"could not run the module: {worker.get('reason')}"
    before = worker["measurement"]
    variant = (worker.get("variants") or {}).get("fixed") or {}
    if variant.get("error"):
        return False, f"could not run the fixed module: {variant['error']}"
    after = variant.get("measurement")
    if after is None:
        return False, "the fixed module was not measured"
    if before.get("eager_ok") and not after.get("eager_ok"):
        return False, f"the fixed module raises: {after.get('eager_error')}"
    if before.get("eager_ok") and variant.get("eager_allclose") is not True:
        why = variant.get("eager_compare_error") or "outputs differ from the original"
        return False, f"not equivalent: {why}"
    cb, ca = _costs(before), _costs(after)
    changes, grew, shrank = [], [], []
    for effect in Effect:
        b, a = cb.get(effect), ca.get(effect)
        if b is None or a is None:
            continue
        if a > b:
            grew.append(f"{_LABEL[effect]} {b} -> {a}")
        elif a < b:
            (shrank if effect in claimed else changes).append(f"{_LABEL[effect]} {b} -> {a}")
    if grew:
        return False, "the fix makes it worse: " + ", ".join(grew)
    if not shrank:
        what = ", ".join(_LABEL[e] for e in claimed) or "nothing"
        return False, f"no measured improvement in {what}"
    return True, ", ".join(shrank + changes) + ("; outputs allclose" if before.get("eager_ok") else "")


class Verifier:
    """The ``verify_fix`` hook of ``fusionlint.runner.RunOptions``."""

    def __init__(
        self,
        settings: Any,
        *,
        device: Optional[str] = "cpu",
        timeout: Optional[float] = None,
        log: Optional[Callable[[str], None]] = None,
        run_worker: Optional[Callable[..., dict]] = None,
    ) -> None:
        orch.check_available()
        self.settings = settings
        self.root = Path(getattr(settings, "root", Path.cwd()))
        self.device = orch.resolve_device(device, orch.device_info(device))
        cfg = dict(getattr(settings, "confirm", {}) or {})
        self.timeout = float(timeout or cfg.get("timeout", orch.DEFAULT_TIMEOUT))
        self.memory_mb = int(cfg.get("memory-mb", cfg.get("memory_mb", orch.DEFAULT_MEMORY_MB)))
        self.log = log or (lambda line: None)
        # Each fix is measured in a process of its own, forked from one template: one import of
        # torch for the whole run instead of one per fixed module.
        self.templates = Templates()
        self.run_worker = run_worker or functools.partial(orch.run_worker, templates=self.templates)
        self.verified: list[str] = []
        self.rejected: list[str] = []

    def __call__(self, path: Path, old: str, new: str, findings: list[Finding]) -> bool:
        fixed = [f for f in findings if f.fix is not None]
        units = [u for u in orch.collect_units(fixed, self.root) if u.target]
        shown = fixed[0].path if fixed else str(path)
        if not units:
            self._reject(f"{shown}: no module to run the fix in")
            return False
        for unit in units:
            claimed = {Effect(e) for f in unit.findings for e in f.effects}
            job = orch.build_job(
                unit,
                root=self.root,
                device=self.device,
                examples=getattr(self.settings, "examples", {}) or {},
                user_files=[],
                timing_runs=0,
                timeline=False,
                memory_mb=self.memory_mb,
                threads=1,
                variants=[{"name": "fixed", "source": new}],
            )
            ok, why = judge(self.run_worker(job, self.timeout), claimed)
            if not ok:
                self._reject(f"{unit.label}: fix rejected: {why}")
                return False
            self._verify(f"{unit.label}: fix verified: {why}")
        return True

    def close(self) -> None:
        """End the template the verified fixes were measured from."""
        self.templates.close()

    def _reject(self, line: str) -> None:
        self.rejected.append(line)
        self.log(line)

    def _verify(self, line: str) -> None:
        self.verified.append(line)
        self.log(line)
