"""Every rule's claimed effects are real on the installed torch (CPU), and its fix removes them.

For each ``fixtures/FLxxx_name/`` holding ``bad.py`` and ``good.py``, both modules are imported,
measured with ``fusionlint.confirm.measure`` (eager vs ``torch.compile``, with the backend the confirm
pass picks for the rule's effects: aot_eager for breaks and recompiles, inductor for the rest), and
each effect the rule declares in ``Rule.effects`` must show on ``bad.py`` and be absent from ``good.py``:

- graph-break: a break site in bad.py on a line the rule flags statically; none in good.py
- recompile: more than the one benign automatic-dynamic recompile, or the recompile limit hit
- extra-kernel: more kernels per compiled forward in bad than in good
- host-sync: sync-prone aten ops in the compiled forward (the CPU proxy), none in good
- runtime-error: eager or compiled raises in bad; neither in good
- silent-divergence: eager and compiled disagree (or eager raises while compiled runs) in bad

An effect the fixture lists in ``CPU_UNOBSERVABLE`` (with the reason) is not asserted on CPU; the
GPU evidence (docs/gpu-evidence.md) covers it.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

from tests.helpers import need

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
_DIR_RE = re.compile(r"^(FL\d{3})_\w+$")
BENIGN_RECOMPILES = 1  # the first new shape flips a dimension to dynamic (automatic dynamic)


def fixture_dirs() -> list[Path]:
    if not FIXTURES.is_dir():
        return []
    return sorted(
        d for d in FIXTURES.iterdir() if d.is_dir() and _DIR_RE.match(d.name) and (d / "bad.py").is_file() and (d / "good.py").is_file()
    )


def load_module(path: Path):
    name = f"_fusionlint_fixture_{path.parent.name}_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def rule_for(code: str):
    from fusionlint.registry import all_rules

    rules = all_rules()
    assert code in rules, f"fixture for {code} but no rule class with that code in rules/"
    return rules[code]


def static_findings(rule, path: Path) -> list:
    from fusionlint.analysis.project import ProjectIndex
    from fusionlint.engine import Engine

    text = path.read_text(encoding="utf-8")
    project = ProjectIndex()
    project.add_file(str(path), text)
    findings, error = Engine([rule], project).lint_source(text, str(path))
    assert error is None, f"{path}: {error.message}"
    return [f for f in findings if f.code == rule.code]


def measure_module(module, path: Path, effects=()):
    """Measured as the confirm pass would for a finding with ``effects``: with aot_eager where only
    breaks and recompiles are claimed (Dynamo decides both), with inductor otherwise."""
    from fusionlint.confirm.measure import measure
    from fusionlint.confirm.orchestrate import auto_backend

    return measure(
        module.Model,
        module.example_inputs,
        device="cpu",
        exercise=getattr(module, "exercise", None),
        user_files=[str(path)],
        # `GRAD = True` in a fixture: measure with autograd recording (effects that exist only in training)
        grad=bool(getattr(module, "GRAD", False)),
        compile_kwargs={"backend": auto_backend(effects, "cpu")},
    )


def eager_outputs(module):
    import torch

    from fusionlint.confirm.measure import _flat

    torch.manual_seed(0)
    model = module.Model()
    torch.manual_seed(1)
    args = module.example_inputs()
    with torch.no_grad():
        return [t.detach().clone() for t in _flat(model(*args))]


@pytest.fixture(scope="module", autouse=True)
def _small_torch():
    need("torch", "fixtures are measured under torch.compile")
    import torch
    import torch._inductor.config as inductor_config

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a shared 2-core box: no OpenMP barrier stalls
    old = inductor_config.compile_threads
    inductor_config.compile_threads = 1
    yield
    torch.set_num_threads(threads)
    inductor_config.compile_threads = old


def test_fixtures_exist_and_match_rules():
    dirs = fixture_dirs()
    assert dirs, f"no fixtures/FLxxx_name/{{bad,good}}.py under {FIXTURES}"
    from fusionlint.registry import all_rules

    rules = all_rules()
    for d in dirs:
        code = _DIR_RE.match(d.name).group(1)
        assert code in rules, f"{d.name}: no rule {code}"
        module_name = rules[code].__module__.rsplit(".", 1)[-1]
        assert module_name == d.name, f"{d.name}: fixture dir should be named like the rule module {module_name}"


@pytest.mark.parametrize("fixture_dir", fixture_dirs(), ids=lambda d: d.name)
def test_fixture_effects(fixture_dir: Path, record_property):
    from fusionlint.confirm.measure import allclose, isolated_torch_config
    from fusionlint.rule import Effect

    code = _DIR_RE.match(fixture_dir.name).group(1)
    rule = rule_for(code)
    bad_path, good_path = fixture_dir / "bad.py", fixture_dir / "good.py"
    assert rule.effects, f"{code} declares no effects"

    flagged = static_findings(rule, bad_path)
    assert flagged, f"{code} does not flag {bad_path.name} statically"
    assert not static_findings(rule, good_path), f"{code} flags {good_path.name}"
    flagged_lines = {ln for f in flagged for ln in range(f.line, f.end_line + 1)}

    with isolated_torch_config():
        bad_mod = load_module(bad_path)
        bad = measure_module(bad_mod, bad_path, rule.effects)
    with isolated_torch_config():
        good_mod = load_module(good_path)
        good = measure_module(good_mod, good_path, rule.effects)
    unobservable = dict(getattr(bad_mod, "CPU_UNOBSERVABLE", {}) or {})
    for key in unobservable:
        assert key in {e.value for e in Effect}, f"CPU_UNOBSERVABLE names unknown effect {key!r}"

    def summary(m) -> str:
        return (
            f"eager_ok={m.eager_ok} ({m.eager_error}) compiled_ok={m.compiled_ok} ({m.compiled_error}) "
            f"allclose={m.outputs_allclose}/{m.inputs_allclose} sites={m.break_sites} others={m.other_break_sites} "
            f"skips={m.frame_skips} regions={m.compiled_regions} compiles={m.compiles_per_call} "
            f"recompiles={m.recompiles} limit={m.recompile_limit_hit} kernels={m.kernels_eager}->{m.kernels_compiled} "
            f"syncs={m.host_syncs_compiled} notes={m.notes} exercise_error={m.exercise_error}"
        )

    context = f"\nbad:  {summary(bad)}\ngood: {summary(good)}"
    checked = []
    for effect in rule.effects:
        effect = Effect(effect)
        if effect.value in unobservable:
            record_property(f"cpu_unobservable_{effect.value}", unobservable[effect.value])
            continue
        checked.append(effect.value)
        if effect is Effect.RUNTIME_ERROR:
            assert not (bad.eager_ok and bad.compiled_ok), f"{code}: bad.py runs in eager and compiled{context}"
            assert good.eager_ok and good.compiled_ok, f"{code}: good.py raises{context}"
            continue
        if effect is Effect.SILENT_DIVERGENCE:
            diverges = (bad.eager_ok is False and bad.compiled_ok) or (
                bad.eager_ok and bad.compiled_ok and not (bad.outputs_allclose and bad.inputs_allclose)
            )
            assert diverges, f"{code}: eager and compiled agree on bad.py{context}"
            assert good.eager_ok and good.compiled_ok, f"{code}: good.py raises{context}"
            assert good.outputs_allclose and good.inputs_allclose, f"{code}: good.py diverges{context}"
            continue
        # the remaining effects are about a module that runs under compile
        assert bad.compiled_ok, f"{code}: bad.py does not run compiled{context}"
        assert good.compiled_ok, f"{code}: good.py does not run compiled{context}"
        if effect is Effect.GRAPH_BREAK:
            sites = [s for s in bad.break_sites if Path(s.file).resolve() == bad_path.resolve()]
            assert sites, f"{code}: no graph break in bad.py{context}"
            matched = [s for s in sites if s.line in flagged_lines]
            assert matched, f"{code}: break sites {[s.line for s in sites]} are not flagged lines {sorted(flagged_lines)}{context}"
            assert not (good.break_sites or good.other_break_sites or good.frame_skips), f"{code}: good.py breaks{context}"
        elif effect is Effect.RECOMPILE:
            # a fixture whose exercise keeps every shape fixed says so (`BENIGN_RECOMPILES = 0`): then one
            # recompile is the rule's effect, not automatic dynamic shapes
            benign = getattr(bad_mod, "BENIGN_RECOMPILES", BENIGN_RECOMPILES)
            assert bad.recompiles > benign or bad.recompile_limit_hit, f"{code}: bad.py does not recompile{context}"
            assert good.recompiles <= benign and not good.recompile_limit_hit, f"{code}: good.py recompiles{context}"
        elif effect is Effect.EXTRA_KERNEL:
            assert bad.kernels_compiled is not None and good.kernels_compiled is not None, context
            assert bad.kernels_compiled > good.kernels_compiled, f"{code}: no extra kernel{context}"
        elif effect is Effect.HOST_SYNC:
            assert bad.host_syncs_compiled and bad.host_syncs_compiled > 0, f"{code}: no sync-prone op in bad.py{context}"
            assert good.host_syncs_compiled == 0, f"{code}: sync-prone op in good.py{context}"
    record_property("checked_effects", ",".join(checked))

    if rule.fix_applicability is not None and bad.eager_ok and good.eager_ok:
        with isolated_torch_config():
            assert allclose(eager_outputs(good_mod), eager_outputs(bad_mod)), f"{code}: good.py computes something else"
