"""The pure logic of bench/recall.py: reading Dynamo's log records and matching sites to findings.

No torch and no bench venv: the log texts below have the shape torch 2.13 writes."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

import recall_match as rm  # noqa: E402

SITE = "/venv/lib/python3.11/site-packages"
PACKAGES = ("timm", "transformers", "monai")

BREAK_RECORD = f"""Graph break in user code at {SITE}/torch/nn/functional.py:10
Graph Break Reason: Encountered graph break when attempting to trace CALL: a function call, e.g. f(x, y):

Unsupported Tensor.item() call with capture_scalar_outputs=False
  Explanation: Dynamo does not support tracing `Tensor.item()` with config.capture_scalar_outputs=False.

 For more details about this graph break, please visit: https://example.invalid/gb/gb0124.html

User code traceback:
  File "/work/run.py", line 16, in <module>
    c(x)
  File "{SITE}/timm/models/vit.py", line 120, in forward
    x = self.blocks(x)
        ^^^^^^^^^^^^^^
  File "{SITE}/timm/layers/attention.py", line 77, in forward
    scale = q.std().item()
            ^^^^^^^^^^^^^^
  File "{SITE}/torch/nn/functional.py", line 10, in helper
    return t.item()
"""

RECOMPILE_RECORD = f"""Recompiling function torch_dynamo_resume_in_forward_at_10 in {SITE}/monai/networks/nets/unet.py:10
    triggered by the following guard failure(s):
    - 1/1: 4 <= h.size()[0]  # if h.shape[0] > 3:  # monai/networks/nets/unet.py:12 in forward (_dynamo/variables/tensor.py:2606 in evaluate_expr)
    - 1/0: tensor 'h' size mismatch at index 0. expected 2, actual 3"""


def test_graph_break_site_is_innermost_frame_inside_the_packages():
    b = rm.parse_graph_break(BREAK_RECORD, [SITE], PACKAGES)
    assert (b["path"], b["line"], b["function"]) == ("timm/layers/attention.py", 77, "forward")
    assert b["code"] == "scale = q.std().item()"
    assert b["reason"] == "Unsupported Tensor.item() call with capture_scalar_outputs=False"
    assert b["gb"] == "gb0124"


def test_graph_break_outside_the_packages_and_other_records_are_not_sites():
    outside = BREAK_RECORD.replace(f"{SITE}/timm/", "/elsewhere/timm/")
    assert rm.parse_graph_break(outside, [SITE], PACKAGES) is None
    assert rm.parse_graph_break("Graph break (user stack suppressed due to duplicate)", [SITE], PACKAGES) is None


def test_recompile_guard_with_a_package_line_and_an_input_shape_guard():
    first, second = rm.parse_recompile(RECOMPILE_RECORD, [SITE], PACKAGES)
    assert (first["path"], first["line"], first["kind"]) == ("monai/networks/nets/unet.py", 12, "package-line")
    assert first["guard"] == "4 <= h.size()[0]"
    assert first["code"] == "if h.shape[0] > 3:"
    assert first["frame"] == "monai/networks/nets/unet.py"
    assert (second["path"], second["kind"]) == (None, "input-shape")


def test_recompile_kind_names_causes_without_a_package_line():
    assert rm.recompile_kind("GLOBAL_STATE changed: grad_mode", None, PACKAGES) == "global-state"
    assert rm.recompile_kind("L['self'].training == True", None, PACKAGES) == "training-flag"
    mode = "self._modules['bn1'].training == True  # if self.training:  # timm/layers/norm_act.py:113 in forward"
    assert rm.recompile_kind(mode, "timm/layers/norm_act.py", PACKAGES) == "package-line-mode-switch"
    assert rm.recompile_kind("x  # y  # nn/modules/linear.py:1 in f", "nn/modules/linear.py", PACKAGES) == "torch-line"


def _f(path, line, end_line, code="FL101", effects=("graph-break", "host-sync")):
    return rm.Finding(path, line, end_line, code, frozenset(effects))


def test_match_site_exact_then_span_then_miss():
    findings = [_f("a.py", 10, 10), _f("a.py", 20, 23, "FL104"), _f("a.py", 30, 30, "FL201", ("recompile",))]
    by_start, by_path = rm.index_findings(findings, rm.BREAK_EFFECTS)
    assert rm.match_site(("a.py", 10), by_start, by_path) == ("exact", ["FL101"])
    assert rm.match_site(("a.py", 22), by_start, by_path) == ("span", ["FL104"])
    assert rm.match_site(("a.py", 24), by_start, by_path) == ("miss", [])
    # a recompile-only finding never matches a break site, and another file's finding neither
    assert rm.match_site(("a.py", 30), by_start, by_path) == ("miss", [])
    assert rm.match_site(("b.py", 10), by_start, by_path) == ("miss", [])


def test_score_counts_recall_and_precision_on_executed_lines():
    findings = [
        _f("a.py", 10, 10),  # real break, executed
        _f("a.py", 40, 40),  # executed, no break recorded there: a false positive
        _f("a.py", 50, 50),  # never executed: not judged
        _f("a.py", 30, 30, "FL201", ("recompile",)),  # executed, its guard recorded
        _f("a.py", 35, 35, "FL208", ("recompile",)),  # executed, no guard recorded there
    ]
    s = rm.score(
        break_sites=[("a.py", 10), ("a.py", 11), ("a.py", 10)],
        recompile_causes=[("a.py", 30), ("a.py", 31)],
        executed={"a.py": {10, 11, 30, 35, 40}},
        findings=findings,
    )
    assert (s.break_exact, s.break_sites) == (1, 2)
    assert (s.recompile_exact, s.recompile_causes) == (1, 2)
    assert (s.executed_break_findings_real, s.executed_break_findings) == (1, 2)
    assert (s.executed_recompile_findings_real, s.executed_recompile_findings) == (1, 2)
    assert s.recompiles_by_rule == {"FL201": [1, 1], "FL208": [0, 1]}
    assert [(f.path, f.line) for f in s.unconfirmed] == [("a.py", 40)]  # listed in the report
    assert s.hits[("break", "a.py", 11)] == ("miss", [])


def test_line_runs_round_trip():
    lines = {1, 2, 3, 7, 9, 10}
    runs = rm.compress_lines(lines)
    assert runs == [[1, 3], [7, 7], [9, 10]]
    assert rm.expand_lines(runs) == lines


def _messages(code: str, source: str) -> list[str]:
    from fusionlint.api import lint_text

    return [f.message for f in lint_text(source, "m.py").findings if f.code == code]


HEAD_SRC = "import torch\nfrom torch import nn\n"


def test_the_conditions_the_rules_state_are_read_from_their_messages():
    # the bench reads what the rules write: these messages come from the rules themselves
    fp16 = _messages("FL102", HEAD_SRC + (
        "class L(nn.Module):\n    def forward(self, h):\n"
        "        if h.dtype == torch.float16 and not torch.isfinite(h).all():\n            h = h.clamp(-1, 1)\n"
        "        return h\n"))
    dynamic = _messages("FL103", HEAD_SRC + (
        "class L(nn.Module):\n    def forward(self, q, w: int = 4):\n        b, n, d = q.size()\n"
        "        c = torch.div(n, w, rounding_mode='trunc') - 1\n        return q.new_zeros((b, c + 1))\n"))
    plain = _messages("FL102", HEAD_SRC + (
        "class L(nn.Module):\n    def forward(self, h):\n        if h.sum() > 0:\n            h = h * 2\n        return h\n"))
    assert [rm.stated_condition(m) for m in fp16] == ["float16"]
    assert [rm.stated_condition(m) for m in dynamic] == ["dynamic"]
    config = _messages("FL102", HEAD_SRC + (
        "class L(nn.Module):\n    def forward(self, h):\n"
        "        if not self.config.use_cache and h.sum() > 0:\n            h = h * 2\n        return h\n"))
    assert [rm.stated_condition(m) for m in plain] == [None]
    assert [rm.stated_condition(m) for m in config] == ["config"]  # stated, but no pass measures it
    eager = _messages("FL101", HEAD_SRC + (
        "class L(nn.Module):\n    def forward(self, x: torch.Tensor):\n"
        "        for row in x:\n            x = x * row.sum().item()\n        return x * int(x.max())\n"))
    assert [rm.stated_condition(m) for m in eager] == [None, "eager"]  # the loop's own break; the line after it


def test_a_conditional_finding_is_real_only_when_its_conditions_pass_broke_at_its_line():
    f16 = rm.Finding("t/a.py", 10, 10, "FL102", frozenset({"graph-break"}), "x when `h.dtype == torch.float16` holds (Dynamo")
    dyn = rm.Finding("t/b.py", 20, 20, "FL103", frozenset({"graph-break"}), "host sync once `seq_len` is a dynamic size (")
    dyn2 = rm.Finding("t/b.py", 30, 30, "FL103", frozenset({"graph-break"}), "host sync once `n` is a dynamic size (")
    other = rm.Finding("t/c.py", 5, 5, "FL107", frozenset({"graph-break"}), "no condition here")
    config = rm.Finding("t/d.py", 7, 7, "FL102", frozenset({"graph-break"}), "x when `self.config.a != 1` holds (Dynamo reads the configuration")
    passes = {"dynamic": {("t/b.py", 20), ("t/a.py", 10)}}
    judged = {(j.finding.path, j.finding.line): (j.condition, j.verdict)
              for j in rm.score_conditions([f16, dyn, dyn2, other, config], passes)}
    assert judged == {
        ("t/a.py", 10): ("float16", "not measured"),  # a break in another condition's pass does not count
        ("t/b.py", 20): ("dynamic", "real"),
        ("t/b.py", 30): ("dynamic", "no break"),
        ("t/c.py", 5): (None, "no condition"),
        ("t/d.py", 7): ("config", "not measured"),
    }


# the `dynamic` log's record when an f-string fixed a symbolic height (timm's PatchEmbed, torch 2.13)
SPECIALIZED_RECORD = (
    'eval Eq(s53, 240) [guard added] f"Input height ({H}) should be divisible by patch size ({self.patch_size[0]})."'
    "  # timm/layers/patch_embed.py:129 in forward (_dynamo/variables/tensor.py:2606 in evaluate_expr), "
    'for more info run with TORCHDYNAMO_EXTENDED_DEBUG_GUARD_ADDED="Eq(s53, 240)"'
)
SIZE_RECOMPILE_RECORD = f"""Recompiling function forward in {SITE}/timm/models/vision_transformer.py:1344
    triggered by the following guard failure(s):
    - 0/1: tensor 'x' size mismatch at index 2. expected 240, actual 256
    - 0/0: tensor 'x' size mismatch at index 2. expected 224, actual 256
"""


def test_a_size_fixed_at_a_package_line_is_the_cause_of_the_next_size_recompile():
    spec = rm.parse_specialization(SPECIALIZED_RECORD, "0/1", PACKAGES)
    assert spec == {"entry": "0/1", "value": 240, "path": "timm/layers/patch_embed.py", "line": 129,
                    "code": 'f"Input height ({H}) should be divisible by patch size ({self.patch_size[0]})."'}
    assert rm.parse_specialization(SPECIALIZED_RECORD.replace("timm/", "torch/"), "0/1", PACKAGES) is None
    assert rm.parse_specialization("eval Ne(s53, 240) [guard added] x  # timm/a.py:3 in f", "0/1", PACKAGES) is None

    failures = rm.parse_recompile(SIZE_RECOMPILE_RECORD, [SITE], PACKAGES)
    assert [f["entry"] for f in failures] == ["0/1", "0/0"]
    attributed = rm.attribute_specializations(failures, [spec])
    # entry 0/1 was compiled with the height fixed to 240: that line caused its failure
    assert (attributed[0]["path"], attributed[0]["line"], attributed[0]["specialized"]) == ("timm/layers/patch_embed.py", 129, True)
    assert rm.recompile_kind(attributed[0]["guard"], attributed[0]["path"], PACKAGES) == "package-line"
    # entry 0/0 (the first, static compile) had no such line: an input-shape recompile, as before
    assert attributed[1]["path"] is None and "specialized" not in attributed[1]
    assert rm.recompile_kind(attributed[1]["guard"], None, PACKAGES) == "input-shape"
    # a value fixed in another entry, or another value, explains nothing
    assert rm.attribute_specializations(failures, [{**spec, "entry": "0/2"}])[0]["path"] is None
    assert rm.attribute_specializations(failures, [{**spec, "value": 256}])[0]["path"] is None


def test_conditional_targets_refuse_to_run_without_the_model_cache(tmp_path, monkeypatch):
    # a fresh machine has no cached plain measurements: the targets would come out empty and
    # `--rescore --conditional` would overwrite the saved conditional record with one that has no passes
    import recall

    monkeypatch.setattr(recall, "BENCH", tmp_path)
    versions = {"timm": "1.0", "torch": "2.13.0"}
    raw = {
        "models": [{"name": "timm:vit_tiny", "status": "ok"}],
        "coverage": {"timm/models/vit.py": [[10, 12]]},
        "break_sites": [],
    }
    message = "`int(n)` breaks the graph once `n` is a dynamic size"
    found = [rm.Finding("timm/models/vit.py", 11, 11, "FL101", frozenset({"graph-break"}), message)]
    assert rm.stated_condition(message) == "dynamic"
    try:
        recall.conditional_targets(raw, found, versions, None)
    except SystemExit as e:
        assert "--conditional needs the plain measurement" in str(e.code)
    else:
        raise AssertionError("conditional_targets ran without the cached measurements")

    # with the model's measurement cached, the model that ran line 11 is the target of the dynamic pass
    cached = recall.cache_dir("timm:vit_tiny", versions) / "timm__vit_tiny.json"
    cached.parent.mkdir(parents=True)
    cached.write_text(json.dumps({"coverage": {"timm/models/vit.py": [[11, 11]]}}))
    assert recall.conditional_targets(raw, found, versions, None) == {"dynamic": ["timm:vit_tiny"]}
