"""Hostile but possible input never aborts a run (issue 8, "Crashes and internal errors").

A file that cannot be analysed is that file's error and the run goes on: odd coding cookies, deep
nesting, huge files, odd int literals, and a rule that raises.
"""

from __future__ import annotations

import ast
import codecs
import encodings.aliases
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import jsonschema
import libcst as cst
import pytest

from fusionlint import precheck
from fusionlint.analysis.literals import int_literal
from fusionlint.semantic.tensors import TensorFacts
from fusionlint.engine import Engine
from fusionlint.files import SourceError, read_source_encoded
from fusionlint.precheck import MAX_DEPTH, tree_shape
from fusionlint.registry import all_rules
from fusionlint.rule import Effect, Rule

from tests.test_cli import BAD_VIEW, REPO, run_cli

RULES = list(all_rules().values())
HEADER = "import torch\nfrom torch import nn\n\n\nclass M(nn.Module):\n    def forward(self, x):\n"


def body(*lines: str) -> str:
    return HEADER + "".join(f"        {line}\n" for line in lines)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text("[tool.fusionlint]\n")
    (tmp_path / "model.py").write_text(BAD_VIEW)  # the neighbour that must still be linted (FL301, FL101)
    return tmp_path


def check_json(project: Path, *args: str):
    result = run_cli(["check", ".", "--format", "json", *args], project)
    doc = json.loads(result.stdout)  # stderr repeats internal errors for a terminal
    jsonschema.validate(doc, json.loads((REPO / "docs" / "json-output.schema.json").read_text()))
    return result.exit_code, doc


def errors_for(doc: dict, path: str) -> list[dict]:
    return [e for e in doc["errors"] if e["path"] == path]


# --------------------------------------------------------------------------- coding cookies

# Codecs a cookie can name that are no text encodings, with what reading them says (CPython's
# compile() refuses the first five with the same words, the last two with the codec's error).
NOT_TEXT = {
    "rot13": "'rot13' is not a text encoding",
    "hex": "'hex' is not a text encoding",
    "base64": "'base64' is not a text encoding",
    "uu": "'uu' is not a text encoding",
    "zlib": "'zlib' is not a text encoding",
    "punycode": "cannot decode file as punycode",
    "undefined": "cannot decode file as undefined",
}


def with_cookie(codec: str) -> bytes:
    return f"# -*- coding: {codec} -*-\n".encode() + BAD_VIEW.encode()


@pytest.mark.parametrize("codec", sorted(NOT_TEXT))
@pytest.mark.parametrize("fix", [False, True], ids=["check", "check --fix"])
def test_cookie_naming_a_codec_that_is_no_text_encoding_is_a_file_error(project, codec, fix):
    data = with_cookie(codec)
    (project / "odd.py").write_bytes(data)
    code, doc = check_json(project, *(["--fix"] if fix else []))
    assert code == 1
    [error] = errors_for(doc, "odd.py")
    assert NOT_TEXT[codec] in error["message"] and error["line"] == 1 and "code" not in error
    assert (project / "odd.py").read_bytes() == data
    if fix:  # the neighbour was still linted and fixed
        assert "reshape" in (project / "model.py").read_text()
    else:
        assert {f["code"] for f in doc["findings"] if f["path"] == "model.py"} >= {"FL301", "FL101"}


@pytest.mark.parametrize("codec", ["rot13", "hex", "base64", "uu", "zlib"])
def test_cpython_refuses_those_cookies_in_the_same_words(codec):
    with pytest.raises(SyntaxError, match="is not a text encoding"):
        compile(with_cookie(codec), "odd.py", "exec")


def test_idna_cookie_is_checked_but_not_fixed(project):
    """CPython runs an idna-declared file, so `check` lints it; `--fix` refuses it: the idna codec
    cannot encode a label over 63 characters and its incremental encoder (what a text file
    writes with) held back the last label, so a fixed file lost its end."""
    data = with_cookie("idna")
    (project / "odd.py").write_bytes(data)
    code, doc = check_json(project)
    assert code == 1 and not errors_for(doc, "odd.py")
    assert "FL301" in {f["code"] for f in doc["findings"] if f["path"] == "odd.py"}

    code, doc = check_json(project, "--fix")
    assert code == 1
    [error] = errors_for(doc, "odd.py")
    assert "cannot fix a file declared as 'idna'" in error["message"]
    assert (project / "odd.py").read_bytes() == data
    assert "reshape" in (project / "model.py").read_text()


def test_latin1_cookie_still_fixes(project):
    data = b"# -*- coding: latin-1 -*-\n" + BAD_VIEW.replace("return y", "return y  # \xe9t\xe9").encode("latin-1")
    (project / "model.py").write_bytes(data)
    run_cli(["check", ".", "--fix"], project)
    assert (project / "model.py").read_bytes() == data.replace(b".view(", b".reshape(")


def _every_codec_name() -> list[str]:
    names = set(encodings.aliases.aliases.values()) | {"rot13", "uu", "punycode", "undefined", "idna", "unicode_escape"}
    out = []
    for name in sorted(names):
        try:
            codecs.lookup(name)
        except LookupError:  # an alias of a codec this platform lacks (mbcs on Linux)
            continue
        out.append(name)
    return out


@pytest.mark.parametrize("writable", [False, True])
def test_reading_any_cookie_gives_text_or_a_source_error(tmp_path, writable):
    """Whatever codec a cookie names, reading returns text or raises SourceError, nothing else."""
    path = tmp_path / "f.py"
    outcomes = set()
    for name in _every_codec_name():
        path.write_bytes(with_cookie(name))
        try:
            text, _ = read_source_encoded(path, writable=writable)
            outcomes.add("text")
            assert isinstance(text, str)
        except SourceError as exc:
            outcomes.add("error")
            assert exc.message and (exc.line is None or 1 <= exc.line <= BAD_VIEW.count("\n") + 1)
    assert outcomes == {"text", "error"}  # both paths were exercised


# --------------------------------------------------------------------------- deep nesting

# The four shapes from the issue that raised RecursionError, all valid Python.
TOO_DEEP = {
    "sum": body("y = x.item()" + " + x" * 500, "return y"),
    "list": body("y = " + "[" * 150 + "x.item()" + "]" * 150, "return y"),
    "subscript": body("y = x" + "[0]" * 1000, "return y"),
}


@pytest.mark.parametrize("shape", sorted(TOO_DEEP))
def test_too_deep_file_is_a_file_error(project, shape):
    (project / "deep.py").write_text(TOO_DEEP[shape])
    code, doc = check_json(project)
    assert code == 1
    [error] = errors_for(doc, "deep.py")
    assert error["message"].startswith("too deeply nested to analyse (depth ")
    assert error["message"].endswith(f", limit {MAX_DEPTH})") and error["line"] == 7
    assert {f["code"] for f in doc["findings"] if f["path"] == "model.py"} >= {"FL301", "FL101"}
    result = run_cli(["check", ".", "--fix"], project)
    assert "Traceback" not in result.output and (project / "deep.py").read_text() == TOO_DEEP[shape]


def test_250_nested_brackets_are_cpythons_syntax_error(project):
    """libcst accepted 250 nested brackets that CPython refuses; now CPython is asked first."""
    (project / "deep.py").write_text(body("y = " + "[" * 250 + "]" * 250, "return y"))
    code, doc = check_json(project)
    assert code == 1
    [error] = errors_for(doc, "deep.py")
    assert error["message"] == "syntax error: too many nested parentheses"


def test_parser_stack_overflow_is_a_file_error(project):
    """CPython 3.11 raises a bare MemoryError for 90 nested blocks around 199 nested brackets."""
    deep = HEADER + "".join("    " * (i + 2) + "if x:\n" for i in range(90)) + "    " * 92 + "y = " + "(" * 199 + "x" + ")" * 199 + "\n"
    (project / "deep.py").write_text(deep)
    code, doc = check_json(project)
    assert code == 1
    [error] = errors_for(doc, "deep.py")
    assert error["message"] == "too deeply nested or too large for CPython's parser (MemoryError)"


def _at_limit(make) -> str:
    """The deepest source ``make(n)`` gives within the depth limit."""
    n = 1
    while tree_shape(compile(make(n + 1), "f", "exec", flags=ast.PyCF_ONLY_AST))[0].depth <= MAX_DEPTH:
        n += 1
    source = make(n)
    assert tree_shape(compile(source, "f", "exec", flags=ast.PyCF_ONLY_AST))[0].depth >= MAX_DEPTH - 1  # some shapes step by 2
    return source


# Each also holds a finding so positions, suppressions and fixes run on the deep tree too.
AT_LIMIT = {
    "sum": lambda n: body("y = x.item()" + " + x" * n, "return x.permute(1, 0).view(-1) + y"),
    "list": lambda n: body("y = " + "[" * n + "x.item()" + "]" * n, "return x.permute(1, 0).view(-1), y"),
    "subscript": lambda n: body("y = x" + "[0]" * n, "return x.permute(1, 0).view(-1), y.item()"),
    "calls": lambda n: body("y = " + "torch.relu(" * n + "x.permute(1, 0).view(-1)" + ")" * n, "return y.item()"),
    "methods": lambda n: body("y = x" + ".relu()" * n, "return x.permute(1, 0).view(-1), y.item()"),
    "ternary": lambda n: body("y = " + "x.item() if x else " * n + "x", "return x.permute(1, 0).view(-1), y"),
    "unary": lambda n: body("y = " + "-" * n + "x.item()", "return x.permute(1, 0).view(-1), y"),
    "lambdas": lambda n: body("f = " + "lambda: " * n + "x.item()", "return x.permute(1, 0).view(-1), f"),
    "blocks": lambda n: HEADER + "".join("    " * (i + 2) + "if x:\n" for i in range(min(n, 90)))
    + "    " * (min(n, 90) + 2) + "x = x.permute(1, 0).view(-1) + x.item()" + " + x" * max(0, n - 90) + "\n"
    + "        return x\n",
}


@pytest.mark.parametrize("shape", sorted(AT_LIMIT))
def test_deepest_allowed_nesting_is_analysed_and_fixed(shape):
    source = _at_limit(AT_LIMIT[shape])
    result = Engine(RULES).lint(source, "deep.py")
    assert result.error is None and result.rule_errors == []
    assert "FL301" in {f.code for f in result.findings}
    from fusionlint.fixes import fix_source

    def lint(text: str):
        again = Engine(RULES).lint(text, "deep.py")
        assert again.error is None and again.rule_errors == []
        return again.findings

    assert ".reshape(" in fix_source(source, lint).source


def test_no_fixture_or_example_comes_near_the_depth_limit():
    deepest = max(
        tree_shape(compile(p.read_text(encoding="utf-8"), str(p), "exec", flags=ast.PyCF_ONLY_AST))[0].depth
        for folder in ("fixtures", "examples", "fusionlint", "rules")
        for p in (REPO / folder).rglob("*.py")
    )
    assert deepest <= MAX_DEPTH // 4


def test_tensor_inference_on_a_subscript_chain_is_linear(monkeypatch):
    """``x[0][0]...`` re-derived every prefix of the chain at every level (600 levels: 10.7 CPU-s).
    Counted in evaluations, not seconds: doubling the chain must about double the work."""
    calls = []
    real = TensorFacts._is_tensor
    monkeypatch.setattr(TensorFacts, "_is_tensor", lambda self, expr: calls.append(1) or real(self, expr))

    def evaluations(n: int) -> int:
        calls.clear()
        Engine(RULES).lint(body("y = x" + "[0]" * n, "return y.item()"), "chain.py")
        return len(calls)

    small, large = evaluations(40), evaluations(80)
    assert 0 < small and large <= 2.5 * small


# --------------------------------------------------------------------------- memory


def _peak_rss_mb(project: Path, name: str) -> tuple[float, dict]:
    """Run `fusionlint check NAME --format json` in a fresh interpreter; its own peak RSS in MB (Linux)."""
    script = textwrap.dedent(
        f"""
        import json, sys
        from click.testing import CliRunner
        from fusionlint.cli import main
        result = CliRunner().invoke(main, ["check", {name!r}, "--format", "json"])
        # VmHWM, not ru_maxrss: Linux carries ru_maxrss over exec from the forking process (pytest,
        # which may hold torch), while VmHWM belongs to this interpreter's own address space.
        with open("/proc/self/status") as fh:
            peak = next(int(l.split()[1]) for l in fh if l.startswith("VmHWM:")) / 1024
        print(json.dumps({{"peak": peak, "exit": result.exit_code, "doc": json.loads(result.output)}}))
        """
    )
    out = subprocess.run([sys.executable, "-c", script], cwd=project, capture_output=True, text=True, check=True)
    report = json.loads(out.stdout.splitlines()[-1])
    assert report["exit"] == 1
    return report["peak"], report["doc"]


def test_one_megabyte_one_line_list_stays_within_memory(project):
    """libcst took 1.38 GB on it; CPython's tree (~0.34 GB) now decides it is too large first."""
    (project / "big.py").write_text(body("return x.item()") + "TABLE = [" + "1, " * 333_000 + "]\n")
    peak, doc = _peak_rss_mb(project, "big.py")
    [error] = doc["errors"]
    assert error["message"] == f"too large to analyse (more than {precheck.MAX_NODES:,} syntax nodes, the limit)"
    assert peak < 600, f"peak RSS {peak:.0f} MB"


def test_thousand_nested_brackets_stay_within_memory(project):
    (project / "deep.py").write_text(body("return x.item()") + "X = " + "[" * 1000 + "]" * 1000 + "\n" * 2000)
    peak, doc = _peak_rss_mb(project, "deep.py")
    [error] = doc["errors"]
    assert error["message"] == "syntax error: too many nested parentheses"
    assert peak < 200, f"peak RSS {peak:.0f} MB"


# --------------------------------------------------------------------------- int literals


@pytest.mark.parametrize(
    "text,value",
    [("7", 7), ("0x1", 1), ("0X1f", 31), ("0o17", 15), ("0b101", 5), ("1_000", 1000), ("0x_ff", 255), ("00", 0),
     ("0x" + "f" * 5000, None), ("9" * 5000, None)],
)
def test_int_literal_reads_what_python_reads(text, value):
    assert int_literal(cst.Integer(text)) == value
    if value is not None:
        assert int_literal(cst.UnaryOperation(cst.Minus(), cst.Integer(text))) == -value


def test_int_literal_ignores_what_is_no_int_literal():
    assert int_literal(None) is None
    assert int_literal(cst.Float("1.0")) is None
    assert int_literal(cst.Name("n")) is None


def test_fl301_reads_a_hex_permutation():
    result = Engine(RULES).lint(body("return x.permute(0x1, 0).view(-1)"), "hex.py")
    assert result.error is None and result.rule_errors == []
    assert "FL301" in {f.code for f in result.findings}


@pytest.mark.parametrize(
    "line",
    [
        "return x.permute(0x" + "f" * 5000 + ", 0).view(-1)",  # FL301
        "x[0:0x" + "f" * 5000 + "] = x[1:0x" + "e" * 5000 + "]",  # FL404
        "for i in range(0x" + "f" * 5000 + "): x = x + i",  # FL204
    ],
)
def test_huge_hex_literals_do_not_crash_a_rule(line):
    result = Engine(RULES).lint(body(line, "return x.item()"), "huge.py")
    assert result.error is None and result.rule_errors == []
    assert "FL101" in {f.code for f in result.findings}


def test_huge_decimal_literal_is_cpythons_syntax_error(project):
    (project / "huge.py").write_text(body("return x.permute(" + "1" * 5000 + ", 0).view(-1)"))
    code, doc = check_json(project)
    assert code == 1
    [error] = errors_for(doc, "huge.py")
    assert error["message"].startswith("syntax error: Exceeds the limit (4300 digits)")


# --------------------------------------------------------------------------- internal errors


class Broken(Rule):
    """Raises on every call in compiled code: stands for a bug in one rule."""

    code = "FL998"
    name = "broken"
    message = "never reported"
    effects = (Effect.GRAPH_BREAK,)

    def visit_Call(self, node, ctx) -> None:
        if ctx.function is not None and "permute" in cst.Module([]).code_for_node(node):
            raise KeyError("boom")


def test_a_rule_that_raises_loses_only_its_own_findings():
    fl301, fl101 = all_rules()["FL301"], all_rules()["FL101"]
    result = Engine([fl301, Broken, fl101]).lint(BAD_VIEW, "model.py")
    assert result.error is None
    assert {f.code for f in result.findings} == {"FL301", "FL101"}  # rules before and after it ran
    [crash] = result.rule_errors
    assert (crash.code, crash.rule, crash.path, crash.line) == ("internal", "FL998", "model.py", 7)
    assert crash.message.startswith("FL998 crashed (KeyError: 'boom')")


@pytest.fixture
def broken_registry(monkeypatch):
    import fusionlint.runner as runner

    rules = {**all_rules(), "FL998": Broken}
    monkeypatch.setattr(runner, "all_rules", lambda: rules)


def test_rule_crash_is_in_every_report_and_exits_2(project, broken_registry):
    (project / "clean.py").write_text("x = 1\n")
    code, doc = check_json(project)
    assert code == 2
    assert {f["code"] for f in doc["findings"] if f["path"] == "model.py"} >= {"FL301", "FL101"}
    [crash] = doc["errors"]
    assert crash["path"] == "model.py" and crash["code"] == "internal" and crash["rule"] == "FL998"
    assert crash["message"].startswith("FL998 crashed (KeyError: 'boom')") and crash["line"] == 7

    text = run_cli(["check", "."], project)
    assert text.exit_code == 2
    assert "model.py:7:13: internal FL998 crashed (KeyError: 'boom')" in text.output
    assert "model.py:7:13: FL301" in text.output

    sarif = json.loads(run_cli(["check", ".", "--format", "sarif"], project).stdout)
    invocation = sarif["runs"][0]["invocations"][0]
    assert invocation["executionSuccessful"] is False
    assert [n["message"]["text"] for n in invocation["toolExecutionNotifications"]] == [f"model.py: {crash['message']}"]
    assert {r["ruleId"] for r in sarif["runs"][0]["results"]} >= {"FL301", "FL101"}


def test_rule_crash_during_fix_still_fixes_the_other_rules(project, broken_registry):
    result = run_cli(["check", ".", "--fix"], project)
    assert result.exit_code == 2
    assert "internal FL998 crashed" in result.output and result.output.count("FL998 crashed") == 1
    assert ".reshape(" in (project / "model.py").read_text()
