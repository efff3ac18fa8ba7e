"""A fix never damages a file: positions as libcst counts lines, edits checked against the code they
were computed for, and a write only to the file that was read, keeping what the file was."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner

from fusionlint.cli import main
from fusionlint.config import load_settings
from fusionlint.fixes import apply_edits, fix_source, EditMismatch
from fusionlint.lines import line_starts, split_lines
from fusionlint.rule import Applicability, Edit, Effect, Finding, Fix, Severity
from fusionlint.runner import RunOptions, run

HEAD = "import torch\nimport torch.nn as nn\n"
BODY = "class M(nn.Module):\n    def forward(self, x):\n        return x.permute(0, 2, 1).view(-1)\n"
FIXED_BODY = BODY.replace(".view(", ".reshape(")


def check(args: list[str], cwd: Path):
    old = os.getcwd()
    os.chdir(cwd)
    try:
        return CliRunner().invoke(main, ["check", *args], catch_exceptions=False)
    finally:
        os.chdir(old)


# ----------------------------------------------------------------------------- line splitting


def test_lines_are_split_as_python_splits_them():
    text = "a\rb\r\nc\x0cd\x85e\u2028f\nlast"
    assert split_lines(text) == ["a", "b", "c\x0cd\x85e\u2028f", "last"]
    assert split_lines(text, keepends=True) == ["a\r", "b\r\n", "c\x0cd\x85e\u2028f\n", "last"]
    assert line_starts(text) == [0, 2, 5, 13]
    assert split_lines("x\n") == ["x"] and split_lines("") == []


@pytest.mark.parametrize(
    "odd_line",
    [
        "OFFSET_VALUE_FOR_OUTPUT = 1  # note\rSCALE = 2\n",  # lone CR inside a line: two lines for Python
        "A = 1  # form feed \x0c and next-line \x85 in a comment\n",  # one line for Python, two for splitlines
        "B = 'line\u2028separator'\n",
    ],
)
def test_fix_after_an_odd_line_break_lands_on_its_own_range(tmp_path, odd_line):
    src = HEAD + odd_line + "\n" + BODY
    (tmp_path / "m.py").write_bytes(src.encode())
    result = check(["--fix", "m.py"], tmp_path)
    assert result.exit_code == 0, result.output
    assert (tmp_path / "m.py").read_bytes() == (HEAD + odd_line + "\n" + FIXED_BODY).encode()


@pytest.mark.parametrize("args", [["--fix"], ["--diff", "--fix"], ["--diff"]])
def test_cr_only_file_is_fixed_or_diffed_without_a_crash(tmp_path, args):
    src = (HEAD + BODY).replace("\n", "\r")
    (tmp_path / "m.py").write_bytes(src.encode())
    result = check([*args, "m.py"], tmp_path)
    assert "Traceback" not in result.output
    if "--diff" in args:
        assert result.exit_code == 1 and "+        return x.permute(0, 2, 1).reshape(-1)" in result.output
        assert (tmp_path / "m.py").read_bytes() == src.encode()
    else:
        assert result.exit_code == 0, result.output
        assert (tmp_path / "m.py").read_bytes() == (HEAD + FIXED_BODY).replace("\n", "\r").encode()


def test_suppression_after_a_lone_cr_covers_the_line_libcst_reports():
    src = HEAD + "X = 1  # note\rY = 2\n" + BODY.replace("view(-1)", "view(-1)  # noqa: FL301")
    from tests.helpers import lint
    from fusionlint.registry import all_rules

    assert [f.code for f in lint(src, [all_rules()["FL301"]])] == []
    assert [f.code for f in lint(src.replace("  # noqa: FL301", ""), [all_rules()["FL301"]])] == ["FL301"]


# ----------------------------------------------------------------------------- edits are checked


def _finding(edit: Edit) -> Finding:
    return Finding("m.py", 1, 1, 1, 2, "FL301", "view-after-permute", "m", (Effect.RUNTIME_ERROR,), Severity.ERROR,
                   fix=Fix(Applicability.SAFE, (edit,)))


def test_an_edit_whose_range_no_longer_holds_its_code_is_refused():
    text = "y = x.view(1)\n"
    with pytest.raises(EditMismatch):
        apply_edits(text, [(Edit(1, 5, 1, 9, "reshape", original="view"),)])  # range holds "x.vi"
    assert apply_edits(text, [(Edit(1, 7, 1, 11, "reshape", original="view"),)]) == ("y = x.reshape(1)\n", 1)


@pytest.mark.parametrize("edit", [Edit(3, 1, 3, 2, "z", original="y"), Edit(1, 40, 1, 41, "z", original="y")])
def test_an_edit_outside_the_text_is_refused(edit):
    with pytest.raises(EditMismatch):
        apply_edits("y = 1\n", [(edit,)])


def test_fix_source_writes_nothing_when_an_edit_does_not_match():
    text = "y = x.view(1)\nz = 2\n"
    finding = _finding(Edit(2, 1, 2, 2, "reshape", original="view"))
    out = fix_source(text, lambda _t: [finding], findings=[finding])
    assert out.source == text and out.applied == 0
    assert out.error and "not applied" in out.error


# ----------------------------------------------------------------------------- writing back


def _project(tmp_path: Path, name: str = "m.py") -> Path:
    (tmp_path / "pyproject.toml").write_text("[tool.fusionlint]\n")
    path = tmp_path / name
    path.write_text(HEAD + BODY)
    return path


def _run_fix(tmp_path: Path, paths: list[str], before_write=None):
    settings = load_settings(tmp_path)
    hook = None
    if before_write is not None:
        def hook(path, old, new, findings):
            before_write(path)
            return True
    old = os.getcwd()
    os.chdir(tmp_path)
    try:
        return run(paths, settings, RunOptions(fix=True, verify_fix=hook))
    finally:
        os.chdir(old)


def test_a_file_edited_after_it_was_read_is_not_overwritten(tmp_path):
    path = _project(tmp_path)
    edited = HEAD + "# edited by the user meanwhile\n" + BODY
    out = _run_fix(tmp_path, ["m.py"], before_write=lambda p: Path(p).write_text(edited))
    assert path.read_text() == edited
    assert out.result.fixed == 0
    assert any("changed on disk" in e.message for e in out.result.errors)


def test_a_file_deleted_after_it_was_read_is_not_recreated(tmp_path):
    path = _project(tmp_path)
    out = _run_fix(tmp_path, ["m.py"], before_write=lambda p: Path(p).unlink())
    assert not path.exists()
    assert any("deleted" in e.message for e in out.result.errors)


def test_a_read_only_file_is_refused(tmp_path):
    path = _project(tmp_path)
    path.chmod(0o444)
    result = check(["--fix", "m.py"], tmp_path)
    assert result.exit_code == 1
    assert "read-only" in result.output
    assert path.read_text() == HEAD + BODY and stat.S_IMODE(path.stat().st_mode) == 0o444


def test_hard_links_mode_and_owner_are_kept(tmp_path):
    path = _project(tmp_path)
    other = tmp_path / "elsewhere"
    other.mkdir()
    link = other / "same-inode.txt"
    os.link(path, link)
    path.chmod(0o640)
    owner = (1234, 1234) if os.geteuid() == 0 else (os.geteuid(), os.getegid())
    if os.geteuid() == 0:
        os.chown(path, *owner)
    inode = path.stat().st_ino
    result = check(["--fix", "m.py"], tmp_path)
    assert result.exit_code == 0, result.output
    st = path.stat()
    assert link.read_text() == path.read_text() == HEAD + FIXED_BODY
    assert (st.st_ino, st.st_nlink, stat.S_IMODE(st.st_mode)) == (inode, 2, 0o640)
    assert (st.st_uid, st.st_gid) == owner


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can create a file owned by another user")
def test_owner_is_kept_on_a_singly_linked_file(tmp_path):
    path = _project(tmp_path)
    os.chown(path, 1234, 4321)
    assert check(["--fix", "m.py"], tmp_path).exit_code == 0
    st = path.stat()
    assert path.read_text() == HEAD + FIXED_BODY and (st.st_uid, st.st_gid, st.st_nlink) == (1234, 4321, 1)


def test_fix_does_not_write_through_a_symlink_out_of_the_project(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    target = outside / "target.py"
    target.write_text(HEAD + BODY)
    project = tmp_path / "proj"
    project.mkdir()
    (project / "pyproject.toml").write_text("[tool.fusionlint]\n")
    (project / "pkg").mkdir()
    (project / "pkg" / "link.py").symlink_to(target)

    walked = check(["--fix", "pkg"], project)
    assert walked.exit_code == 1
    assert "outside the project" in walked.output
    assert target.read_text() == HEAD + BODY

    named = check(["--fix", "pkg/link.py"], project)  # named explicitly: the user asked for it
    assert named.exit_code == 0, named.output
    assert target.read_text() == HEAD + FIXED_BODY and (project / "pkg" / "link.py").is_symlink()


def test_write_fixed_refuses_text_its_codec_cannot_round_trip(tmp_path):
    from fusionlint.files import Snapshot, WriteRefused, write_fixed

    path = tmp_path / "m.py"
    path.write_bytes(b"x = 1\n")
    with pytest.raises(WriteRefused):
        # idna's encoder drops what it cannot map (Python's text writer lost a file's tail this way)
        write_fixed(path, "a.b\u3002c\n", encoding="idna", expected=Snapshot.take(path))
    assert path.read_bytes() == b"x = 1\n"
