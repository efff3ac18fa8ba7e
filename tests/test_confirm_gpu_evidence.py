"""docs/gpu-evidence.md is generated from the JSON next to it by scripts/gpu_evidence.py, not typed."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def _script():
    spec = importlib.util.spec_from_file_location("gpu_evidence", ROOT / "scripts" / "gpu_evidence.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_gpu_evidence_page_matches_its_data():
    ge = _script()
    data = DOCS / "gpu-evidence"
    doc = json.loads((data / "measure-cuda.json").read_text())
    cpu = json.loads((data / "measure-cpu.json").read_text())
    assert doc["device"] == "cuda" and "H200" in doc["device_name"]
    text = ge.render(doc, ge._rules(), ge._confirm_statuses(str(data / "confirm-gpu.json")), cpu,
                     (data / "notes.md").read_text())
    committed = (DOCS / "gpu-evidence.md").read_text()
    # the measurement tables and notes depend only on the JSON: they must be exactly what the script writes
    marker = "## Measurements (CUDA)"
    assert committed[committed.index(marker):] == text[text.index(marker):], (
        "docs/gpu-evidence.md is stale: regenerate it with scripts/gpu_evidence.py render (see its last line)"
    )
    for name in doc["fixtures"]:
        assert f"| {name} | bad |" in committed and f"| {name} | good |" in committed


def test_render_verdicts_from_measurements():
    ge = _script()
    bad = {"compiled_ok": True, "eager_ok": True, "break_sites": [["GB0124", "b.py", 3, "x"]], "recompiles": 0,
           "host_syncs_compiled": 1, "kernels_compiled": 3, "outputs_allclose": True, "inputs_allclose": True}
    good = dict(bad, break_sites=[], host_syncs_compiled=0, kernels_compiled=2)
    assert ge._observed("graph-break", bad, good, "bad.py") and not ge._observed("graph-break", good, bad, "good.py")
    assert ge._observed("host-sync", bad, good, "bad.py") and not ge._observed("host-sync", good, bad, "good.py")
    assert ge._observed("extra-kernel", bad, good, "bad.py")
    assert ge._observed("recompile", dict(bad, recompiles=8, recompile_limit_hit=True), None, "bad.py")
    assert not ge._observed("recompile", dict(bad, recompiles=1), None, "bad.py")
    assert ge._observed("graph-break", dict(bad, compiled_ok=False), None, "bad.py") is None
