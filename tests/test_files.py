"""File discovery, reading and writing: every bad input gets a clear error, never a traceback."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fusionlint import files
from fusionlint.files import (
    SourceError,
    UsageError,
    atomic_write,
    discover,
    display_path,
    parse_gitignore,
    read_source,
)


def write(path: Path, text: str = "x = 1\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def rel(found: list[Path], root: Path) -> list[str]:
    return [display_path(p, root) for p in found]


# --------------------------------------------------------------------------- discover


def test_discover_recurses_sorted_and_only_python(tmp_path):
    write(tmp_path / "b.py")
    write(tmp_path / "a.py")
    write(tmp_path / "stubs.pyi")
    write(tmp_path / "pkg" / "z.py")
    write(tmp_path / "pkg" / "README.md", "hi")
    write(tmp_path / "pkg" / "data.txt", "hi")
    found, errors = discover([tmp_path], root=tmp_path)
    assert errors == []
    assert rel(found, tmp_path) == ["a.py", "b.py", "pkg/z.py", "stubs.pyi"]


def test_discover_deduplicates_overlapping_arguments(tmp_path):
    write(tmp_path / "pkg" / "m.py")
    found, _ = discover([tmp_path, tmp_path / "pkg", tmp_path / "pkg" / "m.py"], root=tmp_path)
    assert rel(found, tmp_path) == ["pkg/m.py"]


def test_relative_argument_gives_relative_paths(tmp_path, monkeypatch):
    write(tmp_path / "src" / "m.py")
    monkeypatch.chdir(tmp_path)
    found, _ = discover(["src"], root=tmp_path)
    assert found == [Path("src/m.py")]


def test_nonexistent_path_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match="path does not exist: .*nope.py"):
        discover([tmp_path / "nope.py"], root=tmp_path)


@pytest.mark.parametrize(
    "skipped",
    [
        ".git/hooks/x.py",
        ".hg/x.py",
        ".svn/x.py",
        ".venv/lib/x.py",
        "venv/lib/x.py",
        ".tox/py/x.py",
        ".nox/py/x.py",
        "build/lib/x.py",
        "dist/x.py",
        "__pycache__/x.py",
        ".eggs/x.py",
        "pkg.egg-info/x.py",
        "node_modules/x.py",
        ".mypy_cache/x.py",
        ".pytest_cache/x.py",
    ],
)
def test_default_skipped_directories(tmp_path, skipped):
    write(tmp_path / "keep.py")
    write(tmp_path / skipped)
    found, errors = discover([tmp_path], root=tmp_path)
    assert rel(found, tmp_path) == ["keep.py"] and errors == []


def test_any_virtualenv_is_skipped_by_pyvenv_cfg(tmp_path):
    write(tmp_path / "keep.py")
    write(tmp_path / "myenv" / "pyvenv.cfg", "home = /usr/bin\n")
    write(tmp_path / "myenv" / "lib" / "site.py")
    found, _ = discover([tmp_path], root=tmp_path)
    assert rel(found, tmp_path) == ["keep.py"]


def test_a_skipped_name_given_explicitly_is_walked(tmp_path):
    write(tmp_path / "build" / "gen.py")
    found, _ = discover([tmp_path / "build"], root=tmp_path)
    assert rel(found, tmp_path) == ["build/gen.py"]


def test_exclude_globs_on_path_and_name(tmp_path):
    write(tmp_path / "keep.py")
    write(tmp_path / "tests" / "fixtures" / "f.py")
    write(tmp_path / "tests" / "test_a.py")
    write(tmp_path / "gen_pb2.py")
    write(tmp_path / "deep" / "x_pb2.py")
    found, _ = discover(
        [tmp_path], root=tmp_path, exclude=["tests/fixtures"], extend_exclude=["*_pb2.py"]
    )
    assert rel(found, tmp_path) == ["keep.py", "tests/test_a.py"]


def test_explicit_file_is_linted_even_if_excluded_ignored_or_not_py(tmp_path):
    write(tmp_path / ".gitignore", "ignored.py\n")
    ignored = write(tmp_path / "ignored.py")
    excluded = write(tmp_path / "excluded.py")
    script = write(tmp_path / "tool", "#!/usr/bin/env python\nx = 1\n")
    venv_file = write(tmp_path / ".venv" / "x.py")
    found, _ = discover(
        [ignored, excluded, script, venv_file], root=tmp_path, exclude=["excluded.py"]
    )
    assert rel(found, tmp_path) == [".venv/x.py", "excluded.py", "ignored.py", "tool"]
    # ... while walking the directory skips all of them (and the non-.py script).
    walked, _ = discover([tmp_path], root=tmp_path, exclude=["excluded.py"])
    assert rel(walked, tmp_path) == []


# --------------------------------------------------------------------------- gitignore


def test_gitignore_patterns_negation_and_dir_only(tmp_path):
    write(
        tmp_path / ".gitignore",
        "# comment\n\n*_gen.py\n!keep_gen.py\nout/\ndata\n/anchored.py\nsub/deep.py\n",
    )
    for name in [
        "a.py",
        "x_gen.py",
        "keep_gen.py",
        "out/o.py",
        "data/d.py",
        "anchored.py",
        "pkg/anchored.py",
        "sub/deep.py",
        "pkg/sub/deep.py",
        "pkg/y_gen.py",
    ]:
        write(tmp_path / name)
    write(tmp_path / "pkg" / "out", "a file named out: dir-only pattern does not match")
    found, _ = discover([tmp_path], root=tmp_path)
    assert rel(found, tmp_path) == [
        "a.py",
        "keep_gen.py",
        "pkg/anchored.py",  # "/anchored.py" only matches at the top
        "pkg/sub/deep.py",  # "sub/deep.py" has a slash: anchored to the .gitignore's dir
    ]


def test_gitignore_double_star(tmp_path):
    write(tmp_path / ".gitignore", "**/gen/*.py\nlogs/**\na/**/z.py\n")
    for name in ["gen/g.py", "x/gen/g.py", "logs/l.py", "a/z.py", "a/b/c/z.py", "a/b/keep.py"]:
        write(tmp_path / name)
    found, _ = discover([tmp_path], root=tmp_path)
    assert rel(found, tmp_path) == ["a/b/keep.py"]


def test_nested_gitignore_applies_to_its_subtree_and_can_negate(tmp_path):
    write(tmp_path / ".gitignore", "*_gen.py\n")
    write(tmp_path / "pkg" / ".gitignore", "!wanted_gen.py\nlocal.py\n")
    for name in ["top_gen.py", "local.py", "pkg/wanted_gen.py", "pkg/other_gen.py", "pkg/local.py"]:
        write(tmp_path / name)
    found, _ = discover([tmp_path], root=tmp_path)
    assert rel(found, tmp_path) == ["local.py", "pkg/wanted_gen.py"]


def test_gitignore_above_the_argument_applies_up_to_repo_root(tmp_path):
    outer = tmp_path / "outer"
    repo = outer / "repo"
    write(outer / ".gitignore", "*.py\n")  # above the repository: must not apply
    (repo / ".git").mkdir(parents=True)
    write(repo / ".gitignore", "skip_me.py\n")
    write(repo / "src" / "skip_me.py")
    write(repo / "src" / "ok.py")
    found, _ = discover([repo / "src"], root=repo)
    assert rel(found, repo) == ["src/ok.py"]


def test_respect_gitignore_false(tmp_path):
    write(tmp_path / ".gitignore", "ignored.py\n")
    write(tmp_path / "ignored.py")
    found, _ = discover([tmp_path], root=tmp_path, respect_gitignore=False)
    assert rel(found, tmp_path) == ["ignored.py"]


def test_gitignore_parser_edge_cases():
    spec = parse_gitignore("\\#hash.py\n\\!bang.py\ntrailing.py   \nsp\\ \n[ab].py\n/\n")
    for text in ["#hash.py", "!bang.py", "trailing.py", "sp ", "a.py"]:
        assert spec.check_file(text).include is True, text
    assert spec.check_file("c.py").include is None


def test_gitignore_with_only_comments_is_no_spec():
    assert parse_gitignore("# nothing\n\n   \n") is None


def test_a_bad_gitignore_line_does_not_void_the_others(tmp_path):
    # A trailing lone backslash is an invalid pattern; git skips that line only.
    write(tmp_path / ".gitignore", "skip.py\nbroken\\\n")
    write(tmp_path / "skip.py")
    write(tmp_path / "keep.py")
    found, _ = discover([tmp_path], root=tmp_path)
    assert rel(found, tmp_path) == ["keep.py"]


# Patterns that made the old hand-written regex translation backtrack for many seconds per path
# (15.7 s per 16-deep path; 13 s per 40-character name). Each case: pattern, path, ignored?
_PATHOLOGICAL = [
    ("**/" * 16 + "zz", "/".join(["d"] * 16) + "/x.py", False),
    ("**/" * 16 + "zz", "/".join(["d"] * 16) + "/zz", True),
    ("*a*a*a*a*a*a*a*ab", "a" * 40, False),
    ("*a*a*a*a*a*a*a*ab", "a" * 40 + "b", True),
    ("*a*a*a*a*a*a*a*ab", "d/" + "a" * 200 + "b", True),
    ("a*" * 20 + "b", "a" * 300, False),
]


def _match_pathological() -> list[bool]:
    return [bool(parse_gitignore(pattern).check_file(path).include) for pattern, path, _ in _PATHOLOGICAL]


def test_pathological_gitignore_patterns_match_correctly_without_hanging():
    # In a subprocess only so that a regression hangs into a failure instead of a stuck suite;
    # the limit is a hang guard, not a speed assertion.
    code = (
        "import json, sys; sys.path.insert(0, sys.argv[1]); import test_files as t;"
        " print(json.dumps(t._match_pathological()))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(Path(__file__).parent)], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == [expected for _, _, expected in _PATHOLOGICAL]


def test_pathological_gitignore_pattern_in_a_tree(tmp_path):
    deep = tmp_path.joinpath(*["d"] * 16)
    write(deep / "x.py")
    write(tmp_path / ("a" * 40 + ".py"))
    write(tmp_path / ("a" * 40 + "b"), "not python")
    write(tmp_path / ".gitignore", "**/" * 16 + "zz\n*a*a*a*a*a*a*a*ab\n")
    code = (
        "import sys; from pathlib import Path; from fusionlint.files import discover;"
        " root = Path(sys.argv[1]); found, _ = discover([root], root=root);"
        " print(len(found))"
    )
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["2"]


# --------------------------------------------------------------------------- non-regular files


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX-only")
def test_fifo_in_the_tree_is_reported_never_opened(tmp_path):
    write(tmp_path / "ok.py")
    os.mkfifo(tmp_path / "pipe.py")
    found, errors = discover([tmp_path], root=tmp_path)
    assert rel(found, tmp_path) == ["ok.py"]
    assert [(e.path, e.message) for e in errors] == [("pipe.py", files.NOT_REGULAR)]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX-only")
def test_fifo_named_explicitly_is_reported(tmp_path):
    os.mkfifo(tmp_path / "pipe.py")
    found, errors = discover([tmp_path / "pipe.py"], root=tmp_path)
    assert found == [] and [e.message for e in errors] == [files.NOT_REGULAR]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX-only")
def test_fifo_symlinked_into_the_tree_is_reported(tmp_path):
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "link.py").symlink_to(tmp_path / "pipe")
    _, errors = discover([tmp_path], root=tmp_path)
    assert [(e.path, e.message) for e in errors] == [("link.py", files.NOT_REGULAR)]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX-only")
@pytest.mark.parametrize("arg", [".", "pipe.py"])
def test_check_with_a_fifo_returns(tmp_path, arg):
    write(tmp_path / "ok.py")
    os.mkfifo(tmp_path / "pipe.py")
    # The timeout only turns a hang into a failure; nothing here measures speed.
    proc = subprocess.run(
        [sys.executable, "-m", "fusionlint.cli", "check", arg],
        cwd=tmp_path, capture_output=True, text=True, timeout=60,
    )
    assert proc.returncode == 1, proc.stderr
    assert "pipe.py" in proc.stdout and "not a regular file" in proc.stdout
    assert "Traceback" not in proc.stderr


# --------------------------------------------------------------------------- symlinks & errors


def test_symlink_loop_does_not_hang(tmp_path):
    write(tmp_path / "pkg" / "m.py")
    os.symlink("..", tmp_path / "pkg" / "loop")  # pkg/loop -> tmp_path, an ancestor
    os.symlink(".", tmp_path / "pkg" / "self")
    found, errors = discover([tmp_path], root=tmp_path)  # following the loops would never return
    assert rel(found, tmp_path) == ["pkg/m.py"]
    assert sorted((e.path, e.message) for e in errors) == [
        ("pkg/loop", "symlink loop"),
        ("pkg/self", "symlink loop"),
    ]


def test_second_link_to_same_directory_is_walked_once(tmp_path):
    write(tmp_path / "real" / "m.py")
    os.symlink(tmp_path / "real", tmp_path / "zlink")
    found, errors = discover([tmp_path], root=tmp_path)
    assert rel(found, tmp_path) == ["real/m.py"] and errors == []


def test_broken_symlink_is_a_file_error(tmp_path):
    write(tmp_path / "ok.py")
    os.symlink(tmp_path / "missing.py", tmp_path / "dangling.py")
    os.symlink(tmp_path / "missing.png", tmp_path / "asset.png")  # not ours: silent
    found, errors = discover([tmp_path], root=tmp_path)
    assert rel(found, tmp_path) == ["ok.py"]
    assert [(e.path, e.message, e.code) for e in errors] == [("dangling.py", "broken symlink", "FL000")]
    # Named explicitly, a broken link is still an error, not a crash or a UsageError.
    found, errors = discover([tmp_path / "dangling.py"], root=tmp_path)
    assert found == [] and [e.message for e in errors] == ["broken symlink"]


def test_unreadable_directory_is_reported_and_walk_continues(tmp_path, monkeypatch):
    write(tmp_path / "ok.py")
    locked = tmp_path / "locked"
    write(locked / "secret.py")
    real_scandir = os.scandir

    if os.geteuid() == 0:
        # root reads a chmod-000 directory anyway, so make the OS answer EACCES for it.
        def scandir(path="."):
            if os.path.abspath(path) == str(locked):
                raise PermissionError(13, "Permission denied", str(path))
            return real_scandir(path)

        monkeypatch.setattr(files.os, "scandir", scandir)
    else:
        locked.chmod(0)
    try:
        found, errors = discover([tmp_path], root=tmp_path)
    finally:
        locked.chmod(0o755)
    assert rel(found, tmp_path) == ["ok.py"]
    assert [(e.path, e.message) for e in errors] == [
        ("locked", "cannot read directory: Permission denied")
    ]


# --------------------------------------------------------------------------- read_source


def test_read_plain_utf8_keeps_newlines(tmp_path):
    p = tmp_path / "m.py"
    p.write_bytes("s = 'héllo'\r\nx = 1\r\n".encode())
    assert read_source(p) == "s = 'héllo'\r\nx = 1\r\n"


def test_empty_file_is_fine(tmp_path):
    p = tmp_path / "empty.py"
    p.write_bytes(b"")
    assert read_source(p) == ""


def test_coding_cookie_is_honoured(tmp_path):
    p = tmp_path / "latin.py"
    p.write_bytes(b"# -*- coding: latin-1 -*-\ns = '\xe9'\n")
    assert read_source(p) == "# -*- coding: latin-1 -*-\ns = 'é'\n"


def test_utf8_bom_is_removed(tmp_path):
    p = tmp_path / "bom.py"
    p.write_bytes(b"\xef\xbb\xbfx = '\xc3\xa9'\n")
    assert read_source(p) == "x = 'é'\n"


def test_undecodable_bytes_name_offset_and_line(tmp_path):
    p = tmp_path / "bad.py"
    p.write_bytes(b"x = 1\ny = '\xff'\n")
    with pytest.raises(SourceError) as info:
        read_source(p)
    assert info.value.line == 2
    assert str(info.value) == (
        "cannot decode file as utf-8: invalid byte 0xff at byte offset 11 (line 2)"
    )


def test_unknown_coding_cookie(tmp_path):
    p = tmp_path / "cookie.py"
    p.write_bytes(b"# coding: klingon\nx = 1\n")
    with pytest.raises(SourceError, match="bad encoding declaration: unknown encoding: klingon"):
        read_source(p)


def test_nul_bytes(tmp_path):
    p = tmp_path / "nul.py"
    p.write_bytes(b"x = 1\n\ny = 2\x00\n")
    with pytest.raises(SourceError, match="^file contains NUL bytes$") as info:
        read_source(p)
    assert info.value.line == 3


def test_unreadable_file(tmp_path, monkeypatch):
    p = write(tmp_path / "secret.py")
    p.chmod(0)
    try:
        readable_anyway = os.access(p, os.R_OK)  # True when running as root
        if readable_anyway:
            # Root ignores mode bits; make open() fail the way it would for a normal user.
            real_open = open

            def fake_open(file, *args, **kwargs):
                if os.fspath(file) == os.fspath(p):
                    raise PermissionError(13, "Permission denied", os.fspath(file))
                return real_open(file, *args, **kwargs)

            monkeypatch.setattr("builtins.open", fake_open)
        with pytest.raises(SourceError, match="^cannot read file: Permission denied$"):
            read_source(p)
    finally:
        monkeypatch.undo()
        p.chmod(stat.S_IRUSR | stat.S_IWUSR)


def test_directory_instead_of_file(tmp_path):
    # Needs no special privileges: a real OS error through the same path as EACCES.
    with pytest.raises(SourceError, match="^cannot read file: Is a directory$"):
        read_source(tmp_path)


def test_five_megabyte_file_reads_fast(tmp_path):
    p = tmp_path / "big.py"
    line = "value_{} = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]  # generated\n"
    text = "".join(line.format(i) for i in range(90_000))
    p.write_text(text)
    assert 5_000_000 <= p.stat().st_size < 10_000_000
    # CPU time of this process, not wall-clock time: the machine's load must not fail the test.
    # Reading and decoding 5 MB takes about 10 ms; a per-line or quadratic reader takes seconds.
    start = time.process_time()
    assert read_source(p) == text
    assert time.process_time() - start < 1.0


def test_file_over_the_limit(tmp_path):
    p = tmp_path / "huge.py"
    p.write_bytes(b"x = 1\n" * 2_000_000)  # 12 MB
    p_just_over = tmp_path / "over.py"
    p_just_over.write_bytes(b"#" * 10_000_001)
    with pytest.raises(SourceError, match=r"^file too large \(10000001 bytes > 10000000 bytes limit\)$"):
        read_source(p_just_over)
    with pytest.raises(SourceError, match=r"^file too large \(12 MB > 10 MB limit\)$"):
        read_source(p)
    with pytest.raises(SourceError, match=r"^file too large \(30 bytes > 10 bytes limit\)$"):
        read_source(write(tmp_path / "small.py", "x = 1\n" * 5), max_bytes=10)


# --------------------------------------------------------------------------- display_path


def test_display_path(tmp_path, monkeypatch):
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    assert display_path(root / "pkg" / "m.py", root) == "pkg/m.py"
    assert display_path(tmp_path / "elsewhere.py", root) == (tmp_path / "elsewhere.py").as_posix()
    monkeypatch.chdir(root)
    assert display_path(Path("pkg/m.py"), root) == "pkg/m.py"
    # Outside the root: absolute, so that it cannot be mistaken for a root-relative path.
    assert display_path(Path("../elsewhere.py"), root) == (tmp_path / "elsewhere.py").as_posix()
    # Reached through a symlink to the root: still root-relative.
    os.symlink(root, tmp_path / "alias")
    assert display_path(tmp_path / "alias" / "pkg" / "m.py", root) == "pkg/m.py"


# --------------------------------------------------------------------------- atomic_write


def test_atomic_write_keeps_mode_and_newlines(tmp_path):
    p = tmp_path / "script.py"
    p.write_bytes(b"old\r\n")
    p.chmod(0o751)
    atomic_write(p, "new = 1\r\nsecond = 'é'\r\n")
    assert p.read_bytes() == "new = 1\r\nsecond = 'é'\r\n".encode()
    assert stat.S_IMODE(p.stat().st_mode) == 0o751
    assert [x.name for x in tmp_path.iterdir()] == ["script.py"]  # no temp file left


def test_atomic_write_encoding_and_new_file(tmp_path):
    p = tmp_path / "new.py"
    atomic_write(p, "s = 'é'\n", encoding="latin-1")
    assert p.read_bytes() == b"s = '\xe9'\n"
    assert stat.S_IMODE(p.stat().st_mode) == 0o644


def test_atomic_write_through_symlink_keeps_the_link(tmp_path):
    target = write(tmp_path / "real.py", "old\n")
    link = tmp_path / "link.py"
    os.symlink(target, link)
    atomic_write(link, "new\n")
    assert link.is_symlink() and target.read_text() == "new\n"


def test_atomic_write_failure_leaves_original_and_no_temp(tmp_path):
    p = write(tmp_path / "m.py", "original\n")
    with pytest.raises(UnicodeEncodeError):
        atomic_write(p, "é\n", encoding="ascii")
    assert p.read_text() == "original\n"
    assert [x.name for x in tmp_path.iterdir()] == ["m.py"]


@pytest.mark.parametrize(
    "data, encoding",
    [
        (b"# -*- coding: latin-1 -*-\r\ns = '\xe9'\r\n", "iso-8859-1"),
        (b"\xef\xbb\xbfs = '\xc3\xa9'\n", "utf-8-sig"),
        (b"s = '\xc3\xa9'\n", "utf-8"),
    ],
)
def test_read_then_atomic_write_reproduces_the_bytes(tmp_path, data, encoding):
    p = tmp_path / "m.py"
    p.write_bytes(data)
    text, found = files.read_source_encoded(p)
    assert found == encoding and "é" in text
    atomic_write(p, text, encoding=found)
    assert p.read_bytes() == data


def test_a_named_directory_that_gitignore_excludes_is_walked(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").write_text("/vendor/\n")
    (tmp_path / "vendor" / "lib").mkdir(parents=True)
    (tmp_path / "vendor" / "lib" / "a.py").write_text("x = 1\n")
    (tmp_path / "vendor" / ".gitignore").write_text("skip.py\n")
    (tmp_path / "vendor" / "skip.py").write_text("x = 1\n")
    (tmp_path / "main.py").write_text("x = 1\n")
    walked, _ = discover([tmp_path], root=tmp_path)
    assert [p.name for p in walked] == ["main.py"]
    named, _ = discover([tmp_path / "vendor"], root=tmp_path)
    assert [p.relative_to(tmp_path).as_posix() for p in named] == ["vendor/lib/a.py"]  # its own .gitignore still applies
