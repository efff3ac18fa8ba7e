"""SARIF output: schema-valid, shaped for GitHub code scanning, fingerprints like upload-sarif."""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path
from urllib.parse import unquote, urlsplit

import jsonschema
import pytest

from fusionlint.report import sarif
from fusionlint.report.sarif import line_hashes
from fusionlint.rule import (
    Applicability,
    Edit,
    Effect,
    FileError,
    Finding,
    Fix,
    Rule,
    RunResult,
    Severity,
)

DATA = Path(__file__).parent / "data"
SCHEMA_PATH = DATA / "sarif-schema-2.1.0.json"


# --------------------------------------------------------------------------- schema helpers


@pytest.fixture(scope="module")
def schema() -> dict:
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


def schema_errors(schema: dict, log: dict) -> list[str]:
    """Every violation, from the validator the schema declares (draft-04) and from draft-07."""
    messages = []
    declared = jsonschema.validators.validator_for(schema)
    assert declared is jsonschema.Draft4Validator  # what the OASIS file says it is
    for cls in (jsonschema.Draft4Validator, jsonschema.Draft7Validator):
        validator = cls(schema, format_checker=cls.FORMAT_CHECKER)
        for error in validator.iter_errors(log):
            path = "/".join(str(p) for p in error.absolute_path)
            messages.append(f"{cls.__name__}: {path}: {error.message}")
    return messages


def test_vendored_schema_is_the_oasis_file(schema):
    readme = (DATA / "README.md").read_text(encoding="utf-8")
    digest = hashlib.sha256(SCHEMA_PATH.read_bytes()).hexdigest()
    assert digest in readme, "tests/data/README.md must state the sha256 of the vendored schema"
    assert schema["id"].startswith("https://docs.oasis-open.org/sarif/sarif/v2.1.0/")
    assert schema["properties"]["version"]["enum"] == ["2.1.0"]


def test_validation_is_not_vacuous(schema, tmp_path):
    """The validator must reject broken logs, or a passing validation proves nothing."""
    log = json.loads(render(sample_run(tmp_path), tmp_path))
    assert schema_errors(schema, log) == []

    broken = json.loads(json.dumps(log))
    broken["runs"][0]["results"][0]["level"] = "severe"
    assert any("severe" in m for m in schema_errors(schema, broken))

    broken = json.loads(json.dumps(log))
    del broken["runs"][0]["tool"]["driver"]["name"]
    assert any("'name' is a required property" in m for m in schema_errors(schema, broken))

    broken = json.loads(json.dumps(log))
    region = broken["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"]
    region["startLine"] = 0
    assert schema_errors(schema, broken)


# --------------------------------------------------------------------------- sample run


class ViewAfterPermute(Rule):
    code = "FL301"
    name = "view-after-permute"
    message = "`.view()` on the result of `.permute()` raises: the tensor is not contiguous"
    effects = (Effect.RUNTIME_ERROR,)
    severity = Severity.ERROR
    fix_applicability = Applicability.SAFE
    docs = """
## What it does
Flags `.view(...)` called on the result of `.permute(...)` or `.transpose(...)`.

## Why is this bad?
The permuted tensor is not contiguous, so `.view` raises in eager mode and
`torch.compile` fails while tracing (measured on torch 2.13.0 CPU).

## Example
```python
y = x.permute(0, 2, 1).view(b, -1)
```

## Use instead
```python
y = x.permute(0, 2, 1).reshape(b, -1)
```
"""


class TensorToPython(Rule):
    code = "FL101"
    name = "tensor-to-python"
    message = "`.item()` turns a tensor into a Python number: graph break + host sync"
    effects = (Effect.GRAPH_BREAK, Effect.HOST_SYNC)
    fix_applicability = Applicability.UNSAFE
    precision = "medium"
    docs = """
## What it does
Flags `.item()`, `.tolist()`, `float(t)` on tensors inside compiled code.

## Why is this bad?
Graph break (GB0124) and a device-to-host sync.
"""


class ShapeHint(Rule):
    code = "FL501"
    name = "shape-hint"
    message = "a hint"
    effects = (Effect.RECOMPILE,)
    severity = Severity.INFO
    docs = ""  # no docs: the SARIF falls back to the message


class NeverUsed(Rule):
    code = "FL999"
    name = "never-used"
    message = "unused"
    effects = (Effect.EXTRA_KERNEL,)


RULES = {r.code: r for r in (ViewAfterPermute, TensorToPython, ShapeHint, NeverUsed)}

MODEL = """\
import torch
from torch import nn


class Model(nn.Module):
    def forward(self, x):
        t = x.sum().item()
        return x.permute(0, 2, 1).view(x.shape[0], -1) * t  # «café»
"""

UNICODE_PATH = "modèles/réseau ü.py"
CONFIRMATION = {
    "status": "confirmed",
    "device": "cpu",
    "torch": "2.13.0",
    "graph_breaks": [{"line": 7, "reason": "Tensor.item() (GB0124)"}],
    "time_ms": {"eager": 0.12, "compiled": float("nan")},
}


def sample_run(root: Path) -> RunResult:
    (root / "pkg").mkdir()
    (root / "pkg" / "model.py").write_text(MODEL, encoding="utf-8")
    (root / "modèles").mkdir()
    (root / UNICODE_PATH).write_text(MODEL, encoding="utf-8")
    col = MODEL.splitlines()[7].index(".view") + 2  # 1-based column of "view"
    view_fix = Fix(
        Applicability.SAFE,
        (Edit(8, col, 8, col + 4, "reshape"),),
        title="Use `.reshape()`",
    )
    findings = [
        Finding(
            path="pkg/model.py", line=8, column=16, end_line=8, end_column=56,
            code="FL301", name="view-after-permute",
            message="`.view()` after `.permute()` raises → use `.reshape()`",
            effects=(Effect.RUNTIME_ERROR,), severity=Severity.ERROR,
            context="Model.forward", fix=view_fix,
        ),
        Finding(
            path="pkg/model.py", line=7, column=13, end_line=7, end_column=27,
            code="FL101", name="tensor-to-python",
            message="`x.sum().item()` turns a tensor into a Python number",
            effects=(Effect.GRAPH_BREAK, Effect.HOST_SYNC), severity=Severity.WARNING,
            context="Model.forward",
            fix=Fix(Applicability.UNSAFE, (Edit(7, 13, 7, 27, "x.sum()"),), title="keep a tensor"),
            confirmation=CONFIRMATION,
        ),
        Finding(
            path=UNICODE_PATH, line=7, column=13, end_line=8, end_column=10,
            code="FL101", name="tensor-to-python",
            message="Unicode: «température» ≠ 😀",
            effects=(Effect.GRAPH_BREAK, Effect.HOST_SYNC), severity=Severity.WARNING,
        ),
        Finding(
            path="pkg/gone.py", line=3, column=1, end_line=3, end_column=5,
            code="FL501", name="shape-hint", message="hint",
            effects=(Effect.RECOMPILE,), severity=Severity.INFO,
        ),
    ]
    errors = [
        FileError(path="pkg/broken.py", message="invalid syntax", line=4, column=9),
        FileError(path="pkg/binary.py", message="cannot decode: not UTF-8"),
    ]
    return RunResult(findings=findings, errors=errors, files_checked=5)


def render(run: RunResult, root: Path, **options) -> str:
    return sarif.render(run, rules=RULES, root=root, tool_version="0.1.0", options=options)


@pytest.fixture
def sample(tmp_path) -> dict:
    text = render(sample_run(tmp_path), tmp_path)
    assert text.endswith("\n")
    return json.loads(text)


def results_by_rule(log: dict) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for r in log["runs"][0]["results"]:
        out.setdefault(r["ruleId"], []).append(r)
    return out


# --------------------------------------------------------------------------- contents


def test_sample_validates_against_oasis_schema(schema, sample):
    assert schema_errors(schema, sample) == []


def test_empty_run_is_valid_and_has_empty_results(schema, tmp_path):
    log = json.loads(render(RunResult(), tmp_path))
    assert schema_errors(schema, log) == []
    run = log["runs"][0]
    assert run["results"] == []  # GitHub requires the array even when empty
    assert run["tool"]["driver"]["rules"] == []
    assert run["invocations"][0]["executionSuccessful"] is True
    assert "toolExecutionNotifications" not in run["invocations"][0]


def test_log_header_and_run(sample, tmp_path):
    assert list(sample) == ["$schema", "version", "runs"]
    assert sample["version"] == "2.1.0"
    assert sample["$schema"].endswith("sarif-schema-2.1.0.json")
    (run,) = sample["runs"]
    assert run["columnKind"] == "unicodeCodePoints"
    base = run["originalUriBaseIds"]["%SRCROOT%"]["uri"]
    assert base == tmp_path.resolve().as_uri() + "/"
    driver = run["tool"]["driver"]
    assert driver["name"] == "fusionlint"
    assert driver["version"] == "0.1.0"
    # fusionlint publishes no docs site: without a docs-url setting no link is invented.
    assert "informationUri" not in driver
    assert all("helpUri" not in rule for rule in driver["rules"])
    assert "automationDetails" not in run


def test_rules_are_the_used_ones_with_metadata(sample):
    driver = sample["runs"][0]["tool"]["driver"]
    rules = driver["rules"]
    assert [r["id"] for r in rules] == ["FL101", "FL301", "FL501"]  # FL999 has no result
    fl301 = rules[1]
    assert fl301["name"] == "view-after-permute"
    # The first sentence of "What it does", not some other paragraph of the docs.
    assert fl301["shortDescription"]["text"] == (
        "Flags `.view(...)` called on the result of `.permute(...)` or `.transpose(...)`."
    )
    assert "not contiguous" in fl301["fullDescription"]["text"]
    assert "```" not in fl301["fullDescription"]["text"]
    assert fl301["help"]["markdown"] == ViewAfterPermute.docs.strip()
    text = fl301["help"]["text"]  # the whole docs as plain text: every section, no markup
    assert "What it does" in text and "Use instead" in text and "reshape(b, -1)" in text
    assert "```" not in text and "##" not in text
    assert fl301["defaultConfiguration"]["level"] == "error"
    assert fl301["properties"]["tags"] == ["runtime-error", "torch.compile"]
    assert fl301["properties"]["precision"] == "high"
    assert fl301["properties"]["problem.severity"] == "error"
    assert "security-severity" not in fl301["properties"]

    fl101 = rules[0]
    # "warning" is SARIF's default level: it must still be written out.
    assert fl101["defaultConfiguration"]["level"] == "warning"
    assert fl101["properties"]["tags"] == ["graph-break", "host-sync", "torch.compile"]
    assert fl101["properties"]["precision"] == "medium"  # class attribute override
    assert fl101["properties"]["problem.severity"] == "warning"

    fl501 = rules[2]
    assert fl501["defaultConfiguration"]["level"] == "note"
    assert fl501["properties"]["problem.severity"] == "recommendation"
    assert fl501["shortDescription"]["text"] == "a hint"  # no docs: the message


def test_docs_url_template_gives_help_and_information_uris(schema, tmp_path):
    log = json.loads(
        render(sample_run(tmp_path), tmp_path, docs_url="https://docs.example.org/rules/{code}.html#{name}")
    )
    assert schema_errors(schema, log) == []
    driver = log["runs"][0]["tool"]["driver"]
    assert driver["informationUri"] == "https://docs.example.org/rules/"
    links = {r["id"]: r["helpUri"] for r in driver["rules"]}
    assert links == {
        "FL101": "https://docs.example.org/rules/FL101.html#tensor-to-python",
        "FL301": "https://docs.example.org/rules/FL301.html#view-after-permute",
        "FL501": "https://docs.example.org/rules/FL501.html#shape-hint",
    }
    # A template without placeholders is one page for every rule and for the tool.
    (tmp_path / "b").mkdir()
    log = json.loads(render(sample_run(tmp_path / "b"), tmp_path / "b", docs_url="https://wiki.example.org/fl"))
    driver = log["runs"][0]["tool"]["driver"]
    assert driver["informationUri"] == "https://wiki.example.org/fl"
    assert {r["helpUri"] for r in driver["rules"]} == {"https://wiki.example.org/fl"}


def test_results_point_at_their_rule_and_region(sample):
    run = sample["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    for result in run["results"]:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
        assert result["level"] in ("error", "warning", "note")
        (location,) = result["locations"]
        artifact = location["physicalLocation"]["artifactLocation"]
        assert artifact["uriBaseId"] == "%SRCROOT%"
        assert not artifact["uri"].startswith("/")
    (fl301,) = results_by_rule(sample)["FL301"]
    assert fl301["level"] == "error"
    assert fl301["message"]["text"] == "`.view()` after `.permute()` raises → use `.reshape()`"
    physical = fl301["locations"][0]["physicalLocation"]
    assert physical["artifactLocation"]["uri"] == "pkg/model.py"
    assert physical["region"] == {"startLine": 8, "startColumn": 16, "endLine": 8, "endColumn": 56}
    assert fl301["properties"] == {"context": "Model.forward"}
    warnings = results_by_rule(sample)["FL101"]
    assert all(r["level"] == "warning" for r in warnings)  # explicit, not left to the default


def test_unicode_path_is_percent_encoded_and_round_trips(sample):
    (unicode_result,) = [
        r for r in results_by_rule(sample)["FL101"] if "température" in r["message"]["text"]
    ]
    uri = unicode_result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert uri == "mod%C3%A8les/r%C3%A9seau%20%C3%BC.py"
    assert uri.isascii() and " " not in uri
    assert unquote(uri) == UNICODE_PATH
    assert urlsplit(uri).scheme == ""  # a relative reference, resolved against %SRCROOT%
    assert unicode_result["message"]["text"] == "Unicode: «température» ≠ 😀"


def test_only_safe_fixes_are_exported(sample):
    (fl301,) = results_by_rule(sample)["FL301"]
    (fix,) = fl301["fixes"]
    assert fix["description"]["text"] == "Use `.reshape()`"
    (change,) = fix["artifactChanges"]
    assert change["artifactLocation"] == {"uri": "pkg/model.py", "uriBaseId": "%SRCROOT%"}
    (replacement,) = change["replacements"]
    col = MODEL.splitlines()[7].index(".view") + 2
    assert replacement["deletedRegion"] == {
        "startLine": 8, "startColumn": col, "endLine": 8, "endColumn": col + 4,
    }
    assert replacement["insertedContent"] == {"text": "reshape"}
    # Applying the replacement to the file gives the fixed line.
    line = MODEL.splitlines()[7]
    fixed = line[: col - 1] + "reshape" + line[col + 3 :]
    assert ".permute(0, 2, 1).reshape(x.shape[0], -1)" in fixed
    # FL101's fix is unsafe: not exported.
    assert all("fixes" not in r for r in results_by_rule(sample)["FL101"])


def test_confirmation_evidence_goes_to_properties(sample):
    confirmed = [r for r in results_by_rule(sample)["FL101"] if "confirmation" in r.get("properties", {})]
    (result,) = confirmed
    evidence = result["properties"]["confirmation"]
    assert evidence["status"] == "confirmed"
    assert evidence["graph_breaks"] == [{"line": 7, "reason": "Tensor.item() (GB0124)"}]
    assert evidence["time_ms"] == {"eager": 0.12, "compiled": "nan"}  # JSON has no NaN
    assert result["properties"]["context"] == "Model.forward"


def test_file_errors_are_tool_notifications(sample):
    run = sample["runs"][0]
    (invocation,) = run["invocations"]
    # A user's file that does not parse is not a failure of the tool.
    assert invocation["executionSuccessful"] is True
    notes = invocation["toolExecutionNotifications"]
    assert [n["level"] for n in notes] == ["error", "error"]
    by_path = {n["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]: n for n in notes}
    broken = by_path["pkg/broken.py"]
    assert "invalid syntax" in broken["message"]["text"]
    assert broken["locations"][0]["physicalLocation"]["region"] == {"startLine": 4, "startColumn": 9}
    assert "region" not in by_path["pkg/binary.py"]["locations"][0]["physicalLocation"]
    descriptors = run["tool"]["driver"]["notifications"]
    for note in notes:
        assert descriptors[note["descriptor"]["index"]]["id"] == note["descriptor"]["id"] == "FL000"


def test_internal_errors_make_the_execution_unsuccessful(schema, tmp_path):
    crash = FileError(path="pkg/model.py", message="internal error: KeyError: 'x'", code="internal")
    log = json.loads(render(RunResult(), tmp_path, internal_errors=[crash]))
    (invocation,) = log["runs"][0]["invocations"]
    assert invocation["executionSuccessful"] is False
    (note,) = invocation["toolExecutionNotifications"]
    assert note["level"] == "error" and "KeyError" in note["message"]["text"]
    (descriptor,) = log["runs"][0]["tool"]["driver"]["notifications"]
    assert descriptor["id"] == note["descriptor"]["id"] == "internal"
    assert descriptor["name"] == "internal-error"
    assert schema_errors(schema, log) == []

    # The same error reported among result.errors counts too.
    log = json.loads(render(RunResult(errors=[crash]), tmp_path))
    assert log["runs"][0]["invocations"][0]["executionSuccessful"] is False
    # And the caller can always decide.
    log = json.loads(render(RunResult(), tmp_path, execution_successful=False))
    assert log["runs"][0]["invocations"][0]["executionSuccessful"] is False


@pytest.mark.parametrize(
    "category, expected", [("fusionlint", "fusionlint/"), ("fusionlint/gpu/", "fusionlint/gpu/")]
)
def test_category_becomes_automation_id_like_upload_sarif(schema, tmp_path, category, expected):
    log = json.loads(render(RunResult(), tmp_path, category=category))
    assert log["runs"][0]["automationDetails"] == {"id": expected}
    assert schema_errors(schema, log) == []


def test_unknown_rule_code_still_gets_a_descriptor(schema, tmp_path):
    finding = Finding(
        path="a.py", line=1, column=1, end_line=1, end_column=2, code="FL777", name="mystery",
        message="m", effects=(Effect.GRAPH_BREAK,), severity=Severity.WARNING,
    )
    log = json.loads(render(RunResult(findings=[finding]), tmp_path))
    assert log["runs"][0]["tool"]["driver"]["rules"][0]["id"] == "FL777"
    assert schema_errors(schema, log) == []


def test_path_outside_root_is_an_absolute_file_uri(schema, tmp_path):
    outside = tmp_path / "elsewhere.py"
    outside.write_text("x = 1\n")
    root = tmp_path / "root"
    root.mkdir()
    finding = Finding(
        path=outside.as_posix(), line=1, column=1, end_line=1, end_column=2, code="FL101",
        name="tensor-to-python", message="m", effects=(Effect.GRAPH_BREAK,),
        severity=Severity.WARNING,
    )
    log = json.loads(render(RunResult(findings=[finding]), root))
    (result,) = log["runs"][0]["results"]
    artifact = result["locations"][0]["physicalLocation"]["artifactLocation"]
    assert artifact == {"uri": outside.resolve().as_uri()}
    # upload-sarif ignores files outside the checkout, so we do not fingerprint them either.
    assert "partialFingerprints" not in result
    assert schema_errors(schema, log) == []


def test_uris_are_relative_to_the_git_repository_not_the_project_root(schema, tmp_path):
    """Monorepo: fusionlint's root (its pyproject.toml) is packages/model, GitHub's is the repo."""
    (tmp_path / ".git").mkdir()
    project = tmp_path / "packages" / "model"
    (project / "pkg").mkdir(parents=True)
    (project / "pkg" / "model.py").write_text(MODEL, encoding="utf-8")
    (tmp_path / "packages" / "shared").mkdir()
    (tmp_path / "packages" / "shared" / "util.py").write_text(MODEL, encoding="utf-8")

    def at(path: str) -> Finding:
        return Finding(
            path=path, line=8, column=16, end_line=8, end_column=56, code="FL301",
            name="view-after-permute", message="m", effects=(Effect.RUNTIME_ERROR,),
            severity=Severity.ERROR,
        )

    run = RunResult(findings=[at("pkg/model.py"), at("../shared/util.py")],
                    errors=[FileError(path="pkg/broken.py", message="syntax error", line=1)])
    log = json.loads(render(run, project))
    assert schema_errors(schema, log) == []
    assert log["runs"][0]["originalUriBaseIds"]["%SRCROOT%"]["uri"] == tmp_path.resolve().as_uri() + "/"
    uris = [r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
            for r in log["runs"][0]["results"]]
    assert sorted(uris) == ["packages/model/pkg/model.py", "packages/shared/util.py"]
    expected = line_hashes(MODEL)[7]
    for result in log["runs"][0]["results"]:
        assert result["partialFingerprints"]["primaryLocationLineHash"] == expected
    (note,) = log["runs"][0]["invocations"][0]["toolExecutionNotifications"]
    assert note["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == (
        "packages/model/pkg/broken.py"
    )


# --------------------------------------------------------------------------- fingerprints


def test_results_carry_the_line_hash_of_their_start_line(sample, tmp_path):
    expected = line_hashes(MODEL)
    for result in sample["runs"][0]["results"]:
        uri = result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        line = result["locations"][0]["physicalLocation"]["region"]["startLine"]
        if unquote(uri) == "pkg/gone.py":
            # The file does not exist: no fingerprint rather than a wrong one.
            assert "partialFingerprints" not in result
            continue
        assert result["partialFingerprints"] == {"primaryLocationLineHash": expected[line - 1]}


def test_line_hash_worked_by_hand():
    """A tiny file, hashed with the formula written out.

    GitHub's algorithm (codeql-action src/fingerprints.ts) drops spaces and tabs, maps CRLF/CR
    to LF, appends 65535 (end of file) and then zeros, and hashes the 100 UTF-16 code units
    starting at each line: sum(u[k] * 37**(99-k)) mod 2**64, in lowercase hex, plus ":n"
    where n counts earlier lines with the same hash.

    File "  a\\r\\n\\ta\\r\\n" becomes the units a \\n a \\n EOF, so
      line 1 (starts at 'a'):  97*37**99 + 10*37**98 + 97*37**97 + 10*37**96 + 65535*37**95
      line 2 (second 'a'):     97*37**99 + 10*37**98 + 65535*37**97
      line 3 (after last \\n):  65535*37**99   (the same value GitHub's tests give an empty file)
    """
    m = 2**64
    line1 = (97 * 37**99 + 10 * 37**98 + 97 * 37**97 + 10 * 37**96 + 65535 * 37**95) % m
    line2 = (97 * 37**99 + 10 * 37**98 + 65535 * 37**97) % m
    line3 = (65535 * 37**99) % m
    assert (format(line1, "x"), format(line2, "x"), format(line3, "x")) == (
        "ee4468fa4a9bc719",
        "243cbaa4685aab12",
        "c129715d7a2bc9a3",
    )
    expected = ["ee4468fa4a9bc719:1", "243cbaa4685aab12:1", "c129715d7a2bc9a3:1"]
    assert line_hashes("  a\r\n\ta\r\n") == expected
    assert line_hashes("a\na\n") == expected  # whitespace and CRLF do not matter


def test_line_hash_counts_astral_characters_as_two_utf16_units():
    """'x = "😀"\\n': 😀 is U+1F600, which JavaScript sees as the surrogates D83D DE00."""
    units = [ord("x"), ord("="), ord('"'), 0xD83D, 0xDE00, ord('"'), 10, 65535]
    value = sum(u * 37 ** (99 - k) for k, u in enumerate(units)) % 2**64
    assert format(value, "x") == "19146fca3b90f5e7"
    assert line_hashes('x = "😀"\n') == ["19146fca3b90f5e7:1", "c129715d7a2bc9a3:1"]


# Expected values published in github/codeql-action, src/fingerprints.test.ts (test 'hash').
GITHUB_VECTORS = [
    ("", ["c129715d7a2bc9a3:1"]),
    (
        " a\nb\n  \t\tc\n d",
        ["271789c17abda88f:1", "54703d4cd895b18:1", "180aee12dab6264:1", "a23a3dc5e078b07b:1"],
    ),
    (
        " hello; \t\nworld!!!\n\n\n  \t\tGreetings\n End",
        [
            "8b7cf3e952e7aeb2:1", "b1ae1287ec4718d9:1", "bff680108adb0fcc:1",
            "c6805c5e1288b612:1", "b86d3392aea1be30:1", "e6ceba753e1a442:1",
        ],
    ),
    (
        " hello; \t\nworld!!!\r\n\n\r  \t\tGreetings\r End\r\n",
        [
            "e9496ae3ebfced30:1", "fb7c023a8b9ccb3f:1", "ce8ba1a563dcdaca:1",
            "e20e36e16fcb0cc8:1", "b3edc88f2938467e:1", "c8e28b0b4002a3a0:1",
            "c129715d7a2bc9a3:1",
        ],
    ),
    (
        "Lorem ipsum dolor sit amet.\n" * 10,
        ["a7f2ff13bc495cf2:%d" % i for i in range(1, 7)]
        + [
            "a7f2ff1481e87703:1", "a9cf91f7bbf1862b:1", "55ec222b86bcae53:1",
            "cc97dc7b1d7d8f7b:1", "c129715d7a2bc9a3:1",
        ],
    ),
]


@pytest.mark.parametrize("text, expected", GITHUB_VECTORS)
def test_line_hash_matches_githubs_own_test_vectors(text, expected):
    assert line_hashes(text) == expected


def rolling_reference(text: str) -> list[str]:
    """A second, literal implementation: one code unit at a time through a 100-slot window,
    the way the TypeScript does it. ``line_hashes`` uses prefix sums instead; they must agree."""
    mask = 2**64 - 1
    window = [0] * 100
    starts = [-1] * 100  # line number whose first unit sits in this slot
    first_mod = pow(37, 100, 2**64)
    state = {"h": 0, "i": 0, "line": 0, "line_start": True, "prev_cr": False}
    counts: dict[str, int] = {}
    out: list[tuple[int, str]] = []

    def emit():
        value = format(state["h"], "x")
        counts[value] = counts.get(value, 0) + 1
        out.append((starts[state["i"]], f"{value}:{counts[value]}"))
        starts[state["i"]] = -1

    def push(unit):
        leaving = window[state["i"]]
        window[state["i"]] = unit
        state["h"] = (37 * state["h"] + unit - first_mod * leaving) & mask
        state["i"] = (state["i"] + 1) % 100

    def feed(unit):
        if unit in (32, 9) or (state["prev_cr"] and unit == 10):
            state["prev_cr"] = False
            return
        state["prev_cr"] = unit == 13
        if unit == 13:
            unit = 10
        if starts[state["i"]] != -1:
            emit()
        if state["line_start"]:
            state["line_start"] = False
            state["line"] += 1
            starts[state["i"]] = state["line"]
        if unit == 10:
            state["line_start"] = True
        push(unit)

    data = text.encode("utf-16-le", "surrogatepass")
    for k in range(0, len(data), 2):
        feed(data[k] | data[k + 1] << 8)
    feed(65535)
    for _ in range(100):
        if starts[state["i"]] != -1:
            emit()
        push(0)
    assert [n for n, _ in out] == list(range(1, len(out) + 1))
    return [h for _, h in out]


def test_line_hash_agrees_with_a_literal_rolling_implementation():
    rng = random.Random(1234)
    alphabet = ["a", "b", " ", "\t", "\n", "\r", "\r\n", "é", "😀", "x = y\n", "\uffff", "\0"]
    texts = [MODEL, MODEL.replace("\n", "\r\n"), "\n" * 250, "z" * 350]
    texts += ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 400))) for _ in range(60)]
    for text in texts:
        assert line_hashes(text) == rolling_reference(text), repr(text[:80])


def test_fingerprint_reads_undecodable_bytes_like_node(tmp_path):
    # Invalid UTF-8 becomes U+FFFD (one unit), like Node's utf8 stream decoding.
    (tmp_path / "bad.py").write_bytes(b"x = '\xff'\ny = 1\n")
    finding = Finding(
        path="bad.py", line=2, column=1, end_line=2, end_column=2, code="FL101",
        name="tensor-to-python", message="m", effects=(Effect.GRAPH_BREAK,),
        severity=Severity.WARNING,
    )
    log = json.loads(render(RunResult(findings=[finding]), tmp_path))
    (result,) = log["runs"][0]["results"]
    assert result["partialFingerprints"]["primaryLocationLineHash"] == line_hashes(
        "x = '\ufffd'\ny = 1\n"
    )[1]


# --------------------------------------------------------------------------- serializer


def test_serializer_keeps_explicit_levels_and_drops_unset_fields(sample):
    text = json.dumps(sample)
    assert '"level": "warning"' in text
    assert "null" not in text  # unset optional fields are left out, not written as null
    for result in sample["runs"][0]["results"]:
        assert set(result) <= {
            "ruleId", "ruleIndex", "level", "message", "locations", "partialFingerprints",
            "fixes", "properties",
        }
        assert "rank" not in result and "kind" not in result


def test_output_is_ascii_json(tmp_path):
    text = render(sample_run(tmp_path), tmp_path)
    assert text.isascii()  # non-ASCII is \u-escaped, so any console encoding can carry it
    assert "\\u00e9" in text  # the é of "réseau" / "température"


# --------------------------------------------------------------------------- the real CLI

REPO = Path(__file__).resolve().parent.parent


def run_cli(*args: str, cwd: Path = REPO):
    import subprocess
    import sys

    return subprocess.run(
        [sys.executable, "-m", "fusionlint.cli", *args],
        cwd=cwd, capture_output=True, text=True, timeout=600,
    )


def test_cli_sarif_on_fixtures_is_valid(schema, tmp_path):
    out = tmp_path / "fusionlint.sarif"
    proc = run_cli("check", "fixtures", "--format", "sarif", "--output", str(out),
                   "--category", "fusionlint")
    assert proc.returncode == 1, proc.stderr  # the bad.py fixtures have findings
    log = json.loads(out.read_text(encoding="utf-8"))
    assert schema_errors(schema, log) == []
    run = log["runs"][0]
    assert run["automationDetails"] == {"id": "fusionlint/"}
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == REPO.as_uri() + "/"
    results = run["results"]
    assert {"FL101", "FL301"} <= {r["ruleId"] for r in results}
    rules = run["tool"]["driver"]["rules"]
    for rule in rules:
        assert rule["help"]["markdown"].startswith("## What it does")
        assert rule["fullDescription"]["text"]
    for result in results:
        physical = result["locations"][0]["physicalLocation"]
        path = unquote(physical["artifactLocation"]["uri"])
        assert path.startswith("fixtures/") and path.endswith("/bad.py")  # never good.py
        text = (REPO / path).read_bytes().decode("utf-8", "replace")
        line = physical["region"]["startLine"]
        assert result["partialFingerprints"]["primaryLocationLineHash"] == line_hashes(text)[line - 1]
    (fl301,) = [r for r in results if r["ruleId"] == "FL301"]
    (replacement,) = fl301["fixes"][0]["artifactChanges"][0]["replacements"]
    assert replacement["insertedContent"]["text"] == "reshape"


def test_cli_sarif_stdout_on_clean_code(schema, tmp_path):
    (tmp_path / "ok.py").write_text("import torch\n\nx = torch.ones(2).view(2, 1)\n")
    proc = run_cli("check", str(tmp_path), "--format", "sarif")
    assert proc.returncode == 0, proc.stderr
    log = json.loads(proc.stdout)
    assert schema_errors(schema, log) == []
    assert log["runs"][0]["results"] == []
    assert "automationDetails" not in log["runs"][0]


def test_cli_sarif_reports_a_syntax_error_as_notification(schema, tmp_path):
    (tmp_path / "broken.py").write_text("def forward(self, x:\n    return x.item()\n")
    proc = run_cli("check", str(tmp_path), "--format", "sarif")
    assert proc.returncode == 1, proc.stderr
    log = json.loads(proc.stdout)
    assert schema_errors(schema, log) == []
    (invocation,) = log["runs"][0]["invocations"]
    assert invocation["executionSuccessful"] is True
    (note,) = invocation["toolExecutionNotifications"]
    assert note["level"] == "error"
    assert "syntax" in note["message"]["text"]
    assert note["locations"][0]["physicalLocation"]["region"]["startLine"] >= 1


def test_github_actions_example_workflow_works(schema, tmp_path):
    """docs/github-actions.yml: its fusionlint commands run as written and feed upload-sarif."""
    import shlex

    import yaml

    workflow = yaml.safe_load((REPO / "docs" / "github-actions.yml").read_text(encoding="utf-8"))
    (job,) = workflow["jobs"].values()
    assert job["permissions"]["security-events"] == "write"
    steps = job["steps"]
    upload = [s for s in steps if s.get("uses", "").startswith("github/codeql-action/upload-sarif@")]
    (upload,) = upload
    assert "always()" in upload["if"]
    commands = [s["run"] for s in steps if "fusionlint check" in s.get("run", "")]
    assert any("--format sarif" in c for c in commands) and any("--format github" in c for c in commands)
    assert not any("torch" in s.get("run", "") for s in steps)  # static checks need no torch

    project = tmp_path / "project"
    (project / "models").mkdir(parents=True)
    bad = (REPO / "fixtures" / "FL301_view_after_permute" / "bad.py").read_text(encoding="utf-8")
    (project / "models" / "net.py").write_text(bad, encoding="utf-8")
    for command in commands:
        argv = shlex.split(command)
        assert argv[:2] == ["fusionlint", "check"]
        proc = run_cli(*argv[1:], cwd=project)
        expected = 0 if "--exit-zero" in argv else 1
        assert proc.returncode == expected, proc.stderr
    log = json.loads((project / upload["with"]["sarif_file"]).read_text(encoding="utf-8"))
    assert schema_errors(schema, log) == []
    assert [r["ruleId"] for r in log["runs"][0]["results"]] == ["FL301"]


def test_line_hashes_asked_one_line_at_a_time_in_any_order_are_the_whole_files():
    """The report computes only its findings' lines (``LineHashes``), in the order they come."""
    from fusionlint.report.sarif import LineHashes

    text = "a\n" * 120 + 'y = "😀 🤗"\n\n\nz = 1\n' + "def f(x):\n    return x\n" * 2
    whole = line_hashes(text)
    assert whole[20] == whole[0].replace(":1", ":21")  # the same 100 units: counted
    for order in ([60, 2, 121, 0], [0, 1, 2, 3], [len(whole) - 1, 5, 122]):
        lazy = LineHashes(text)
        assert [lazy[i] for i in order] == [whole[i] for i in order]
