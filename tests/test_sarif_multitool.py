"""fusionlint's SARIF through Microsoft's SARIF multitool (`validate`), when it is installed.

``scripts/test.sh`` installs it, pinned, into the project (``npm install --prefix .cache/npm
@microsoft/sarif-multitool@5.7.0``) and puts ``.cache/npm/node_modules/.bin`` on PATH. The tests run
the first ``sarif-multitool`` found on PATH, else the one under ``.cache/npm``. When it (or Node.js)
is missing they skip, except in CI (``CI`` set) where they fail; they never fetch the package
themselves (no network in the middle of a test run).

The multitool exits 0 even when its rules fire, so the tests read its output SARIF file. They
run the SARIF rules and the GitHub ingestion rules (``--rule-kind "Sarif;Gh"``) at levels error
and warning; the note-level advice (Pascal-case rule names, code snippets, reachable help URIs,
version-control provenance) is about optional polish and not checked. The multitool is given
the vendored OASIS schema (``-j``): without it, it validates nothing against the schema.
One warning is expected, and only without a ``docs-url`` setting: SARIF2005 asks for the tool's
``informationUri``, and fusionlint has no public page to name, so it writes none rather than a
made-up one (the sample log, with ``docs_url``, must be entirely clean).
Caveat seen with 5.7.0: a log it cannot deserialize at all (e.g. ``"level": "severe"``) yields
an empty, "clean" output; the jsonschema tests in test_sarif.py catch those.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from test_sarif import RULES, sample_run

from fusionlint.report import sarif
from fusionlint.rule import RunResult

SCHEMA = Path(__file__).parent / "data" / "sarif-schema-2.1.0.json"
REPO = Path(__file__).resolve().parent.parent

INSTALL = "bash scripts/test.sh (runs npm install --prefix .cache/npm @microsoft/sarif-multitool@5.7.0)"
LOCAL_BIN = REPO / ".cache" / "npm" / "node_modules" / ".bin" / "sarif-multitool"


def _missing(reason: str) -> None:
    # Outside CI a missing tool skips with the reason; in CI (CI=true, set by .ci/run) it fails,
    # so the multitool check can never silently disappear from CI.
    if os.environ.get("CI"):
        pytest.fail(f"{reason}; CI needs it: {INSTALL}", pytrace=False)
    pytest.skip(f"{reason}; to run these tests: {INSTALL}", allow_module_level=True)


MULTITOOL = shutil.which("sarif-multitool") or (str(LOCAL_BIN) if LOCAL_BIN.exists() else None)
if shutil.which("node") is None:
    _missing("node is not on PATH (install Node.js)")
elif MULTITOOL is None:
    _missing("the SARIF multitool is not installed")


def multitool_findings(log_file: Path, out_dir: Path) -> list[str]:
    """Error- and warning-level findings of `sarif-multitool validate` on one SARIF file."""
    output = out_dir / (log_file.stem + ".validation.sarif")
    # bin.js of the npm package passes its arguments through a shell: quote the ';' lists.
    command = [
        MULTITOOL, "validate",
        "--json-schema", str(SCHEMA),
        "--rule-kind", '"Sarif;Gh"',
        "--level", '"Error;Warning"',
        "--log", "ForceOverwrite",
        "--output", str(output),
        str(log_file),
    ]
    proc = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(output.read_text(encoding="utf-8-sig"))
    (run,) = report["runs"]
    assert run["tool"]["driver"]["name"] == "Sarif.Multitool"
    assert run["invocations"][0]["executionSuccessful"] is True, proc.stdout
    rules = run["tool"]["driver"].get("rules", [])
    found = []
    for result in run["results"]:
        rule = rules[result["ruleIndex"]] if "ruleIndex" in result else {}
        message = result["message"]
        template = rule.get("messageStrings", {}).get(message.get("id"), {}).get("text", "")
        found.append(f"{result['ruleId']} {result.get('level', 'warning')}: {template} {message.get('arguments')}")
    return found


NO_INFORMATION_URI = "SARIF2005 warning"  # expected without docs-url: see the module docstring


def without_information_uri_warning(found: list[str]) -> list[str]:
    assert [f for f in found if f.startswith(NO_INFORMATION_URI)], found  # it is really checked
    return [f for f in found if not f.startswith(NO_INFORMATION_URI)]


def test_sample_log_passes_the_multitool(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    text = sarif.render(sample_run(root), rules=RULES, root=root, tool_version="0.1.0",
                        options={"category": "fusionlint", "docs_url": "https://docs.example.org/{code}"})
    log_file = tmp_path / "sample.sarif"
    log_file.write_text(text, encoding="utf-8")
    assert multitool_findings(log_file, tmp_path) == []


def test_empty_log_passes_the_multitool(tmp_path):
    text = sarif.render(RunResult(), rules=RULES, root=tmp_path, tool_version="0.1.0")
    log_file = tmp_path / "empty.sarif"
    log_file.write_text(text, encoding="utf-8")
    assert without_information_uri_warning(multitool_findings(log_file, tmp_path)) == []


def test_the_multitool_does_report_a_broken_log(tmp_path):
    """Proof that an empty finding list above means something."""
    root = tmp_path / "root"
    root.mkdir()
    log = json.loads(sarif.render(sample_run(root), rules=RULES, root=root, tool_version="0.1.0"))
    region = log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"]
    region["endLine"] = region["startLine"] - 1  # end before start
    del log["runs"][0]["tool"]["driver"]["rules"][0]["fullDescription"]  # GitHub requires it
    log_file = tmp_path / "broken.sarif"
    log_file.write_text(json.dumps(log), encoding="utf-8")
    found = multitool_findings(log_file, tmp_path)
    assert any(f.startswith("SARIF1007 error") for f in found), found
    assert any(f.startswith("GH2012 error") for f in found), found


def test_cli_output_on_fixtures_passes_the_multitool(tmp_path):
    cli = REPO / "fusionlint" / "cli.py"
    if not cli.exists():
        pytest.fail("fusionlint/cli.py does not exist yet: `fusionlint check --format sarif` is needed")
    proc = subprocess.run(
        [sys.executable, "-c", "from fusionlint.cli import main; main()",
         "check", "fixtures", "--format", "sarif"],
        cwd=REPO, capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode in (0, 1), proc.stderr
    log_file = tmp_path / "fixtures.sarif"
    log_file.write_text(proc.stdout, encoding="utf-8")
    assert json.loads(proc.stdout)["runs"][0]["results"], "the fixtures should produce findings"
    assert without_information_uri_warning(multitool_findings(log_file, tmp_path)) == []
