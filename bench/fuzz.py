"""Fuzz the fusionlint CLI with mutated sources and report what goes wrong.

    python bench/fuzz.py                         # 10,000 files, seed 0; writes bench/results/fuzz-<date>.txt
    python bench/fuzz.py --files 500 --seed 7    # smaller, another seed
    python bench/fuzz.py --only 1234 --keep /tmp/case    # regenerate one case (to reproduce a failure)

Every file is a mutation of a bundled source (fixtures/, examples/, tests/confirm_data/): token
deletions and duplications, spliced lines, deep nesting, coding cookies (valid, bogus and non-text
codecs), BOMs, lone CR / CR-only / mixed newlines, NUL and invalid UTF-8 bytes, huge literals, long
lines, non-ASCII identifiers, Unicode line separators, or a combination. Case ``i`` depends only on
``--seed`` and ``i``, so a failure can be regenerated alone.

Each case runs in three modes on its own fresh copy: ``check --select ALL --unsafe-fixes --format
json``, the same with ``--fix``, and with ``--diff``. Cases go in batches of ``--batch-size`` through
one subprocess that calls the CLI once per file and mode (click's test runner, in-process: a crash
is attributed to its file without re-running anything; a per-file alarm ends a hang), and each batch
also goes through one real ``fusionlint check`` process over all its files (cross-file analysis,
exit code, the whole JSON document). Reported per case:

- traceback: "Traceback (most recent call last)" on stderr (the run aborted)
- hang: the run exceeded its time limit (killed with its process group)
- internal error: exit code other than 0/1 (or killed by a signal), or an "internal error" line
- damaged: after ``--fix``, a file that CPython parsed no longer parses, lost its encoding/BOM, or has
  bytes changed outside the fix edits that the JSON run reported; ``--diff`` changed a file; a file
  CPython cannot parse was rewritten
- invalid json: ``--format json`` printed something that is not JSON

Peak memory is ``ru_maxrss`` of each process (``os.wait4``), and per file the growth of the
driver's own peak while that file ran; every process runs under an address-space limit
(``--memory-mb``), so one input cannot take the machine's memory (it shows as a MemoryError).
"""

from __future__ import annotations

import argparse
import ast
import collections
import dataclasses
import datetime
import difflib
import io
import json
import os
import random
import re
import resource
import shutil
import signal
import sys
import tempfile
import time
import tokenize
import warnings
from pathlib import Path
from typing import Callable, Optional

HERE = Path(__file__).resolve().parent.parent
RESULTS = HERE / "bench" / "results"
SELECT = ["--select", "ALL", "--unsafe-fixes"]
MODES = ("json", "fix", "diff")

# ---------------------------------------------------------------------------------------- corpus


def base_sources() -> list[tuple[str, str]]:
    """(name, text) of the bundled sources the mutations start from, in a fixed order."""
    paths = sorted(HERE.glob("fixtures/*/*.py")) + sorted(HERE.glob("examples/*.py")) + sorted(HERE.glob("tests/confirm_data/*.py"))
    return [(str(p.relative_to(HERE)), p.read_text(encoding="utf-8")) for p in paths]


_TOKEN = re.compile(r"\w+|[^\w\s]|\s+")
_PY_LINES = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


def py_lines(text: str) -> list[str]:
    """Physical lines as the Python language defines them (\\n, \\r\\n or a lone \\r end a line).
    Not str.splitlines(), which also splits at \\x0b, \\x0c, \\x1c-\\x1e, \\x85, U+2028, U+2029."""
    return _PY_LINES.findall(text)


def _newline_positions(text: str) -> list[int]:
    return [m.end() for m in re.finditer(r"\r\n|\r|\n", text)]


def _forward_body_line(lines: list[str], rng: random.Random) -> int:
    """Index of a line just after a ``def forward`` (or a random line), where inserted code runs compiled."""
    idx = [i for i, ln in enumerate(lines) if ln.lstrip().startswith("def forward")]
    return (rng.choice(idx) + 1) if idx else rng.randrange(len(lines) + 1)


def _insert_in_forward(text: str, rng: random.Random, statement: str) -> str:
    lines = text.splitlines(keepends=True) or ["\n"]
    at = _forward_body_line(lines, rng)
    indent = "        " if at and lines[at - 1].startswith("    def") else "    " if at else ""
    if at == len(lines) and at and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    lines.insert(at, indent + statement + "\n")
    return "".join(lines)


# ------------------------------------------------------------------------------------- mutations
# Text mutations take (rng, text, corpus) and return text; byte mutations return bytes.


def m_identity(rng, text, corpus):
    return text


def m_token_delete(rng, text, corpus):
    toks = _TOKEN.findall(text)
    for _ in range(rng.randint(1, 3)):
        if toks:
            del toks[rng.randrange(len(toks))]
    return "".join(toks)


def m_token_duplicate(rng, text, corpus):
    toks = _TOKEN.findall(text)
    for _ in range(rng.randint(1, 3)):
        if toks:
            i = rng.randrange(len(toks))
            toks.insert(i, toks[i])
    return "".join(toks)


def m_lines(rng, text, corpus):
    lines = text.splitlines(keepends=True)
    for _ in range(rng.randint(1, 4)):
        if not lines:
            break
        i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
        op = rng.choice(("delete", "duplicate", "swap"))
        if op == "delete":
            del lines[i]
        elif op == "duplicate":
            lines.insert(i, lines[i])
        else:
            lines[i], lines[j] = lines[j], lines[i]
    return "".join(lines)


def m_splice(rng, text, corpus):
    other = rng.choice(corpus)[1].splitlines(keepends=True)
    a = rng.randrange(len(other))
    chunk = other[a : a + rng.randint(1, 12)]
    lines = text.splitlines(keepends=True)
    at = rng.randrange(len(lines) + 1)
    return "".join(lines[:at] + chunk + lines[at:])


def m_deep_brackets(rng, text, corpus):
    depth = rng.choice((20, 90, 150, 250, 500, 1000))
    o, c = rng.choice((("(", ")"), ("[", "]"), ("{", "}")))
    return _insert_in_forward(text, rng, "deep = " + o * depth + "x" + c * depth)


def m_deep_item_list(rng, text, corpus):
    depth = rng.choice((20, 150, 300))
    return _insert_in_forward(text, rng, "deep = " + "[" * depth + "x.item()" + "]" * depth)


def m_subscript_chain(rng, text, corpus):
    # chains cost super-linear time (issue 8): mostly short ones, so 10,000 files stay affordable
    n = rng.choice((10, 20, 50, 50, 100, 150))
    return _insert_in_forward(text, rng, "y = x" + "[0]" * n)


def m_binop_chain(rng, text, corpus):
    n = rng.choice((100, 500, 1000))
    return _insert_in_forward(text, rng, "y = x.item()" + " + x" * n)


def m_attribute_chain(rng, text, corpus):
    n = rng.choice((50, 100, 200, 500))
    return _insert_in_forward(text, rng, "y = x" + ".permute(0, 1)" * (n // 10) + ".view(-1)" + ".t" * n)


def m_deep_blocks(rng, text, corpus):
    depth = rng.choice((20, 99, 101, 200))
    body = "".join("    " * i + "if x:\n" for i in range(depth)) + "    " * depth + "y = x.item()\n"
    return text.rstrip("\n") + "\n\n\ndef deep(x):\n" + "".join("    " + ln + "\n" for ln in body.splitlines())


COOKIES_VALID = ("latin-1", "iso-8859-15", "cp1252", "utf-8", "ascii", "koi8-r")
COOKIES_BOGUS = ("rot13", "hex", "base64", "uu", "zlib", "punycode", "undefined", "idna", "bz2",
                 "utf-16", "utf-32", "no-such-codec", "utf-8-sig", "mbcs", "unicode-escape", "raw-unicode-escape")


def _cookie(name: str, rng) -> str:
    return rng.choice(("# -*- coding: {} -*-\n", "# coding={}\n", "# vim: set fileencoding={} :\n")).format(name)


def m_cookie_valid(rng, text, corpus):
    name = rng.choice(COOKIES_VALID)
    extra = rng.choice(("# café naïve\n", "s = 'Ωmega'\n", "# €uro\n", ""))
    body = _cookie(name, rng) + extra + text
    try:
        return body.encode(name)
    except UnicodeEncodeError:
        return body.encode(name, errors="replace")


def m_cookie_bogus(rng, text, corpus):
    cookie = _cookie(rng.choice(COOKIES_BOGUS), rng)
    if rng.random() < 0.3:
        cookie = "#!/usr/bin/env python\n" + cookie  # a cookie is also honoured on line 2
    return (cookie + text).encode("utf-8")


def m_bom(rng, text, corpus):
    kind = rng.choice(("bom", "bom+utf8-cookie", "bom+latin1-cookie", "double-bom", "bom-only", "utf16"))
    if kind == "bom":
        return b"\xef\xbb\xbf" + text.encode()
    if kind == "bom+utf8-cookie":
        return b"\xef\xbb\xbf# coding: utf-8\n" + text.encode()
    if kind == "bom+latin1-cookie":
        return b"\xef\xbb\xbf# coding: latin-1\n" + text.encode()
    if kind == "double-bom":
        return b"\xef\xbb\xbf\xef\xbb\xbf" + text.encode()
    if kind == "bom-only":
        return b"\xef\xbb\xbf"
    return text.encode("utf-16")


def m_lone_cr(rng, text, corpus):
    """A lone \\r inside lines (Python ends a physical line there; many editors do not show it)."""
    chars = list(text)
    spots = [i for i, ch in enumerate(chars) if ch in " #=,"] or [0]
    for _ in range(rng.randint(1, 3)):
        chars.insert(rng.choice(spots), "\r")
    if rng.random() < 0.5:  # the shape from the issue: a comment then a second statement
        lines = "".join(chars).split("\n")
        lines.insert(min(2, len(lines)), "OFFSET_VALUE_FOR_OUTPUT = 1  # note\rSCALE = 2")
        return "\n".join(lines)
    return "".join(chars)


def m_cr_only(rng, text, corpus):
    return text.replace("\n", "\r")


def m_crlf(rng, text, corpus):
    return text.replace("\n", "\r\n")


def m_mixed_newlines(rng, text, corpus):
    return re.sub("\n", lambda m: rng.choice(("\n", "\r\n", "\r")), text)


def m_unicode_separators(rng, text, corpus):
    """Characters str.splitlines() breaks at but Python does not: in comments and strings."""
    ch = rng.choice(("\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"))
    lines = text.split("\n")
    for _ in range(rng.randint(1, 3)):
        i = rng.randrange(len(lines))
        where = rng.choice(("comment", "string", "indent"))
        if where == "comment":
            lines[i] += f"  # a{ch}b"
        elif where == "string":
            lines.insert(i, f"{' ' * (len(lines[i]) - len(lines[i].lstrip()))}s = 'a{ch}b'")
        else:
            lines[i] = ch + lines[i]
    return "\n".join(lines)


def m_nul(rng, text, corpus):
    data = bytearray(text.encode())
    data.insert(rng.randrange(len(data) + 1), 0)
    return bytes(data)


def m_invalid_utf8(rng, text, corpus):
    data = bytearray(text.encode())
    bad = rng.choice((b"\xff", b"\xc3", b"\x80", b"\xed\xa0\x80", b"\xf4\x90\x80\x80"))
    at = rng.randrange(len(data) + 1)
    return bytes(data[:at] + bad + data[at:])


def m_huge_literal(rng, text, corpus):
    kind = rng.choice(("int", "int-permute", "hex-permute", "string", "float", "bytes"))
    digits = "1" + "0" * rng.choice((4299, 4300, 5000, 20000))
    statement = {
        "int": f"big = {digits}",
        "int-permute": f"y = x.permute({digits}, 0).view(-1)",
        "hex-permute": "y = x.permute(0x1, 0).view(-1)" if rng.random() < 0.5 else "y = x.permute(0b1, 0o0).view(-1)",
        "string": "s = '" + "a" * rng.choice((10_000, 300_000)) + "'",
        "float": "f = 1e" + "9" * 400,
        "bytes": "b = b'" + "\\x00" * 50_000 + "'",
    }[kind]
    return _insert_in_forward(text, rng, statement)


def m_long_line(rng, text, corpus):
    # libcst needs about 1.4 GB for a 1 MB one-line list (issue 8): the long ones are rare
    n = rng.choice((500, 1_000, 2_000, 2_000, 5_000, 5_000, 10_000, 10_000, 20_000, 20_000) * 3 + (50_000, 150_000))
    kind = rng.choice(("list", "call-args", "comment"))
    if kind == "list":
        statement = "table = [" + ", ".join("0" for _ in range(n)) + "]"
    elif kind == "call-args":
        statement = "y = torch.cat([" + ", ".join("x" for _ in range(n // 10)) + "])"
    else:
        statement = "pass  # " + "x" * n
    return _insert_in_forward(text, rng, statement)


_IDENT = re.compile(r"\b(x|h|out|scale|self|forward|Model|torch|nn)\b")
UNICODE_NAMES = ("ẋ", "张量", "тензор", "ｘ", "ﬁx", "x\u0301", "𝐱", "x\u200d", "ⅸ", "_ß")


def m_unicode_identifiers(rng, text, corpus):
    target = rng.choice(("x", "h", "out", "scale", "self", "Model"))
    new = rng.choice(UNICODE_NAMES)
    text = re.sub(rf"\b{target}\b", new, text)
    if rng.random() < 0.5:
        text = text.replace("#", rng.choice(("# ✓ ", "# \u202e rtl ", "# 🐍 ", "# \ufeff ")), 1)
    return text


def m_whitespace(rng, text, corpus):
    kind = rng.choice(("tabs", "formfeed", "no-final-newline", "empty", "comment-only", "trailing", "indent-mix"))
    if kind == "tabs":
        return text.replace("        ", "\t\t")
    if kind == "formfeed":
        lines = text.split("\n")
        i = rng.randrange(len(lines))
        lines[i] = "\x0c" + lines[i]
        return "\n".join(lines)
    if kind == "no-final-newline":
        return text.rstrip("\n")
    if kind == "empty":
        return ""
    if kind == "comment-only":
        return "# only a comment"
    if kind == "trailing":
        return text.replace("\n", " \t \n")
    return text.replace("        ", "    \t", rng.randint(1, 3))


TEXT_MUTATIONS: dict[str, Callable] = {
    "identity": m_identity,
    "token-delete": m_token_delete,
    "token-duplicate": m_token_duplicate,
    "lines": m_lines,
    "splice": m_splice,
    "deep-brackets": m_deep_brackets,
    "deep-item-list": m_deep_item_list,
    "subscript-chain": m_subscript_chain,
    "binop-chain": m_binop_chain,
    "attribute-chain": m_attribute_chain,
    "deep-blocks": m_deep_blocks,
    "lone-cr": m_lone_cr,
    "cr-only": m_cr_only,
    "crlf": m_crlf,
    "mixed-newlines": m_mixed_newlines,
    "unicode-separators": m_unicode_separators,
    "huge-literal": m_huge_literal,
    "long-line": m_long_line,
    "unicode-identifiers": m_unicode_identifiers,
    "whitespace": m_whitespace,
}
BYTE_MUTATIONS: dict[str, Callable] = {
    "cookie-valid": m_cookie_valid,
    "cookie-bogus": m_cookie_bogus,
    "bom": m_bom,
    "nul": m_nul,
    "invalid-utf8": m_invalid_utf8,
}
# Cheap local mutations a combination may chain (the costly deep/long ones stay single).
COMBINABLE = ("token-delete", "token-duplicate", "lines", "splice", "lone-cr", "cr-only", "crlf", "mixed-newlines",
              "unicode-separators", "unicode-identifiers", "whitespace")
GENERATORS = [*TEXT_MUTATIONS, *BYTE_MUTATIONS, "combo"]


@dataclasses.dataclass
class Case:
    index: int
    generator: str  # the mutation (for combos: "combo:a+b+c")
    base: str
    data: bytes

    @property
    def name(self) -> str:
        return f"c{self.index:05d}.py"

    @property
    def family(self) -> str:
        return self.generator.split(":", 1)[0]


def make_case(seed: int, index: int, corpus: list[tuple[str, str]]) -> Case:
    rng = random.Random(f"fusionlint-fuzz/{seed}/{index}")
    base, text = rng.choice(corpus)
    generator = GENERATORS[index % len(GENERATORS)]  # every generator equally often
    if generator == "combo":
        chain = rng.sample(COMBINABLE, rng.randint(2, 3))
        for name in chain:
            text = TEXT_MUTATIONS[name](rng, text, corpus)
        data = text.encode("utf-8", errors="surrogatepass")
        if rng.random() < 0.4:
            last = rng.choice(("bom", "cookie-valid", "cookie-bogus"))
            chain.append(last)
            data = BYTE_MUTATIONS[last](rng, text, corpus)
        return Case(index, "combo:" + "+".join(chain), base, data)
    if generator in BYTE_MUTATIONS:
        return Case(index, generator, base, BYTE_MUTATIONS[generator](rng, text, corpus))
    out = TEXT_MUTATIONS[generator](rng, text, corpus)
    return Case(index, generator, base, out.encode("utf-8", errors="surrogatepass"))


def make_cases(seed: int, count: int, only: Optional[list[int]] = None) -> list[Case]:
    corpus = base_sources()
    return [make_case(seed, i, corpus) for i in (only if only is not None else range(count))]


# ------------------------------------------------------------------------------------ running


@dataclasses.dataclass
class Proc:
    returncode: Optional[int]  # None: killed after the time limit
    stdout: str
    stderr: str
    maxrss_mb: float
    seconds: float


def run_python(args: list[str], cwd: Path, timeout: float, memory_mb: int) -> Proc:
    """Run ``python ARGS`` in its own session under an address-space limit; wait with os.wait4 for
    its resource usage (peak RSS); kill the whole process group after ``timeout`` seconds."""
    import subprocess

    out_path, err_path = cwd / ".fuzz-stdout", cwd / ".fuzz-stderr"
    limit = memory_mb * 1024 * 1024

    def child_setup():  # in the child, before exec
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    env = dict(os.environ, PYTHONPATH=str(HERE), NO_COLOR="1")
    env.pop("FORCE_COLOR", None)
    start = time.perf_counter()
    with open(out_path, "wb") as out, open(err_path, "wb") as err, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # preexec_fn is unsafe with threads; this harness starts none
        proc = subprocess.Popen([sys.executable, *args], cwd=cwd, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                env=env, start_new_session=True, preexec_fn=child_setup)
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                code = os.waitstatus_to_exitcode(status)
                break
            if time.perf_counter() - start > timeout:
                os.killpg(proc.pid, signal.SIGKILL)
                _, _, usage = os.wait4(proc.pid, 0)
                code = None
                break
            time.sleep(0.02)
    proc.returncode = -1  # reaped here: Popen must not wait for it again
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # anything it left behind
    except ProcessLookupError:
        pass
    stdout, stderr = out_path.read_bytes().decode("utf-8", "replace"), err_path.read_bytes().decode("utf-8", "replace")
    out_path.unlink()
    err_path.unlink()
    return Proc(code, stdout, stderr, usage.ru_maxrss / 1024, time.perf_counter() - start)


ARGS = {"json": [*SELECT, "--format", "json"], "fix": [*SELECT, "--fix"], "diff": [*SELECT, "--diff"]}
_INTERNAL = re.compile(r"^(?:fusionlint: )?(c\d{5}\.py): (internal error: .*)$", re.M)


def classify(mode: str, code: Optional[int], stdout: str, stderr: str, timeout: float) -> tuple[list[str], Optional[dict]]:
    """Symptoms of one fusionlint invocation on one file, and its JSON document (json mode)."""
    if code is None:
        return [f"hang ({mode}): no exit after {timeout:g} s"], None
    symptoms = []
    if "Traceback (most recent call last)" in stderr:
        last = [ln for ln in stderr.strip().splitlines() if ln.strip()][-1].strip()
        symptoms.append(f"traceback ({mode}): {last[:160]}")
    elif code < 0:
        symptoms.append(f"internal error ({mode}): killed by signal {-code}")
    elif code not in (0, 1):
        named = [m for _, m in _INTERNAL.findall(stderr)]
        why = named[0][len("internal error: "):] if named else f"exit {code}: {stderr.strip()[-160:]}"
        symptoms.append(f"internal error ({mode}): {why[:160]}")
    doc = None
    if mode == "json" and (code in (0, 1) or code == 2 and stdout.strip() and "Traceback" not in stderr):
        try:
            doc = json.loads(stdout)
        except ValueError:
            symptoms.append(f"invalid json: {stdout[:60]!r}")
    return symptoms, doc


class _Hang(BaseException):
    """Raised by SIGALRM in the driver; a BaseException so that no `except Exception` swallows it."""


def driver(listing: Path, results: Path, per_file_timeout: float) -> None:
    """Child side: run the CLI in this process once per file and mode (``./<mode>/<name>``), one
    JSON line per invocation into ``results``; a "start" line first, so that a hang the alarm
    cannot interrupt (native code) is still attributed after the parent kills this process."""
    import traceback

    from click.testing import CliRunner

    from fusionlint.cli import main as cli

    def alarm(signum, frame):
        raise _Hang()

    signal.signal(signal.SIGALRM, alarm)
    root = Path.cwd()
    runner = CliRunner()
    with open(results, "a", encoding="utf-8") as out:
        for line in listing.read_text(encoding="utf-8").split():
            name, mode = line.split(":")
            out.write(json.dumps({"start": name, "mode": mode}) + "\n")
            out.flush()
            os.chdir(root / mode)
            rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            t0 = time.process_time()
            signal.setitimer(signal.ITIMER_REAL, per_file_timeout)
            try:
                res = runner.invoke(cli, ["check", *ARGS[mode], name], catch_exceptions=True)
                signal.setitimer(signal.ITIMER_REAL, 0)
                code, stdout, stderr = res.exit_code, res.stdout, res.stderr
                if res.exception is not None and not isinstance(res.exception, SystemExit):
                    code = 2
                    stderr += "".join(traceback.format_exception(*res.exc_info))
            except _Hang:
                code, stdout, stderr = None, "", ""
            except BaseException as exc:  # RecursionError escaping click, MemoryError...
                signal.setitimer(signal.ITIMER_REAL, 0)
                code, stdout, stderr = 2, "", "".join(traceback.format_exception(exc))
            finally:
                os.chdir(root)
            grew = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss0) / 1024
            out.write(json.dumps({"name": name, "mode": mode, "code": code, "stdout": stdout, "stderr": stderr,
                                  "rss_growth_mb": grew, "cpu_s": time.process_time() - t0}) + "\n")
            out.flush()


@dataclasses.dataclass
class FileResult:
    symptoms: list[str] = dataclasses.field(default_factory=list)
    findings: Optional[list[dict]] = None  # from the json mode run
    output: dict = dataclasses.field(default_factory=dict)  # mode -> the file's bytes after the run


def run_cases(cases: list[Case], workdir: Path, per_file_timeout: float, memory_mb: int, stats: dict) -> dict[int, FileResult]:
    """Every case in every mode, on fresh copies, through one driver process (restarted after a
    hang it could not interrupt), plus one real ``fusionlint check`` of the whole batch."""
    batch = Path(tempfile.mkdtemp(prefix="batch-", dir=workdir))
    by_name = {c.name: c for c in cases}
    for mode in MODES:
        (batch / mode).mkdir()
        for c in cases:
            (batch / mode / c.name).write_bytes(c.data)
    results = {c.index: FileResult() for c in cases}
    # json for every case; --fix and --diff only where there is something to fix or the json run
    # failed (on any other file they run exactly the code the json run ran).
    _drive(batch, [f"{c.name}:json" for c in cases], by_name, results, per_file_timeout, memory_mb, stats)
    second = [c for c in cases if results[c.index].symptoms or results[c.index].findings is None
              or any(f.get("fix") for f in results[c.index].findings)]
    stats["fixed_runs"] += len(second)
    _drive(batch, [f"{c.name}:{mode}" for c in second for mode in ("fix", "diff")], by_name, results, per_file_timeout, memory_mb, stats)
    for mode in ("fix", "diff"):
        for c in cases:
            p = batch / mode / c.name
            results[c.index].output[mode] = p.read_bytes() if p.exists() else None

    # The real command line over the whole batch: one process, one project, cross-file analysis.
    whole = batch / "whole"
    whole.mkdir()
    for c in cases:
        (whole / c.name).write_bytes(c.data)
    limit = 120 + per_file_timeout * len(cases) / 10
    proc = run_python(["-m", "fusionlint.cli", "check", *ARGS["json"], *(c.name for c in cases)], whole, limit, memory_mb)
    stats["runs"] += 1
    stats["seconds"] += proc.seconds
    if proc.maxrss_mb > stats["peak_mb"]:
        stats["peak_mb"], stats["peak_where"] = proc.maxrss_mb, f"`fusionlint check` of {len(cases)} files"
    symptoms, _ = classify("json", proc.returncode, proc.stdout, proc.stderr, limit)
    if symptoms and not any(r.symptoms for r in results.values()):  # not explained by one file alone
        for r in results.values():
            r.symptoms += [f"{s} (whole batch of {len(cases)} only)" for s in symptoms]
    shutil.rmtree(batch, ignore_errors=True)
    return results


def _drive(batch: Path, todo: list[str], by_name: dict, results: dict, per_file_timeout: float, memory_mb: int, stats: dict) -> None:
    log = batch / "results.jsonl"
    log.write_text("", encoding="utf-8")
    while todo:
        (batch / "todo.txt").write_text("\n".join(todo), encoding="utf-8")
        # The per-file alarm ends a hang in Python code; this limit only catches one in native code.
        proc = run_python([str(Path(__file__).resolve()), "--driver", "todo.txt", str(log), str(per_file_timeout)],
                          batch, 120 + 3 * per_file_timeout * len(todo) / 10, memory_mb)
        stats["runs"] += 1
        stats["seconds"] += proc.seconds
        if proc.maxrss_mb > stats["peak_mb"]:
            stats["peak_mb"], stats["peak_where"] = proc.maxrss_mb, f"driver over {len(todo)} invocations"
        done, started = set(), None
        for line in log.read_text(encoding="utf-8").splitlines():
            rec = json.loads(line)
            if "start" in rec:
                started = f"{rec['start']}:{rec['mode']}"
                continue
            started = None
            key = f"{rec['name']}:{rec['mode']}"
            done.add(key)
            case = by_name[rec["name"]]
            symptoms, doc = classify(rec["mode"], rec["code"], rec["stdout"], rec["stderr"], per_file_timeout)
            results[case.index].symptoms += symptoms
            if doc is not None:
                results[case.index].findings = [f for f in doc.get("findings", []) if f.get("path") == case.name]
            stats["cpu_by_generator"][case.family] += rec["cpu_s"]
            if rec["rss_growth_mb"] > stats["file_peak_mb"]:
                stats["file_peak_mb"], stats["file_peak_case"] = rec["rss_growth_mb"], case.index
        if started is not None and started not in done:  # killed in the middle of this one
            name, mode = started.split(":")
            results[by_name[name].index].symptoms.append(f"hang ({mode}): not interruptible, process killed")
            done.add(started)
        elif proc.returncode is None or proc.returncode != 0:
            rest = [t for t in todo if t not in done]
            if rest:  # the driver died between files: blame the next one
                name, mode = rest[0].split(":")
                why = "killed" if proc.returncode is None else f"exit {proc.returncode}: {proc.stderr.strip()[-120:]}"
                results[by_name[name].index].symptoms.append(f"internal error ({mode}): driver {why}")
                done.add(rest[0])
        todo = [t for t in todo if t not in done]
        log.write_text("", encoding="utf-8")


# ------------------------------------------------------------------------------------- damage


def python_parses(data: bytes) -> bool:
    try:
        compile(data, "<fuzz>", "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
        return True
    except (SyntaxError, ValueError, RecursionError, MemoryError, UnicodeError, LookupError, OverflowError):
        return False


def source_encoding(data: bytes) -> Optional[str]:
    try:
        return tokenize.detect_encoding(io.BytesIO(data).readline)[0]
    except (SyntaxError, LookupError, UnicodeError):
        return None


def apply_json_edits(text: str, findings: list[dict]) -> str:
    """The JSON run's fix edits applied at Python's line boundaries (columns in code points),
    whole fixes only, a fix overlapping an earlier one left out: the first fix round, recomputed."""
    starts = [0] + _newline_positions(text)
    taken: list[tuple[int, int]] = []
    spans = []
    for f in findings:
        fix = f.get("fix")
        if not fix:
            continue
        try:
            mine = [(starts[e["line"] - 1] + e["column"] - 1, starts[e["end_line"] - 1] + e["end_column"] - 1, e["content"])
                    for e in fix["edits"]]
        except IndexError:
            return "\x00<edit position outside the file>"
        if any(a < y and x < b or a == b == x == y for a, b, _ in mine for x, y in taken):
            continue
        taken += [(a, b) for a, b, _ in mine]
        spans += mine
    for a, b, content in sorted(spans, reverse=True):
        text = text[:a] + content + text[b:]
    return text


def edited_lines(findings: list[dict]) -> set[int]:
    """0-based Python lines that some fix edit of the JSON run touches."""
    return {ln - 1 for f in findings if f.get("fix") for e in f["fix"]["edits"] for ln in range(e["line"], e["end_line"] + 1)}


def damage(case: Case, fixed: Optional[bytes], findings: Optional[list[dict]]) -> Optional[str]:
    """Why the ``--fix`` output of ``case`` is damaged, or None."""
    orig = case.data
    if fixed == orig:
        return None
    if fixed is None:
        return "the file was deleted"
    if not python_parses(orig):
        return "a file CPython cannot parse was rewritten"
    if not python_parses(fixed):
        return "unparseable after --fix"
    enc = source_encoding(orig)
    if source_encoding(fixed) != enc or orig.startswith(b"\xef\xbb\xbf") != fixed.startswith(b"\xef\xbb\xbf"):
        return f"encoding or BOM changed ({enc} -> {source_encoding(fixed)})"
    before, after = orig.decode(enc), fixed.decode(enc)
    if findings is None:
        return None  # no JSON result for this file: the parse and encoding checks are all we have
    if apply_json_edits(before, findings) == after:
        return None
    # Later fix rounds change text the first round's edits do not cover; they must stay on the
    # lines that the reported edits touch.
    allowed = edited_lines(findings)
    a, b = py_lines(before), py_lines(after)
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        touched = set(range(i1, i2)) if i2 > i1 else {i1 - 1, i1}
        if not touched & allowed or (i2 > i1 and not touched <= allowed):
            was, now = "".join(a[i1:i2])[:50], "".join(b[j1:j2])[:50]
            return f"bytes changed outside the fix edits (line {i1 + 1}: {was!r} -> {now!r})"
    return None


# ------------------------------------------------------------------------------------- report


@dataclasses.dataclass
class Report:
    cases: list[Case]
    symptoms: dict[int, list[str]]
    stats: dict
    seconds: float

    def kinds(self, index: int) -> set[str]:
        return {s.split(" ", 1)[0].rstrip(":") for s in self.symptoms.get(index, [])}

    def count(self, kind: str) -> int:
        return sum(1 for c in self.cases if kind in self.kinds(c.index))

    def table(self) -> str:
        cols = ("traceback", "hang", "internal", "damaged", "invalid")
        rows = collections.defaultdict(lambda: collections.Counter())
        for c in self.cases:
            rows[c.family]["files"] += 1
            for k in self.kinds(c.index):
                rows[c.family][k] += 1
        head = "| generator | files | tracebacks | hangs | internal errors | damaged | invalid json |"
        lines = [head, "|---|---|---|---|---|---|---|"]
        for fam in sorted(rows):
            r = rows[fam]
            lines.append(f"| {fam} | {r['files']} | " + " | ".join(str(r[k]) for k in cols) + " |")
        tot = collections.Counter()
        for r in rows.values():
            tot.update(r)
        lines.append("| **all** | **{}** | ".format(tot["files"]) + " | ".join(f"**{tot[k]}**" for k in cols) + " |")
        return "\n".join(lines)

    def text(self, seed: int, argv: list[str]) -> str:
        s = self.stats
        out = [
            f"fusionlint fuzz: {len(self.cases)} files, seed {seed}, {datetime.datetime.now().isoformat(timespec='seconds')}",
            f"command: python bench/fuzz.py {' '.join(argv)}",
            f"runs: {s['runs']} processes, {s['seconds']:.0f} s in them, {self.seconds:.0f} s in all; --fix and --diff "
            f"ran on the {s['fixed_runs']} files with a fix (or a failed json run)",
            f"peak memory (max RSS) of one process: {s['peak_mb']:.0f} MB ({s['peak_where']}); largest growth "
            f"during one file: {s['file_peak_mb']:.0f} MB (case {s['file_peak_case']})",
            f"files with a problem: {sum(1 for c in self.cases if self.symptoms.get(c.index))}",
            "",
            self.table(),
            "",
            "Problems (case, generator, base file: symptom). Regenerate one with --seed "
            f"{seed} --only N --keep DIR.",
        ]
        by_symptom = collections.defaultdict(list)
        for c in self.cases:
            for sym in self.symptoms.get(c.index, []):
                by_symptom[re.sub(r"c\d{5}\.py", "cN.py", sym)].append(c)
        for sym, cs in sorted(by_symptom.items(), key=lambda kv: -len(kv[1])):
            gens = collections.Counter(c.family for c in cs)
            out.append(f"- {len(cs)} × {sym}")
            out.append(f"    generators: {', '.join(f'{g} ({n})' for g, n in gens.most_common())}")
            out.append(f"    e.g. {', '.join(f'{c.index} ({c.generator}, {c.base})' for c in cs[:3])}")
        return "\n".join(out) + "\n"


def fuzz(cases: list[Case], *, batch_size: int = 100, per_file_timeout: float = 30, memory_mb: int = 4096,
         progress: Callable[[str], None] = lambda s: None) -> Report:
    t0 = time.perf_counter()
    stats = {"runs": 0, "seconds": 0.0, "peak_mb": 0.0, "peak_where": "", "file_peak_mb": 0.0, "file_peak_case": None, "fixed_runs": 0,
             "cpu_by_generator": collections.Counter()}
    symptoms: dict[int, list[str]] = collections.defaultdict(list)
    with tempfile.TemporaryDirectory(prefix="fusionlint-fuzz-") as tmp:
        for start in range(0, len(cases), batch_size):
            batch = cases[start : start + batch_size]
            results = run_cases(batch, Path(tmp), per_file_timeout, memory_mb, stats)
            for c in batch:
                r = results[c.index]
                symptoms[c.index] += r.symptoms
                why = damage(c, r.output["fix"], r.findings)
                if why:
                    symptoms[c.index].append(f"damaged (fix): {why}")
                if r.output["diff"] != c.data:
                    symptoms[c.index].append("damaged (diff): --diff changed the file")
            bad = sum(1 for c in batch if symptoms[c.index])
            progress(f"{start + len(batch)}/{len(cases)} files, {bad} of the last {len(batch)} with problems, "
                     f"peak {stats['peak_mb']:.0f} MB, {time.perf_counter() - t0:.0f} s")
    return Report(cases, {k: v for k, v in symptoms.items() if v}, stats, time.perf_counter() - t0)


def main(argv: Optional[list[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--batch-size", type=int, default=100)
    parser.add_argument("--timeout", type=float, default=30, help="seconds per file and mode before it counts as a hang")
    parser.add_argument("--memory-mb", type=int, default=4096, help="address-space limit per fusionlint process")
    parser.add_argument("--only", type=lambda s: [int(x) for x in s.split(",")], help="case numbers, comma-separated")
    parser.add_argument("--keep", type=Path, help="write the generated files into this directory")
    parser.add_argument("--output", type=Path, help="results file (default bench/results/fuzz-<date>.txt)")
    parser.add_argument("--driver", nargs=3, help=argparse.SUPPRESS)  # internal: the child process
    args = parser.parse_args(argv)
    if args.driver:
        driver(Path(args.driver[0]), Path(args.driver[1]), float(args.driver[2]))
        return 0
    cases = make_cases(args.seed, args.files, args.only)
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
        for c in cases:
            (args.keep / c.name).write_bytes(c.data)
            print(f"{args.keep / c.name}: {c.generator} of {c.base}")
    report = fuzz(cases, batch_size=args.batch_size, per_file_timeout=args.timeout, memory_mb=args.memory_mb,
                  progress=lambda s: print(s, file=sys.stderr, flush=True))
    text = report.text(args.seed, argv)
    print(text)
    if args.only is None:
        out = args.output or RESULTS / f"fuzz-{datetime.date.today().isoformat()}.txt"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text, encoding="utf-8")
        print(f"wrote {out}", file=sys.stderr)
    return 1 if report.symptoms else 0


if __name__ == "__main__":
    raise SystemExit(main())
