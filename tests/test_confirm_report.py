"""`--report report.html`: a self-contained page that renders in headless Chromium (Debian package
`chromium`, installed by scripts/test.sh when run as root) with the key elements present."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from fusionlint.confirm.orchestrate import Unit, UnitResult
from fusionlint.report.html import render_report, staircase_svg
from fusionlint.rule import Effect, Finding, RunResult, Severity
from tests.helpers import need

ROOT = Path(__file__).resolve().parent.parent
CHROME_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
    "--disable-sync", "--no-first-run", "--disable-dev-shm-usage",
]


def chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is required in CI (apt-get install -y chromium chromium-driver)")
        pytest.skip("chromium not installed (apt-get install -y chromium chromium-driver)")
    return path


class _Elements(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.found.append((tag, dict(attrs)))

    def having(self, tag: str, cls: str | None = None, **attrs) -> list[dict]:
        out = []
        for t, a in self.found:
            if t != tag:
                continue
            if cls is not None and cls not in (a.get("class") or "").split():
                continue
            if all(a.get(k.replace("_", "-")) == v for k, v in attrs.items()):
                out.append(a)
        return out


def render_in_chromium(page: Path, tmp_path: Path) -> _Elements:
    exe = chromium()
    proc = subprocess.run(
        [exe, *CHROME_FLAGS, f"--user-data-dir={tmp_path / 'chrome'}", "--dump-dom", page.resolve().as_uri()],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "</html>" in proc.stdout
    shot = tmp_path / "shot.png"
    proc2 = subprocess.run(
        [exe, *CHROME_FLAGS, f"--user-data-dir={tmp_path / 'chrome2'}", "--window-size=1200,1600", f"--screenshot={shot}",
         page.resolve().as_uri()],
        capture_output=True, text=True, timeout=300,
    )
    assert proc2.returncode == 0 and shot.stat().st_size > 10_000, proc2.stderr[-2000:]
    dom = _Elements()
    dom.feed(proc.stdout)
    return dom


def _synthetic(tmp_path: Path):
    src = tmp_path / "model.py"
    src.write_text(
        "import torch\nfrom torch import nn\n\n\nclass Model(nn.Module):\n    def forward(self, x):\n"
        "        s = x.mean().item()\n        return x * s\n"
    )
    finding = Finding("model.py", 7, 13, 7, 28, "FL101", "tensor-to-python", "`.item()` <breaks> & syncs",
                      (Effect.GRAPH_BREAK,), Severity.WARNING, context="Model.forward",
                      confirmation={"status": "confirmed", "summary": "graph break: GB0124 at line 7"})
    meas = {
        "device": "cpu", "device_name": "x86_64", "torch_version": "2.13.0+cpu", "eager_ok": True, "compiled_ok": True,
        "break_sites": [["GB0124", str(src), 7, "Unsupported Tensor.item() call"]], "frame_skips": 0,
        "compiled_regions": 2, "compiles_per_call": [2, 0], "recompiles": 0, "recompile_limit_hit": False,
        "kernels_eager": 3, "kernels_compiled": 2, "host_syncs_eager": 1, "host_syncs_compiled": 1,
        "sync_method": "cpu-proxy", "eager_us": 20.0, "compiled_us": 45.5, "outputs_allclose": True,
        "timeline": {"eager": [["aten::mean", 0.0, 2.0], ["aten::item", 3.0, 1.0], ["aten::mul", 5.0, 2.0]],
                     "compiled": [["graph_0_cpp_fused_mean_0", 0.0, 4.0], ["graph_1_cpp_fused_mul_0", 9.0, 3.0]]},
    }
    unit = Unit("model.py", str(src), "Model", [finding])
    worker = {"ok": True, "example": {"kind": "fixture", "detail": "Model() + example_inputs()"}, "measurement": meas}
    failed = Unit("other.py", str(tmp_path / "other.py"), "Other", [
        Finding("other.py", 3, 1, 3, 5, "FL101", "tensor-to-python", "x", (Effect.GRAPH_BREAK,), Severity.WARNING,
                context="Other.forward", confirmation={"status": "unconfirmed", "reason": "timed out after 5 s"})
    ])
    result = RunResult(findings=unit.findings + failed.findings, files_checked=2)
    return result, [UnitResult(unit, worker), UnitResult(failed, {"ok": False, "reason": "timed out after 5 s"})]


def test_report_is_self_contained_and_escaped(tmp_path):
    result, units = _synthetic(tmp_path)
    page = render_report(result, units, root=tmp_path)
    lowered = page.lower()
    assert "<script" not in lowered and "<link" not in lowered and "src=" not in lowered
    assert "url(" not in lowered and "@import" not in lowered
    assert lowered.count("http") == lowered.count('xmlns="http://www.w3.org/2000/svg"')  # only the SVG namespace
    assert "&lt;breaks&gt; &amp; syncs" in page and "<breaks>" not in page


def test_staircase_counts_launches():
    svg = staircase_svg({"eager": [["a", 0, 1], ["b", 2, 1], ["c", 4, 1]], "compiled": [["k", 0, 3]]})
    assert 'class="eager" data-launches="3"' in svg and 'class="compiled" data-launches="1"' in svg
    assert "No launch timeline" in staircase_svg(None)


def test_report_renders_in_chromium(tmp_path):
    result, units = _synthetic(tmp_path)
    page = tmp_path / "report.html"
    page.write_text(render_report(result, units, root=tmp_path), encoding="utf-8")
    dom = render_in_chromium(page, tmp_path)
    assert len(dom.having("section", "module")) == 2
    assert dom.having("svg", "staircase")
    assert dom.having("polyline", "eager", data_launches="3")
    assert dom.having("polyline", "compiled", data_launches="2")
    assert len(dom.having("rect", "launch")) == 5
    assert dom.having("span", "break-site", id="L7")
    assert dom.having("span", "finding", id="L7")
    assert dom.having("span", "note", data_code="FL101")
    assert dom.having("span", "note", data_gb="GB0124")
    assert dom.having("span", "confirmed") and dom.having("span", "unconfirmed")
    assert dom.having("div", "count", data_status="confirmed")


@pytest.mark.slow
def test_cli_report_from_a_real_run(tmp_path):
    need("torch", "--report comes from a --confirm run")
    page = tmp_path / "r.html"
    proc = subprocess.run(
        [sys.executable, "-m", "fusionlint.cli", "check", "tests/confirm_data/ok.py", "--select", "FL101",
         "--confirm", "--device", "cpu", "--report", str(page), "--confirm-timeout", "900", "--no-confirm-cache"],
        cwd=ROOT, capture_output=True, text=True, timeout=600, env=dict(os.environ, PYTHONPATH=str(ROOT)),
    )
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert f"wrote {page}" in proc.stderr
    dom = render_in_chromium(page, tmp_path)
    (section,) = dom.having("section", "module")
    assert section["data-label"] == "tests/confirm_data/ok.py::Model"
    eager = dom.having("polyline", "eager")
    compiled = dom.having("polyline", "compiled")
    assert eager and compiled
    assert int(eager[0]["data-launches"]) > 0 and int(compiled[0]["data-launches"]) > 0
    assert dom.having("span", "break-site", id="L13")
    assert dom.having("span", "note", data_gb="GB0124")


def test_report_shows_recompiles_kernels_and_a_slower_than_eager_callout(tmp_path):
    result, units = _synthetic(tmp_path)
    meas = units[0].worker["measurement"]
    src = str(tmp_path / "model.py")
    meas["recompile_events"] = [{"guard": "self.t == 4.0", "frames": [[src, 8, "forward"]], "function": [src, 6, "forward"]}]
    meas["kernel_names_compiled"] = {"inductor:cpp_fused": 2, "aten::mm": 1}
    meas["break_sites"].append(["GB0170", str(tmp_path / "helpers.py"), 5, "Data-dependent branching",
                                [[src, 7, "forward"], [str(tmp_path / "helpers.py"), 5, "clip"]]])
    (tmp_path / "helpers.py").write_text("\n\n\n\n    if x.max() > 1:\n")
    page = render_report(result, units, root=tmp_path)
    dom = _Elements()
    dom.feed(page)
    (callout,) = [a for a in dom.having("p", "callout")]
    assert "slower than eager" in page and "0.44× eager" in page  # 20 µs eager vs 45.5 µs compiled
    assert "guard <code class=\"src\">self.t == 4.0</code> failed — model.py:8" in page
    assert '<code class="src">return x * s</code>' in page  # the guarded line's source
    assert "helpers.py:5" in page and "via forward (model.py:7) → clip (helpers.py:5)" in page
    assert dom.having("details") and "inductor:cpp_fused</code> ×2" in page
    assert 'title="compiled: inductor:cpp_fused ×2, aten::mm ×1"' in page


def test_report_links_rule_codes_to_the_configured_docs(tmp_path):
    result, units = _synthetic(tmp_path)
    page = render_report(result, units, root=tmp_path, docs_url="https://docs.example/rules/{code}")
    assert '<a href="https://docs.example/rules/FL101">FL101</a>' in page
    assert "<a href" not in render_report(result, units, root=tmp_path)


# ---------------------------------------------------------------------------- a 700 px wide window
# Appended to a copy of the page (the report itself has no script): opens every <details>, then
# writes what the layout measured into <body data-*> for --dump-dom to return.
_LAYOUT_PROBE = """<script>
addEventListener('load', () => {
  document.querySelectorAll('details').forEach(d => { d.open = true; });
  const root = document.documentElement;
  let legend = 0;
  document.querySelectorAll('svg.staircase').forEach(svg => {
    const width = svg.viewBox.baseVal.width;
    svg.querySelectorAll('text').forEach(t => { const b = t.getBBox(); legend = Math.max(legend, b.x + b.width - width); });
  });
  document.body.dataset.scrollWidth = root.scrollWidth;
  document.body.dataset.clientWidth = root.clientWidth;
  document.body.dataset.svgTextPastEdge = Math.ceil(legend);
});
</script>"""


def layout_at(page: Path, tmp_path: Path, width: int) -> dict:
    probe = tmp_path / f"probe-{width}.html"
    probe.write_text(page.read_text(encoding="utf-8").replace("</body>", _LAYOUT_PROBE + "</body>"), encoding="utf-8")
    proc = subprocess.run(
        [chromium(), *CHROME_FLAGS, f"--user-data-dir={tmp_path / 'chrome-layout'}", f"--window-size={width},2000",
         "--dump-dom", probe.resolve().as_uri()],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    dom = _Elements()
    dom.feed(proc.stdout)
    (body,) = dom.having("body")
    return {k: int(body[f"data-{k}"]) for k in ("scroll-width", "client-width", "svg-text-past-edge")}


def _long_names(tmp_path: Path):
    """The synthetic report with what real runs produce: a 270-character Triton kernel name, a guard
    on a deep attribute path, a break in a helper under long directory names, a long source line."""
    result, units = _synthetic(tmp_path)
    meas = units[0].worker["measurement"]
    src = tmp_path / "model.py"
    kernel = "triton_per_fused__softmax_add_clamp_div_mul_native_layer_norm_neg_sub_sum_transpose_view_" * 3
    meas["kernel_names_compiled"] = {kernel: 32, "aten::mm": 64}
    meas["kernel_names_eager"] = {kernel: 1}
    guard = "___as_tensor(self.blocks[0].attention.threshold_schedule.current_value_for_this_step).item() == 4.660326739534949"
    meas["recompile_events"] = [
        {"guard": guard * 2, "frames": [[str(src), 8, "forward"]], "function": [str(src), 6, "forward"]},
        {"guard": "x", "frames": [], "function": [None, None, None]},
    ]
    deep = tmp_path / ("a_directory_name_without_any_break_" * 4)
    deep.mkdir()
    helper = deep / "helpers_with_a_long_file_name.py"
    helper.write_text("\n\n\n\n    if x.max() > 1: y = scaled_dot_product_attention(query_states_projected_with_a_long_name, key_states)\n")
    meas["break_sites"].append(["GB0170", str(helper), 5, "Data-dependent branching " + "x" * 200,
                                [[str(src), 7, "forward"], [str(helper), 5, "clip"]]])
    meas["compiles_per_call"] = [1] * 200
    meas["timeline"]["compiled"] = [[kernel, float(i), 0.5] for i in range(1234)]  # a four-digit legend
    src.write_text(src.read_text() + "        return scaled_dot_product_attention(" + "query_states_projected, " * 8 + "v)\n")
    units[0].unit.findings[0].message = "`.item()` " + "averyverylongwordwithoutspaces" * 6
    return result, units


def test_report_fits_a_700px_window(tmp_path):
    """No horizontal scroll at 700 px: long kernel names, guards, paths and break reasons wrap inside
    their box, the source scrolls inside its own, and the staircase's legend stays inside the SVG."""
    result, units = _long_names(tmp_path)
    page = tmp_path / "report.html"
    page.write_text(render_report(result, units, root=tmp_path), encoding="utf-8")
    text = page.read_text()
    assert "no source location" in text and ":None" not in text  # the recompile torch gave no place for
    layout = layout_at(page, tmp_path, 700)
    assert 600 < layout["client-width"] <= 700, layout  # the window size took (less a scroll bar)
    assert layout["scroll-width"] <= layout["client-width"], layout
    assert layout["svg-text-past-edge"] <= 0, layout
