"""SARIF 2.1.0 output (``--format sarif``), shaped for GitHub code scanning.

The log is built from ``sarif_om`` objects (the SARIF object model) and written by the small
serializer at the bottom of this module rather than by sarif_om's generic ``to_json``: that one
drops every value equal to a schema default (so ``"level": "warning"`` disappears, which
confuses readers that do not apply defaults) and is slow (seconds for a few thousand results).

What goes where:

* ``tool.driver``: name, version and one ``rules[]`` entry per rule that has a result, built
  from the rule class: ``shortDescription`` is the first sentence of the docs' "What it does"
  (``Rule.summary``; GitHub shows it at the top of every alert), ``fullDescription`` the "What it
  does" and "Why is this bad?" prose, ``help`` the whole docs (markdown, and a plain-text copy),
  severity, effects as tags. ``helpUri`` and the driver's ``informationUri`` are written only
  when ``options["docs_url"]`` (the ``docs-url`` setting) says where the docs live: fusionlint
  has no public docs site, and a link to nowhere is worse than no link.
* ``results[]``: one per finding, with a repository-relative ``artifactLocation`` (``uriBaseId``
  ``%SRCROOT%``, which ``originalUriBaseIds`` maps to the ``file:`` URI of the git work tree
  holding the project root, or of the project root outside git), a 1-based region
  in Unicode code points (``columnKind: unicodeCodePoints``), safe fixes as ``fixes[]``, the
  confirm pass's evidence under ``properties.confirmation``, and
  ``partialFingerprints.primaryLocationLineHash`` computed exactly like GitHub's
  ``upload-sarif`` action would (see ``line_hashes``), so the action keeps ours instead of
  warning about a mismatch and alerts follow code that moves.
* ``invocations[0]``: files that could not be linted (syntax errors, undecodable bytes...) as
  ``toolExecutionNotifications`` at level ``error``. Such files are the user's problem, not the
  tool's: ``executionSuccessful`` stays true for them. It is false when fusionlint itself failed:
  errors passed as ``options["internal_errors"]`` (the runner's ``internal_errors``, e.g. a rule
  that crashed; they are listed as notifications too) or errors with code ``"internal"``.
  ``options["execution_successful"]`` overrides the verdict.
* ``automationDetails.id``: only when ``options["category"]`` is given. The value is the category
  with a trailing ``/`` added when missing, which is what ``github/codeql-action/upload-sarif``
  does with its own ``category`` input. The action never overrides an id already in the file,
  so leaving it out by default lets the workflow's ``category:`` input keep working.
"""

from __future__ import annotations

import json
import math
import os
import re
import uuid
from itertools import accumulate, islice
from operator import countOf, mul
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional
from urllib.parse import quote

import attr
import sarif_om as om

from fusionlint.report.github import repository_path, repository_root
from fusionlint.rule import INTERNAL_ERROR_CODE, Applicability, FileError, Finding, Rule, RunResult, Severity

SARIF_VERSION = "2.1.0"
SCHEMA_URI = (
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
)
TOOL_NAME = "fusionlint"
SRCROOT = "%SRCROOT%"

_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}
# GitHub's `problem.severity` vocabulary for non-security queries.
_PROBLEM_SEVERITY = {
    Severity.ERROR: "error",
    Severity.WARNING: "warning",
    Severity.INFO: "recommendation",
}
_PRECISIONS = ("very-high", "high", "medium", "low")

_FILE_ERROR_NOTIFICATION = (
    "file-not-linted",
    "fusionlint could not lint this file.",
    "The file could not be read, decoded or parsed as Python, so no rule ran on it. "
    "The notification's message says why; fix the file or exclude it.",
)
_INTERNAL_ERROR_NOTIFICATION = (
    "internal-error",
    "fusionlint failed while linting this file.",
    "An error inside fusionlint (not in the linted file) stopped it from linting this file. "
    "Please report it with the notification's message.",
)
_TOOL_ERROR_NOTIFICATION = (
    "tool-error",
    "fusionlint reported an error.",
    "fusionlint reported an error while linting; the notification's message says which.",
)


def render(
    result: RunResult,
    *,
    rules: Mapping[str, type[Rule]],
    root: Path,
    tool_version: str,
    options: Optional[Mapping[str, object]] = None,
) -> str:
    """The whole SARIF log for one run, as JSON text (ASCII, indented, trailing newline)."""
    log = build_log(result, rules=rules, root=root, tool_version=tool_version, options=options)
    return dumps(to_data(log))


def dumps(data: dict) -> str:
    """JSON text of a SARIF log: indented, except that each result takes exactly one line.

    One line per result keeps big logs readable, greppable and diffable, and lets the C JSON
    encoder do the bulk of the work (``indent`` switches Python's json to its slow pure-Python
    encoder: 0.22 s instead of 0.06 s for 5,000 results). Output is ASCII (``\\u`` escapes).
    """
    # "$schema" and "version" first, as SARIF producers write them. (Copies: `data` is not changed.)
    runs = [dict(run) for run in data["runs"]]
    data = {"$schema": data["$schema"], "version": data["version"], **data, "runs": runs}
    placeholders: dict[str, list] = {}
    for i, run in enumerate(runs):
        mark = f"\x00results-{i}-{uuid.uuid4().hex}"
        placeholders[json.dumps(mark)] = run["results"]
        run["results"] = mark
    text = json.dumps(data, indent=2, allow_nan=False)
    for token, results in placeholders.items():
        start = text.index(token)
        line_start = text.rindex("\n", 0, start) + 1
        indent = " " * (len(text[line_start:start]) - len(text[line_start:start].lstrip()))
        if results:
            inner = indent + "  "
            body = ",\n".join(
                inner + json.dumps(r, separators=(", ", ": "), allow_nan=False) for r in results
            )
            body = "[\n" + body + "\n" + indent + "]"
        else:
            body = "[]"
        text = text[:start] + body + text[start + len(token) :]
    return text + "\n"


def build_log(
    result: RunResult,
    *,
    rules: Mapping[str, type[Rule]],
    root: Path,
    tool_version: str,
    options: Optional[Mapping[str, object]] = None,
) -> om.SarifLog:
    """The run as ``sarif_om`` objects (``render`` serializes them)."""
    options = options or {}
    root = Path(root).resolve()
    findings = sorted(result.findings, key=lambda f: f.sort_key)

    # rules[]: every rule with a result, sorted by code; ruleIndex points into this list.
    used_codes = sorted({f.code for f in findings})
    rule_index = {code: i for i, code in enumerate(used_codes)}
    by_code = {f.code: f for f in findings}
    docs_url = options.get("docs_url") or None
    descriptors = [
        _rule_descriptor(code, rules.get(code), by_code[code], docs_url) for code in used_codes
    ]

    paths = _Paths(root)
    results = [_result(f, rule_index[f.code], paths) for f in findings]

    # Files that could not be linted (result.errors) and failures of fusionlint itself
    # (options["internal_errors"], or errors with code "internal") all become notifications;
    # only the latter make the execution unsuccessful.
    internal = list(options.get("internal_errors") or ())  # type: ignore[call-overload]
    errors = list(result.errors) + internal
    failed = bool(internal) or any(e.code == INTERNAL_ERROR_CODE for e in result.errors)
    successful = bool(options.get("execution_successful", not failed))
    notification_codes = sorted({e.code for e in errors})
    notification_index = {code: i for i, code in enumerate(notification_codes)}
    notifications = [
        _notification(e, notification_index[e.code], paths)
        for e in sorted(errors, key=lambda e: (e.path, e.line or 0, e.column or 0))
    ]
    invocation = om.Invocation(
        execution_successful=successful,
        tool_execution_notifications=notifications or None,
    )

    driver = om.ToolComponent(
        name=TOOL_NAME,
        version=tool_version,
        semantic_version=tool_version,
        information_uri=information_uri(docs_url),
        rules=descriptors,
        notifications=[_notification_descriptor(c) for c in notification_codes] or None,
    )

    run = om.Run(
        tool=om.Tool(driver=driver),
        results=results,
        invocations=[invocation],
        column_kind="unicodeCodePoints",
        original_uri_base_ids={SRCROOT: om.ArtifactLocation(uri=_directory_uri(paths.repo))},
    )
    category = options.get("category")
    if category:
        automation_id = str(category)
        if not automation_id.endswith("/"):
            automation_id += "/"
        run.automation_details = om.RunAutomationDetails(id=automation_id)
    if result.target_torch:  # the torch version the findings were judged against (`target-torch`)
        run.properties = {"targetTorch": result.target_torch}

    return om.SarifLog(version=SARIF_VERSION, schema_uri=SCHEMA_URI, runs=[run])


# --------------------------------------------------------------------------- rules


def information_uri(docs_url: Optional[str]) -> Optional[str]:
    """The driver's ``informationUri``: the ``docs-url`` template cut at its first placeholder
    (``https://example.org/rules/{code}`` -> ``https://example.org/rules/``); None without one."""
    if not docs_url:
        return None
    cut = docs_url.split("{", 1)[0].rstrip("#?")
    return cut if "://" in cut and cut.split("://", 1)[1] else docs_url


def _plain_text(markdown: str) -> str:
    """The docs as plain text, for ``help.text``: headings lose their ``#``, fences go."""
    lines = []
    for line in markdown.splitlines():
        if line.lstrip().startswith("```"):
            continue
        lines.append(line.lstrip("#").strip() if line.startswith("#") else line)
    return "\n".join(lines).strip()


def _rule_descriptor(
    code: str, rule: Optional[type[Rule]], example: Finding, docs_url: Optional[str] = None
) -> om.ReportingDescriptor:
    if rule is None:
        # A finding whose rule is not in the registry (should not happen): describe it from the
        # finding itself rather than dropping it.
        severity = Severity(example.severity)
        return om.ReportingDescriptor(
            id=code,
            name=example.name,
            short_description=om.MultiformatMessageString(text=example.message),
            default_configuration=om.ReportingConfiguration(level=_LEVEL[severity]),
            properties={
                "tags": _tags(example.effects),
                "precision": "high",
                "problem.severity": _PROBLEM_SEVERITY[severity],
            },
        )
    severity = Severity(rule.severity)
    docs = (rule.docs or "").strip()
    summary = rule.summary()
    full = _full_description(docs) or summary
    precision = getattr(rule, "precision", "high")
    if precision not in _PRECISIONS:
        precision = "high"
    return om.ReportingDescriptor(
        id=code,
        name=rule.name,
        short_description=om.MultiformatMessageString(text=summary),
        full_description=om.MultiformatMessageString(text=full),
        help=om.MultiformatMessageString(
            text=_plain_text(docs) or summary, markdown=docs or summary
        ),
        help_uri=rule.help_url(docs_url),
        default_configuration=om.ReportingConfiguration(level=_LEVEL[severity]),
        properties={
            "tags": _tags(rule.effects),
            "precision": precision,
            "problem.severity": _PROBLEM_SEVERITY[severity],
        },
    )


def _tags(effects: Iterable[object]) -> list[str]:
    return [str(getattr(e, "value", e)) for e in effects] + ["torch.compile"]


def _full_description(docs: str) -> str:
    """"What it does" and "Why is this bad?" sections of the docs, as one plain paragraph each."""
    wanted = ("what it does", "why is this bad")
    parts: list[str] = []
    section: Optional[str] = None
    for line in docs.splitlines():
        stripped = line.strip()
        if stripped.startswith("#"):
            section = stripped.lstrip("#").strip().rstrip("?").lower()
            continue
        if section in wanted and stripped and not stripped.startswith("```"):
            parts.append(stripped)
    return " ".join(parts)


# --------------------------------------------------------------------------- results


def _result(finding: Finding, index: int, paths: "_Paths") -> om.Result:
    severity = Severity(finding.severity)
    artifact = paths.location(finding.path)
    region = om.Region(
        start_line=finding.line,
        start_column=finding.column,
        end_line=finding.end_line,
        end_column=finding.end_column,
    )
    result = om.Result(
        rule_id=finding.code,
        rule_index=index,
        level=_LEVEL[severity],
        message=om.Message(text=finding.message),
        locations=[
            om.Location(
                physical_location=om.PhysicalLocation(artifact_location=artifact, region=region)
            )
        ],
    )
    fingerprint = paths.line_hash(finding.path, finding.line)
    if fingerprint is not None:
        result.partial_fingerprints = {"primaryLocationLineHash": fingerprint}

    fix = finding.fix
    if fix is not None and Applicability(fix.applicability) is Applicability.SAFE and fix.edits:
        result.fixes = [
            om.Fix(
                description=om.Message(text=fix.title or f"Apply the safe fix for {finding.code}"),
                artifact_changes=[
                    om.ArtifactChange(
                        artifact_location=paths.location(finding.path),
                        replacements=[
                            om.Replacement(
                                deleted_region=om.Region(
                                    start_line=e.line,
                                    start_column=e.column,
                                    end_line=e.end_line,
                                    end_column=e.end_column,
                                ),
                                inserted_content=om.ArtifactContent(text=e.content),
                            )
                            for e in fix.edits
                        ],
                    )
                ],
            )
        ]

    properties: dict[str, Any] = {}
    if finding.context:
        properties["context"] = finding.context
    if finding.confirmation is not None:
        properties["confirmation"] = finding.confirmation
    if properties:
        result.properties = properties
    return result


class _Paths:
    """Finding paths -> SARIF locations and fingerprints.

    URIs are relative to the git repository holding the project root (that is how GitHub reads
    them, and ``%SRCROOT%`` is mapped to that directory); files outside it get absolute
    ``file:`` URIs and no fingerprint (upload-sarif ignores them too). Each file is read at
    most once for its line hashes.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self.repo = repository_root(root)
        self._relative: dict[str, Optional[str]] = {}
        self._hashes: dict[str, Optional[LineHashes]] = {}

    def relative(self, path: str) -> Optional[str]:
        if path not in self._relative:
            self._relative[path] = repository_path(path, self.root, self.repo)
        return self._relative[path]

    def location(self, path: str) -> om.ArtifactLocation:
        relative = self.relative(path)
        if relative is None:
            absolute = Path(path) if Path(path).is_absolute() else self.root / path
            return om.ArtifactLocation(uri=Path(os.path.abspath(absolute)).as_uri())
        return om.ArtifactLocation(uri=quote(relative, safe="/"), uri_base_id=SRCROOT)

    def line_hash(self, path: str, line: int) -> Optional[str]:
        relative = self.relative(path)
        if relative is None:
            return None
        hashes = self._hashes.get(relative, ())
        if hashes == ():
            hashes = self._hashes[relative] = self._load(relative)
        if hashes is None or not 1 <= line <= len(hashes):
            return None
        return hashes[line - 1]

    def _load(self, relative: str) -> Optional["LineHashes"]:
        try:
            data = (self.repo / relative).read_bytes()
        except OSError:
            return None
        # Node's UTF-8 decoder: invalid bytes become U+FFFD, a BOM is kept as a character.
        return LineHashes(data.decode("utf-8", "replace"))


def _directory_uri(root: Path) -> str:
    uri = root.as_uri()
    return uri if uri.endswith("/") else uri + "/"


# --------------------------------------------------------------------------- notifications


def _notification_descriptor(code: str) -> om.ReportingDescriptor:
    if code == "FL000":
        name, short, full = _FILE_ERROR_NOTIFICATION
    elif code == INTERNAL_ERROR_CODE:
        name, short, full = _INTERNAL_ERROR_NOTIFICATION
    else:
        name, short, full = _TOOL_ERROR_NOTIFICATION
    # GitHub wants fullDescription and help on every reportingDescriptor, notifications too.
    return om.ReportingDescriptor(
        id=code,
        name=name,
        short_description=om.MultiformatMessageString(text=short),
        full_description=om.MultiformatMessageString(text=full),
        help=om.MultiformatMessageString(text=full, markdown=full),
    )


def _notification(error: FileError, index: int, paths: "_Paths") -> om.Notification:
    notification = om.Notification(
        level="error",
        message=om.Message(text=f"{error.path}: {error.message}"),
        descriptor=om.ReportingDescriptorReference(id=error.code, index=index),
    )
    if error.path:
        physical = om.PhysicalLocation(artifact_location=paths.location(error.path))
        if error.line:
            physical.region = om.Region(start_line=error.line, start_column=error.column or None)
        notification.locations = [om.Location(physical_location=physical)]
    return notification


# --------------------------------------------------------------------------- fingerprints

_MASK = (1 << 64) - 1
_BLOCK_SIZE = 100
_MOD = 37
_EOF = "\uffff"  # GitHub appends the UTF-16 code unit 65535 after the last character


# 37**(99-k) mod 2**64: the weight of the k-th code unit of a line's 100-unit window
_WEIGHTS = tuple(pow(_MOD, _BLOCK_SIZE - 1 - k, 1 << 64) for k in range(_BLOCK_SIZE))


_ASTRAL = re.compile("[\U00010000-\U0010ffff]")


def _surrogates(match: "re.Match[str]") -> str:
    code = ord(match.group()) - 0x10000
    return chr(0xD800 + (code >> 10)) + chr(0xDC00 + (code & 0x3FF))


class LineHashes:
    """``primaryLocationLineHash`` of each line of ``text``, computed when asked; ``[0]`` is line 1.

    Written from the algorithm of ``hash()`` in github/codeql-action ``src/fingerprints.ts``
    (what ``upload-sarif`` runs on results that lack the fingerprint):

    * The file is read as UTF-8 and processed as UTF-16 code units (JavaScript ``charCodeAt``).
    * Spaces and tabs are dropped; CR LF and lone CR become LF.
    * A line's hash is a polynomial hash, base 37 modulo 2**64, of the 100 code units starting
      at the line's first kept unit (LF included): ``sum(u[p+k] * 37**(99-k))``. After the
      last unit come one 65535 (end of file) and then zeros. Every LF starts a new line, so
      a file ending in LF has one more (empty) line than its last line of text.
    * The value is written as unsigned lowercase hex without leading zeros, followed by
      ``:n`` where n counts how many lines so far in the file (this one included) had the
      same hash.

    The TypeScript rolls the hash over every code unit, and so did this (one Python call per
    character: 9.5 of the 9.7 s of a warm SARIF run over timm + transformers, 403 files with
    findings). A report needs the lines of its findings only: each is the dot product of its
    window with the weights above, and ``n`` counts the earlier lines whose window is the same
    100 units (the same text gives the same hash; two different windows with one hash, which
    the TypeScript would count together, are a 2**-64 chance).
    """

    def __init__(self, text: str) -> None:
        units = text.replace("\r\n", "\n").replace("\r", "\n").replace(" ", "").replace("\t", "")
        # Characters outside the BMP are two UTF-16 code units in JavaScript: split them (only they are
        # rewritten: rebuilding the whole text from its code units took 0.47 s for the zoo's 163 such files)
        units = _ASTRAL.sub(_surrogates, units)
        self._stream = units + _EOF + "\0" * _BLOCK_SIZE
        # every LF starts a line: the offsets after each one, from the lines' lengths (no loop in Python)
        self._starts = list(accumulate(map((1).__add__, map(len, units.split("\n")[:-1])), initial=0))
        self._windows: list[str] = []  # each line's 100 units, up to the last line asked

    def __len__(self) -> int:
        return len(self._starts)

    def __getitem__(self, i: int) -> str:
        windows = self._windows
        if len(windows) <= i:  # (sliced and compared in C: a loop over the lines here took 0.5 s on the zoo)
            starts = self._starts[len(windows):i + 1]
            windows += map(self._stream.__getitem__, map(slice, starts, map(_BLOCK_SIZE.__add__, starts)))
        window = windows[i]
        value = sum(map(mul, map(ord, window), _WEIGHTS)) & _MASK
        return f"{value:x}:{countOf(islice(windows, i + 1), window)}"


def line_hashes(text: str) -> list[str]:
    """``primaryLocationLineHash`` of every line of ``text`` (``LineHashes``); element 0 is line 1."""
    hashes = LineHashes(text)
    return [hashes[i] for i in range(len(hashes))]


# --------------------------------------------------------------------------- serializer

# Values equal to the schema default are left out, except for these keys: GitHub and people
# reading the file should not have to know that a missing level means "warning".
_ALWAYS_WRITTEN = frozenset({"level", "executionSuccessful"})
_NO_DEFAULT = object()
_KEY_ORDER = {
    key: i
    for i, key in enumerate(
        (
            "id", "name", "version", "ruleId", "ruleIndex", "level", "message", "text", "uri",
            "uriBaseId", "startLine", "startColumn", "endLine", "endColumn", "locations",
        )
    )
}
_FIELDS: dict[type, tuple[tuple[str, str, object], ...]] = {}


def _fields_of(cls: type) -> tuple[tuple[str, str, object], ...]:
    spec = _FIELDS.get(cls)
    if spec is None:
        items = []
        for a in attr.fields(cls):
            default = a.default
            if isinstance(default, attr.Factory):  # type: ignore[arg-type]
                default = default.factory()
            elif default is attr.NOTHING:
                default = _NO_DEFAULT
            key = a.metadata["schema_property_name"]
            if key in _ALWAYS_WRITTEN:
                default = _NO_DEFAULT
            items.append((a.name, key, default))
        # Identifying keys first (ruleId before the message, startLine before endLine), the
        # rest in sarif_om's (alphabetical) order.
        items.sort(key=lambda item: _KEY_ORDER.get(item[1], len(_KEY_ORDER)))
        spec = _FIELDS[cls] = tuple(items)
    return spec


def to_data(obj: Any) -> Any:
    """sarif_om objects (and the plain dicts/lists inside them) -> JSON-ready Python data.

    Keeps every attribute that is set (not None) and differs from its schema default, plus
    ``level`` and ``executionSuccessful`` always. Property bags are plain dicts. Non-finite
    floats (NaN timings in evidence) become strings, since JSON has no NaN.
    """
    if obj is None or isinstance(obj, (str, bool, int)):
        return obj
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else str(obj)
    if isinstance(obj, dict):
        return {str(k): to_data(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_data(v) for v in obj]
    cls = type(obj)
    spec = _FIELDS.get(cls)
    if spec is None:
        if not attr.has(cls):
            if hasattr(obj, "value"):  # enums
                return to_data(obj.value)
            return str(obj)
        spec = _fields_of(cls)
    values = obj.__dict__
    out = {}
    for name, key, default in spec:
        value = values[name]
        if value is None or value == default:
            continue
        out[key] = to_data(value)
    return out
