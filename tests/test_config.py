"""Settings discovery, validation (every error names the file and key), overrides, selection."""

from __future__ import annotations

from pathlib import Path

import pytest

from fusionlint.config import (
    ConfigError,
    Settings,
    find_pyproject,
    is_selected,
    load_settings,
    path_matches,
)


def pyproject(directory: Path, body: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "pyproject.toml"
    path.write_text(body)
    return path


def settings_from(tmp_path: Path, body: str) -> Settings:
    pyproject(tmp_path, body)
    return load_settings(tmp_path)


def config_error(tmp_path: Path, body: str, monkeypatch) -> str:
    pyproject(tmp_path, body)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError) as info:
        load_settings(tmp_path)
    return str(info.value)


# --------------------------------------------------------------------------- discovery


def test_find_pyproject_walks_up_to_the_table(tmp_path):
    top = pyproject(tmp_path, "[tool.fusionlint]\nselect = ['FL1']\n")
    pyproject(tmp_path / "sub", "[project]\nname = 'x'\n")  # nearer but without our table
    deep = tmp_path / "sub" / "a" / "b"
    deep.mkdir(parents=True)
    (deep / "m.py").write_text("")
    assert find_pyproject(deep) == top
    assert find_pyproject(deep / "m.py") == top  # a file starts from its directory
    s = load_settings(deep / "m.py")
    assert s.root == tmp_path and s.config_path == top and s.select == ["FL1"]


def test_nearest_pyproject_without_table_fixes_root(tmp_path):
    sub = tmp_path / "proj"
    near = pyproject(sub, "[project]\nname = 'x'\n")
    (sub / "src").mkdir()
    assert find_pyproject(sub / "src") == near
    s = load_settings(sub / "src")
    assert s.root == sub and s.select is None and s.ignore == []


def test_a_table_above_the_repo_root_still_wins(tmp_path):
    # Documented choice (Ruff-like): the walk does not stop at .git.
    top = pyproject(tmp_path, "[tool.fusionlint]\n")
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    pyproject(repo, "[project]\nname = 'x'\n")
    assert find_pyproject(repo) == top


def test_no_pyproject_root_is_cwd(tmp_path, monkeypatch):
    # pytest's tmp_path (under the system temp dir) has no pyproject.toml above it.
    assert find_pyproject(tmp_path) is None
    monkeypatch.chdir(tmp_path)
    s = load_settings(tmp_path)
    assert s.root == tmp_path and s.config_path is None and s.select is None


def test_unparseable_pyproject_mentioning_us_is_reported_not_skipped(tmp_path, monkeypatch):
    pyproject(tmp_path, "[project]\nname = 'x'\n")
    pyproject(tmp_path / "sub", "[tool.fusionlint\nselect = []\n")
    monkeypatch.chdir(tmp_path / "sub")
    with pytest.raises(ConfigError, match=r"^pyproject.toml: invalid TOML: .*\(at line 1, column \d+\)"):
        load_settings(tmp_path / "sub")


def test_explicit_config_file(tmp_path, monkeypatch):
    cfg = tmp_path / "conf" / "custom.toml"
    cfg.parent.mkdir()
    cfg.write_text("[tool.fusionlint]\nignore = ['FL201']\n")
    pyproject(tmp_path, "[tool.fusionlint]\nignore = ['FL999']\n")
    s = load_settings(tmp_path, config_file=cfg)
    assert s.ignore == ["FL201"] and s.root == cfg.parent and s.config_path == cfg
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match="^config file not found: missing.toml$"):
        load_settings(tmp_path, config_file=Path("missing.toml"))


# --------------------------------------------------------------------------- values


def test_all_keys_snake_case(tmp_path):
    s = settings_from(
        tmp_path,
        """
[tool.fusionlint]
select = ["FL1", "fl301"]
extend_select = ["FL9"]
ignore = ["FL102"]
per_file_ignores = { "tests/*" = ["FL2"] }
exclude = ["gen"]
extend_exclude = ["*_pb2.py"]
unsafe_fixes = true
respect_gitignore = false

[tool.fusionlint.confirm]
device = "cpu"
timeout = 60

[tool.fusionlint.examples]
"pkg.models:Net" = "pkg.examples:make_net"
""",
    )
    assert s.select == ["FL1", "FL301"]  # codes are upper-cased
    assert s.extend_select == ["FL9"] and s.ignore == ["FL102"]
    assert s.per_file_ignores == {"tests/*": ["FL2"]}
    assert s.exclude == ["gen"] and s.extend_exclude == ["*_pb2.py"]
    assert s.unsafe_fixes is True and s.respect_gitignore is False
    assert s.confirm == {"device": "cpu", "timeout": 60}
    assert s.examples == {"pkg.models:Net": "pkg.examples:make_net"}


def test_kebab_case_keys(tmp_path):
    s = settings_from(
        tmp_path,
        """
[tool.fusionlint]
extend-select = ["FL9"]
per-file-ignores = { "conftest.py" = ["ALL"] }
extend-exclude = ["x"]
unsafe-fixes = true
respect-gitignore = false
""",
    )
    assert s.extend_select == ["FL9"] and s.per_file_ignores == {"conftest.py": ["ALL"]}
    assert s.extend_exclude == ["x"] and s.unsafe_fixes and not s.respect_gitignore


def test_defaults(tmp_path):
    s = settings_from(tmp_path, "[tool.fusionlint]\n")
    assert (s.select, s.extend_select, s.ignore, s.per_file_ignores) == (None, [], [], {})
    assert (s.exclude, s.extend_exclude) == ([], [])
    assert (s.unsafe_fixes, s.respect_gitignore) == (False, True)
    assert (s.confirm, s.examples) == ({}, {})


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    "body, message",
    [
        (
            "select = ['FL1O1']",
            "pyproject.toml: [tool.fusionlint] 'select': unknown rule code or prefix: FL1O1 (see `fusionlint rules`)",
        ),
        (
            "select = 'FL101'",
            "pyproject.toml: [tool.fusionlint] 'select' must be a list of rule codes, got 'FL101'",
        ),
        (
            "extend-select = ['E501']",
            "pyproject.toml: [tool.fusionlint] 'extend-select': unknown rule code or prefix: E501 (see `fusionlint rules`)",
        ),
        (
            "ignore = ['FL1011']",
            "pyproject.toml: [tool.fusionlint] 'ignore': unknown rule code or prefix: FL1011 (see `fusionlint rules`)",
        ),
        (
            "ignore = [101]",
            "pyproject.toml: [tool.fusionlint] 'ignore' must be a list of rule codes, got 101",
        ),
        (
            "per-file-ignores = { 'tests/*' = 'FL1' }",
            "pyproject.toml: [tool.fusionlint] 'per-file-ignores.tests/*' must be a list of rule codes, got 'FL1'",
        ),
        (
            "per_file_ignores = ['tests/*']",
            "pyproject.toml: [tool.fusionlint] 'per_file_ignores' must be a table, got ['tests/*']",
        ),
        (
            "exclude = 'build'",
            "pyproject.toml: [tool.fusionlint] 'exclude' must be a list of strings, got 'build'",
        ),
        (
            "extend-exclude = [1]",
            "pyproject.toml: [tool.fusionlint] 'extend-exclude' must be a list of strings, got [1]",
        ),
        (
            "unsafe-fixes = 'yes'",
            "pyproject.toml: [tool.fusionlint] 'unsafe-fixes' must be true or false, got 'yes'",
        ),
        (
            "respect_gitignore = 1",
            "pyproject.toml: [tool.fusionlint] 'respect_gitignore' must be true or false, got 1",
        ),
        (
            "confirm = 'cpu'",
            "pyproject.toml: [tool.fusionlint] 'confirm' must be a table, got 'cpu'",
        ),
        (
            "examples = { 'pkg.mod.Model' = 'pkg.mod:make' }",
            "pyproject.toml: [tool.fusionlint] 'examples' entries must look like "
            '"package.module:Model" = "package.module:make_example", got \'pkg.mod.Model\'',
        ),
        (
            "examples = { 'pkg.mod:Model' = 'make example' }",
            "pyproject.toml: [tool.fusionlint] 'examples' entries must look like "
            '"package.module:Model" = "package.module:make_example", got \'make example\'',
        ),
        (
            "selct = ['FL1']",
            "pyproject.toml: [tool.fusionlint] unknown key 'selct' (did you mean 'select'?)",
        ),
        (
            "extend-selekt = ['FL1']",
            "pyproject.toml: [tool.fusionlint] unknown key 'extend-selekt' (did you mean 'extend-select'?)",
        ),
        ("colour = true", "pyproject.toml: [tool.fusionlint] unknown key 'colour'"),
        (
            "extend-select = ['FL1']\nextend_select = ['FL2']",
            "pyproject.toml: [tool.fusionlint] 'extend_select' is given twice (as 'extend-select' too)",
        ),
    ],
)
def test_invalid_values_name_file_and_key(tmp_path, monkeypatch, body, message):
    assert config_error(tmp_path, "[tool.fusionlint]\n" + body + "\n", monkeypatch) == message


@pytest.mark.parametrize(
    "body, message",
    [
        ('memory-mb = "abc"', "'confirm.memory-mb' must be an integer >= 0 (0: no memory cap), got 'abc'"),
        ("memory_mb = 1.5", "'confirm.memory_mb' must be an integer >= 0 (0: no memory cap), got 1.5"),
        ("timeout = 1e308", "'confirm.timeout' must be a number of seconds > 0 and <= 86400, got 1e+308"),
        ("timeout = -1", "'confirm.timeout' must be a number of seconds > 0 and <= 86400, got -1"),
        ("timeout = 0", "'confirm.timeout' must be a number of seconds > 0 and <= 86400, got 0"),
        ("timeout = nan", "'confirm.timeout' must be a number of seconds > 0 and <= 86400, got nan"),
        ("timeout = true", "'confirm.timeout' must be a number of seconds > 0 and <= 86400, got True"),
        ("timing-runs = -3", "'confirm.timing-runs' must be an integer from 0 to 10000, got -3"),
        ('device = "tpu"', """'confirm.device' must be one of "auto", "cpu", "cuda", "cuda:N", got 'tpu'"""),
        ("timout = 5", "unknown key 'confirm.timout' (did you mean 'confirm.timeout'?)"),
        ("timeout = 5\ntimeout_ = 1", "unknown key 'confirm.timeout_' (did you mean 'confirm.timeout'?)"),
        ("memory-mb = 1\nmemory_mb = 2", "'confirm.memory_mb' is given twice"),
    ],
)
def test_confirm_table_values_are_checked(tmp_path, monkeypatch, body, message):
    got = config_error(tmp_path, "[tool.fusionlint.confirm]\n" + body + "\n", monkeypatch)
    assert got == "pyproject.toml: [tool.fusionlint] " + message


def test_confirm_table_accepts_both_spellings_and_normalises(tmp_path):
    s = settings_from(tmp_path, "[tool.fusionlint.confirm]\nmemory_mb = 0\ntiming-runs = 3\ntimeout = 2.5\n")
    assert s.confirm == {"memory-mb": 0, "timing-runs": 3, "timeout": 2.5}


@pytest.mark.parametrize(
    "nested",
    ["a = " + "[" * 3000 + "]" * 3000, "a = " + "{b = " * 3000 + "1" + "}" * 3000],
    ids=["arrays", "inline-tables"],
)
def test_deeply_nested_toml_is_a_config_error(tmp_path, monkeypatch, nested):
    # tomllib recurses per nesting level; 3,000 levels raised RecursionError (a traceback).
    msg = config_error(tmp_path, "[tool.fusionlint]\n" + nested + "\n", monkeypatch)
    assert msg == "cannot parse pyproject.toml: nested too deeply"


def test_invalid_toml_has_line_info(tmp_path, monkeypatch):
    msg = config_error(tmp_path, "[tool.fusionlint]\nunsafe-fixes = true\nselect = = 1\n", monkeypatch)
    assert msg.startswith("pyproject.toml: invalid TOML: ") and msg.endswith("(at line 3, column 10)")


def test_tool_fusionlint_not_a_table(tmp_path, monkeypatch):
    msg = config_error(tmp_path, "[tool]\nfusionlint = 3\n", monkeypatch)
    assert msg == "pyproject.toml: 'tool.fusionlint' must be a table, got 3"


def test_not_utf8(tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_bytes(b"[tool.fusionlint]\n# \xff\n")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match=r"^pyproject.toml: not valid UTF-8 \(byte offset 20\)$"):
        load_settings(tmp_path, config_file=tmp_path / "pyproject.toml")


def test_error_names_the_path_relative_to_cwd(tmp_path, monkeypatch):
    pyproject(tmp_path / "proj", "[tool.fusionlint]\nignore = 'x'\n")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match=r"^proj/pyproject.toml: \[tool.fusionlint\] 'ignore'"):
        load_settings(tmp_path / "proj")


# --------------------------------------------------------------------------- overrides


def test_cli_overrides_win(tmp_path):
    pyproject(
        tmp_path,
        "[tool.fusionlint]\nexclude = ['a']\nunsafe-fixes = false\nextend-select = ['FL9']\n"
        "ignore = ['FL1']\nper-file-ignores = { 'tests/*' = ['FL2'] }\n",
    )
    s = load_settings(
        tmp_path,
        overrides={
            "exclude": ["b"],
            "unsafe_fixes": True,
            "respect_gitignore": None,  # None: option not given
            "extend_select": ["FL8"],
            "ignore": ["FL3"],
            "per_file_ignores": {"tests/*": ["FL4"], "x.py": ["FL5"]},
        },
    )
    assert s.exclude == ["b"] and s.unsafe_fixes is True and s.respect_gitignore is True
    assert s.extend_select == ["FL9", "FL8"] and s.ignore == ["FL1", "FL3"]
    assert s.per_file_ignores == {"tests/*": ["FL2", "FL4"], "x.py": ["FL5"]}


def test_cli_select_starts_afresh(tmp_path):
    pyproject(tmp_path, "[tool.fusionlint]\nextend-select = ['FL9']\nignore = ['FL101']\n")
    s = load_settings(tmp_path, overrides={"select": ["FL101"]})
    assert s.select == ["FL101"] and s.extend_select == [] and s.ignore == []
    assert is_selected("FL101", s, default_enabled=True, path="m.py")
    assert not is_selected("FL901", s, default_enabled=True, path="m.py")


def test_cli_overrides_are_validated(tmp_path):
    pyproject(tmp_path, "[tool.fusionlint]\n")
    with pytest.raises(ConfigError) as info:
        load_settings(tmp_path, overrides={"select": ["XX1"]})
    assert str(info.value) == "command line: '--select': unknown rule code or prefix: XX1 (see `fusionlint rules`)"
    with pytest.raises(ConfigError, match="^command line: unknown setting 'colour'$"):
        load_settings(tmp_path, overrides={"colour": True})


# --------------------------------------------------------------------------- selection


def make(**kwargs) -> Settings:
    return Settings(root=Path("."), **kwargs)


def test_defaults_follow_default_enabled():
    s = make()
    assert is_selected("FL101", s, default_enabled=True, path="a.py")
    assert not is_selected("FL901", s, default_enabled=False, path="a.py")


def test_select_prefix_exact_and_all():
    s = make(select=["FL1"])
    assert is_selected("FL101", s, default_enabled=True, path="a.py")
    assert is_selected("FL199", s, default_enabled=False, path="a.py")  # selected explicitly
    assert not is_selected("FL201", s, default_enabled=True, path="a.py")  # not in select
    assert is_selected("FL201", make(select=["FL201"]), default_enabled=True, path="a.py")
    assert is_selected("FL901", make(select=["ALL"]), default_enabled=False, path="a.py")
    assert is_selected("fl101", make(select=["FL101"]), default_enabled=True, path="a.py")


def test_extend_select_adds_to_defaults_and_to_select():
    assert is_selected("FL901", make(extend_select=["FL9"]), default_enabled=False, path="a.py")
    s = make(select=["FL1"], extend_select=["FL3"])
    assert is_selected("FL301", s, default_enabled=True, path="a.py")
    assert not is_selected("FL201", s, default_enabled=True, path="a.py")


def test_ignore_wins_over_select():
    s = make(select=["FL101"], ignore=["FL1"])
    assert not is_selected("FL101", s, default_enabled=True, path="a.py")
    assert not is_selected("FL101", make(ignore=["ALL"]), default_enabled=True, path="a.py")
    assert is_selected("FL201", make(ignore=["FL1"]), default_enabled=True, path="a.py")


@pytest.mark.parametrize(
    "pattern, path, expected",
    [
        ("tests/*", "tests/test_a.py", True),
        ("tests/*", "tests/sub/test_a.py", True),  # fnmatch: * crosses /
        ("tests/*", "src/tests/test_a.py", False),
        ("tests/", "tests/sub/x.py", True),  # trailing slash: everything below
        ("conftest.py", "a/b/conftest.py", True),  # no slash: the basename too
        ("conftest.py", "conftest.py", True),
        ("test_*.py", "pkg/test_x.py", True),
        ("test_*.py", "pkg/x_test.py", False),
        ("src/*.py", "lib/src/m.py", False),
        ("**/gen/*.py", "a/gen/x.py", True),
    ],
)
def test_per_file_ignore_globs(pattern, path, expected):
    assert path_matches(pattern, path) is expected
    s = make(per_file_ignores={pattern: ["FL1"]})
    assert is_selected("FL101", s, default_enabled=True, path=path) is (not expected)
    assert is_selected("FL201", s, default_enabled=True, path=path)  # other codes unaffected
