"""Settings: the ``[tool.fusionlint]`` table of pyproject.toml, overlaid with command-line options.

Modelled on Ruff so users need not learn anything new: the same key names (kebab-case or
snake_case), prefix selection (``"FL1"`` selects every FL1xx rule, ``"ALL"`` selects all),
``per-file-ignores`` globs, and "the nearest pyproject.toml with our table wins" discovery.
Every mistake in the file becomes a ``ConfigError`` naming the file and the key, because a
typo'd key silently ignored is a rule silently not run.
"""

from __future__ import annotations

import difflib
import fnmatch
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from fusionlint.torch_target import parse_version

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10: the same parser, published as "tomli"
    import tomli as tomllib

CODE_RE = re.compile(r"^(ALL|FL\d{0,3})$")
# "package.module:Attr" (the attribute may be dotted: "pkg.mod:Outer.Inner").
_DOTTED = r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*"
TARGET_RE = re.compile(rf"^{_DOTTED}:{_DOTTED}$")

_CODE_LIST_KEYS = ("select", "extend_select", "ignore")
_GLOB_LIST_KEYS = ("exclude", "extend_exclude")
_BOOL_KEYS = ("unsafe_fixes", "respect_gitignore")
_TABLE_KEYS = ("per_file_ignores", "confirm", "examples")
_URL_KEYS = ("docs_url",)
_VERSION_KEYS = ("target_torch",)
KNOWN_KEYS = _CODE_LIST_KEYS + _GLOB_LIST_KEYS + _BOOL_KEYS + _TABLE_KEYS + _URL_KEYS + _VERSION_KEYS
# The placeholders a docs-url template may use (see Rule.help_url).
_URL_PLACEHOLDERS = ("{code}", "{name}")


class ConfigError(Exception):
    """Invalid configuration; the message names the file and the offending key (exit code 2)."""


@dataclass
class Settings:
    root: Path
    config_path: Optional[Path] = None
    select: Optional[list[str]] = None  # None: the rules enabled by default
    extend_select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    per_file_ignores: dict[str, list[str]] = field(default_factory=dict)
    exclude: list[str] = field(default_factory=list)
    extend_exclude: list[str] = field(default_factory=list)
    unsafe_fixes: bool = False
    respect_gitignore: bool = True
    # The raw [tool.fusionlint.confirm] table: the confirm pass owns its keys.
    confirm: dict = field(default_factory=dict)
    # [tool.fusionlint.examples]: "pkg.mod:Model" -> "pkg.mod:make_example"
    examples: dict[str, str] = field(default_factory=dict)
    # Where the rules' docs are published ("https://host/rules/{code}"); None: nowhere, so
    # reports carry no documentation links.
    docs_url: Optional[str] = None
    # the torch version findings are judged against ("2.13"); None: fusionlint.torch_target's default
    target_torch: Optional[str] = None


# --------------------------------------------------------------------------- discovery


def _has_our_table(pyproject: Path) -> bool:
    try:
        text = pyproject.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    if "fusionlint" not in text:  # most pyproject files: no need to parse them
        return False
    try:
        data = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError):
        # It mentions us but does not parse: pick it, so load_settings reports the error
        # instead of silently falling back to defaults.
        return True
    tool = data.get("tool")
    return isinstance(tool, dict) and "fusionlint" in tool


def find_pyproject(start: Path) -> Optional[Path]:
    """The pyproject.toml that configures files under ``start`` (a file or a directory).

    Walks up to the filesystem root: the first pyproject.toml holding a ``[tool.fusionlint]``
    table wins; if none does, the nearest pyproject.toml (it still fixes the project root).
    Choice: the walk does not stop at the repository root (a directory with ``.git``), as in
    Ruff; a config above the repository is something the user put there on purpose.
    """
    start = Path(os.path.abspath(start))
    current = start if start.is_dir() else start.parent
    nearest: Optional[Path] = None
    while True:
        candidate = current / "pyproject.toml"
        if candidate.is_file():
            if _has_our_table(candidate):
                return candidate
            if nearest is None:
                nearest = candidate
        if current.parent == current:
            return nearest
        current = current.parent


# --------------------------------------------------------------------------- validation


def _label(config_path: Optional[Path]) -> str:
    if config_path is None:
        return "command line"
    try:
        return Path(os.path.relpath(config_path)).as_posix()
    except ValueError:  # another drive on Windows
        return config_path.as_posix()


def _codes(value: Any, where: str, key: str) -> list[str]:
    what = f"{where} '{key}' must be a list of rule codes"
    if not isinstance(value, list):
        raise ConfigError(f"{what}, got {value!r}")
    codes = []
    for item in value:
        if not isinstance(item, str):
            raise ConfigError(f"{what}, got {item!r}")
        # Case-insensitive like the suppression comments; stored upper-case.
        code = item.strip().upper()
        if not CODE_RE.match(code):
            raise ConfigError(f"{where} '{key}': {unknown_code_message([item])}")
        codes.append(code)
    return codes


def unknown_code_message(codes: list[str]) -> str:
    """The one wording for a selector that names no rule, wherever it was written."""
    return f"unknown rule code or prefix: {', '.join(codes)} (see `fusionlint rules`)"


# [tool.fusionlint.confirm]: key -> (what it must be, check). Bounded so that no value can
# overflow a timer or rlimit later (timeout = 1e308 used to end in a traceback).
MAX_CONFIRM_TIMEOUT = 86_400.0  # one day per module


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


_CONFIRM_KEYS: dict[str, tuple[str, Any]] = {
    "timeout": (
        f"a number of seconds > 0 and <= {MAX_CONFIRM_TIMEOUT:g}",
        lambda v: _is_number(v) and 0 < v <= MAX_CONFIRM_TIMEOUT,
    ),
    "memory-mb": ("an integer >= 0 (0: no memory cap)", lambda v: _is_int(v) and 0 <= v <= 2**31),
    "timing-runs": ("an integer from 0 to 10000", lambda v: _is_int(v) and 0 <= v <= 10_000),
    "backend": (
        'one of "auto", "eager", "aot_eager", "inductor"',
        lambda v: v in ("auto", "eager", "aot_eager", "inductor"),
    ),
    "inferred": ("true or false", lambda v: isinstance(v, bool)),
    "budget": (
        "a number of seconds > 0 and <= 604800",
        lambda v: _is_number(v) and 0 < v <= 604_800,
    ),
    "modules-per-worker": ("an integer from 1 to 10000", lambda v: _is_int(v) and 1 <= v <= 10_000),
    "device": (
        'one of "auto", "cpu", "cuda", "cuda:N"',
        lambda v: isinstance(v, str) and bool(re.fullmatch(r"auto|cpu|cuda(:\d+)?", v.strip().lower())),
    ),
}


def check_confirm_timeout(value: Any, what: str) -> float:
    """``timeout`` / ``--confirm-timeout``: one rule for both (raises ConfigError naming ``what``)."""
    must, ok = _CONFIRM_KEYS["timeout"]
    if not ok(value):
        raise ConfigError(f"{what} must be {must}, got {value!r}")
    return float(value)


def _confirm_table(value: dict, where: str, shown: str) -> dict:
    """Validated ``[tool.fusionlint.confirm]``, keys in kebab-case (either spelling accepted)."""
    out: dict[str, Any] = {}
    for raw_key, item in value.items():
        key = raw_key.replace("_", "-")
        name = f"{shown}.{raw_key}"
        if key not in _CONFIRM_KEYS:
            close = difflib.get_close_matches(key, list(_CONFIRM_KEYS), n=1)
            hint = f" (did you mean '{shown}.{close[0]}'?)" if close else ""
            raise ConfigError(f"{where} unknown key '{name}'{hint}")
        if key in out:
            raise ConfigError(f"{where} '{name}' is given twice")
        must, ok = _CONFIRM_KEYS[key]
        if not ok(item):
            raise ConfigError(f"{where} '{name}' must be {must}, got {item!r}")
        out[key] = float(item) if key == "timeout" else item
    return out


def _strings(value: Any, where: str, key: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where} '{key}' must be a list of strings, got {value!r}")
    return list(value)


def _url_template(value: Any, where: str, key: str) -> str:
    what = f"{where} '{key}' must be an http(s) URL, optionally with {{code}} or {{name}}"
    if not isinstance(value, str) or not re.match(r"^https?://[^\s/]+", value):
        raise ConfigError(f"{what}, got {value!r}")
    rest = value
    for placeholder in _URL_PLACEHOLDERS:
        rest = rest.replace(placeholder, "")
    if "{" in rest or "}" in rest or any(c.isspace() for c in rest):
        raise ConfigError(f"{what}, got {value!r}")
    return value


def _validate(key: str, shown: str, value: Any, where: str) -> Any:
    """Check one value; ``key`` is the snake_case name, ``shown`` the spelling the user used."""
    if key in _CODE_LIST_KEYS:
        return _codes(value, where, shown)
    if key in _GLOB_LIST_KEYS:
        return _strings(value, where, shown)
    if key in _URL_KEYS:
        return _url_template(value, where, shown)
    if key in _BOOL_KEYS:
        if not isinstance(value, bool):
            raise ConfigError(f"{where} '{shown}' must be true or false, got {value!r}")
        return value
    if key in _VERSION_KEYS:
        # a TOML number is refused: 2.10 would read as 2.1
        if not isinstance(value, str) or parse_version(value) is None:
            raise ConfigError(f'{where} \'{shown}\' must be a torch version string like "2.13", got {value!r}')
        return value.strip()
    if not isinstance(value, dict):
        raise ConfigError(f"{where} '{shown}' must be a table, got {value!r}")
    if key == "per_file_ignores":
        return {
            str(glob): _codes(codes, where, f"{shown}.{glob}") for glob, codes in value.items()
        }
    if key == "examples":
        out = {}
        for model, factory in value.items():
            for side in (model, factory):
                if not isinstance(side, str) or not TARGET_RE.match(side):
                    raise ConfigError(
                        f"{where} '{shown}' entries must look like "
                        f'"package.module:Model" = "package.module:make_example", got {side!r}'
                    )
            out[model] = factory
        return out
    return _confirm_table(value, where, shown)


def _normalise(table: dict, where: str) -> dict[str, tuple[str, Any]]:
    """Map each key to snake_case, rejecting unknown keys and kebab/snake duplicates."""
    out: dict[str, tuple[str, Any]] = {}
    for raw_key, value in table.items():
        key = raw_key.replace("-", "_")
        if key not in KNOWN_KEYS:
            # Suggest in the spelling the user chose.
            spelled = [k.replace("_", "-") if "-" in raw_key else k for k in KNOWN_KEYS]
            close = difflib.get_close_matches(raw_key, spelled, n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            raise ConfigError(f"{where} unknown key '{raw_key}'{hint}")
        if key in out:
            raise ConfigError(f"{where} '{raw_key}' is given twice (as '{out[key][0]}' too)")
        out[key] = (raw_key, value)
    return out


# --------------------------------------------------------------------------- loading


def load_settings(
    start: Path,
    *,
    config_file: Optional[Path] = None,
    overrides: Optional[dict] = None,
) -> Settings:
    """Settings for linting ``start``: the config file found from it (or ``config_file``),
    then ``overrides`` (command-line options, snake_case keys; ``None`` values mean "not given").

    Command-line ``select`` replaces the file's select, extend-select and ignore (Ruff's
    layering: a later ``select`` starts afresh); ``extend_select``, ``ignore``,
    ``extend_exclude`` and ``per_file_ignores`` from the command line add to the file's;
    the other keys replace the file's value.
    """
    if config_file is not None:
        path: Optional[Path] = Path(config_file)
        if not path.is_file():
            raise ConfigError(f"config file not found: {path.as_posix()}")
    else:
        path = find_pyproject(start)

    if path is None:
        settings = Settings(root=Path.cwd())
    else:
        settings = Settings(root=Path(os.path.abspath(path)).parent, config_path=path)
        _apply_file(settings, path)
    if overrides:
        _apply_overrides(settings, overrides)
    return settings


def _apply_file(settings: Settings, path: Path) -> None:
    label = _label(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"{label}: cannot read file: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{label}: not valid UTF-8 (byte offset {exc.start})") from None
    except tomllib.TOMLDecodeError as exc:
        # tomllib's message already ends in "(at line L, column C)".
        raise ConfigError(f"{label}: invalid TOML: {exc}") from None
    except RecursionError:
        # tomllib parses nested arrays and inline tables recursively.
        raise ConfigError(f"cannot parse {label}: nested too deeply") from None
    tool = data.get("tool", {})
    table = tool.get("fusionlint") if isinstance(tool, dict) else None
    if table is None:
        return
    where = f"{label}: [tool.fusionlint]"
    if not isinstance(table, dict):
        raise ConfigError(f"{label}: 'tool.fusionlint' must be a table, got {table!r}")
    for key, (shown, value) in _normalise(table, where).items():
        setattr(settings, key, _validate(key, shown, value, where))


def _apply_overrides(settings: Settings, overrides: dict) -> None:
    where = "command line:"
    given = {k: v for k, v in overrides.items() if v is not None}
    for key in given:
        if key not in KNOWN_KEYS:
            raise ConfigError(f"{where} unknown setting '{key}'")
    # Named as the option the user typed ("--select"), not as the snake_case key.
    values = {key: _validate(key, "--" + key.replace("_", "-"), value, where) for key, value in given.items()}
    if "select" in values:
        settings.select = values.pop("select")
        settings.extend_select = []
        settings.ignore = []
    for key in ("extend_select", "ignore", "extend_exclude"):
        if key in values:
            setattr(settings, key, getattr(settings, key) + values.pop(key))
    if "per_file_ignores" in values:
        merged = {g: list(c) for g, c in settings.per_file_ignores.items()}
        for glob, codes in values.pop("per_file_ignores").items():
            merged.setdefault(glob, []).extend(codes)
        settings.per_file_ignores = merged
    for key, value in values.items():
        setattr(settings, key, value)


# --------------------------------------------------------------------------- selection


def _matches(selector: str, code: str) -> bool:
    return selector == "ALL" or code.startswith(selector)


def path_matches(pattern: str, path: str) -> bool:
    """per-file-ignores glob test on a root-relative POSIX path.

    fnmatch semantics (``*`` crosses ``/``); a pattern without ``/`` also matches the
    basename, so ``"conftest.py"`` applies at any depth; a trailing ``/`` means "everything below".
    """
    if pattern.endswith("/"):
        pattern += "*"
    if fnmatch.fnmatchcase(path, pattern):
        return True
    return "/" not in pattern and fnmatch.fnmatchcase(path.rsplit("/", 1)[-1], pattern)


def is_selected(code: str, settings: Settings, *, default_enabled: bool, path: str) -> bool:
    """Whether rule ``code`` runs on ``path`` (root-relative POSIX).

    On if (no ``select`` and the rule is on by default) or a ``select``/``extend-select``
    entry matches (exact, prefix, or ``ALL``); then off if an ``ignore`` entry or a matching
    ``per-file-ignores`` entry matches. Ignore wins over select, whatever the specificity:
    one simple rule to remember (Ruff orders the same way within one config source).
    """
    code = code.upper()
    if not _is_on(code, settings, default_enabled):
        return False
    if any(_matches(s, code) for s in settings.ignore):
        return False
    for pattern, codes in settings.per_file_ignores.items():
        if any(_matches(s, code) for s in codes) and path_matches(pattern, path):
            return False
    return True


def _is_on(code: str, settings: Settings, default_enabled: bool) -> bool:
    if settings.select is None:
        if default_enabled:
            return True
    elif any(_matches(s, code) for s in settings.select):
        return True
    return any(_matches(s, code) for s in settings.extend_select)
