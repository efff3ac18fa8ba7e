"""Command line: ``fusionlint check``, ``fusionlint rule CODE``, ``fusionlint rules``.

Exit codes: 0 nothing left to report; 1 findings (or files that could not be linted) remain;
2 usage, configuration or internal error. User errors print one line to stderr, never a traceback.
"""

from __future__ import annotations

import gc
import os
import sys
from pathlib import Path
from typing import Mapping, Optional

import click

from fusionlint import __version__
from fusionlint import cli_stdin as _stdin
from fusionlint.config import ConfigError, Settings, load_settings
from fusionlint.confirm.cli import ConfirmCLI, ConfirmCommand, ConfirmError, confirm_options, merge_command
from fusionlint.files import UsageError, atomic_write
from fusionlint.registry import RuleDefinitionError, RulesOnDemand, all_rules
from fusionlint.report import FORMATS, renderer

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def _codes(option: str, values: tuple[str, ...]) -> Optional[list[str]]:
    """``--select FL101,FL3 --select FL2`` -> ["FL101", "FL3", "FL2"]; None when not given."""
    if not values:
        return None
    out = [part.strip().upper() for value in values for part in value.split(",") if part.strip()]
    if not out:
        # `--select ''` (an unset shell variable) would otherwise silently run no rule at all.
        raise _fail(f"{option} got no rule codes")
    return out


def use_color(choice: str, isatty: bool, environ: Mapping[str, str] = os.environ) -> bool:
    """Whether text output is coloured: ``--color always|never`` decides; with ``auto`` (the
    default) a non-empty ``NO_COLOR`` turns colour off (https://no-color.org), else a non-empty
    ``FORCE_COLOR`` turns it on (https://force-color.org), else colour follows whether stdout is
    a terminal. NO_COLOR wins over FORCE_COLOR: opting out is the user's explicit wish."""
    if choice == "always":
        return True
    if choice == "never":
        return False
    if environ.get("NO_COLOR", ""):
        return False
    if environ.get("FORCE_COLOR", ""):
        return True
    return isatty


def _fail(message: str) -> "click.exceptions.Exit":
    click.echo(f"fusionlint: error: {message}", err=True)
    return click.exceptions.Exit(EXIT_ERROR)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="fusionlint")
def main() -> None:
    """Find the code that stops torch.compile from fusing your model, and fix it."""


def entry(prog_name: Optional[str] = None) -> None:
    """The ``fusionlint`` script and ``python -m fusionlint``: ``main``, in a process that ends with it.

    The project model a run builds holds reference cycles, so it is still there when the command
    returns, and the interpreter's last collections at exit scanned and freed it: about 565,000 objects
    on timm + transformers after an edit, where runs took 3.80-3.97 s wall against 3.26-3.84 s with them
    frozen (three runs each). Frozen, the exit leaves them to the system with the rest of the memory.
    ``atexit`` handlers and ``weakref.finalize`` callbacks still run; every file a run writes is closed
    before the command returns. In-process callers of ``main`` (tests, editors) keep collecting."""
    try:
        main(prog_name=prog_name)
    finally:
        gc.freeze()


@main.command(cls=ConfirmCommand)  # accepts --confirm=flagged (fusionlint/confirm/cli.py)
@click.argument("paths", nargs=-1, type=click.Path(path_type=str))
@click.option("--select", multiple=True, help="Rule codes or prefixes to enable (replaces the defaults).")
@click.option("--extend-select", multiple=True, help="Rule codes or prefixes to enable on top of the selection.")
@click.option("--ignore", multiple=True, help="Rule codes or prefixes to disable.")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="text", show_default=True)
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path), help="Write the report to FILE.")
@click.option("--fix", is_flag=True, help="Apply safe fixes.")
@click.option("--unsafe-fixes/--no-unsafe-fixes", default=None, help="Also apply (and list) unsafe fixes.")
@click.option("--diff", is_flag=True, help="Print the fixes as a unified diff instead of writing them.")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when findings remain.")
@click.option("--statistics", is_flag=True, help="Count findings per rule instead of listing them.")
@click.option("--quiet", "-q", is_flag=True, help="Print findings only, one line each.")
@click.option(
    "--color",
    type=click.Choice(["auto", "always", "never"]),
    default="auto",
    show_default=True,
    help="Colour the text output; auto: on a terminal, unless NO_COLOR is set (FORCE_COLOR forces it).",
)
@click.option("--config", "config_file", type=click.Path(dir_okay=False, path_type=Path), help="Use this pyproject.toml.")
@click.option("--category", default=None, help="SARIF automationDetails category (code scanning).")
@click.option(
    "--target-torch", "target_torch", metavar="VERSION", default=None,
    help="Judge findings for this torch version (e.g. 2.13). Default: the installed torch, else the newest measured.",
)
@click.option("--no-cache", "no_cache", is_flag=True, help="Lint every file; neither read nor write .fusionlint_cache/.")
@click.option("--stdin-filename", default=None, metavar="PATH", help="With `-`: the path of the text read from stdin (config, per-file-ignores, messages).")
@confirm_options  # confirm pass: --confirm, --confirm-on-gpu, --device, --jobs, --shard, --report, --verify ...
def check(
    paths: tuple[str, ...],
    select: tuple[str, ...],
    extend_select: tuple[str, ...],
    ignore: tuple[str, ...],
    fmt: str,
    output: Optional[Path],
    fix: bool,
    unsafe_fixes: Optional[bool],
    diff: bool,
    exit_zero: bool,
    statistics: bool,
    quiet: bool,
    color: str,
    config_file: Optional[Path],
    category: Optional[str],
    target_torch: Optional[str],
    no_cache: bool,
    stdin_filename: Optional[str],
    **confirm_kw,
) -> None:
    """Lint PATHS (files or directories; default: the current directory)."""
    from fusionlint.runner import RunOptions, run

    overrides: dict = {}
    if (codes := _codes("--select", select)) is not None:
        overrides["select"] = codes
    if (codes := _codes("--extend-select", extend_select)) is not None:
        overrides["extend_select"] = codes
    if (codes := _codes("--ignore", ignore)) is not None:
        overrides["ignore"] = codes
    if unsafe_fixes is not None:
        overrides["unsafe_fixes"] = unsafe_fixes
    if target_torch is not None:
        overrides["target_torch"] = target_torch
    if _stdin.wants_stdin(paths, stdin_filename):  # `fusionlint check -` (fusionlint/cli_stdin.py)
        raise click.exceptions.Exit(_check_stdin(locals(), overrides))
    targets = list(paths) or ["."]
    try:
        start = Path(targets[0])
        settings = load_settings(start if start.exists() else Path.cwd(), config_file=config_file, overrides=overrides)
        rules = RulesOnDemand()  # a warm cached run reports without importing the rules (or libcst)
        confirm = ConfirmCLI(confirm_kw, fix=fix or diff)  # --- confirm pass (fusionlint/confirm/cli.py)
        options = RunOptions(
            fix=fix or diff, unsafe_fixes=settings.unsafe_fixes, diff=diff, verify_fix=confirm.verify_hook(settings),
            jobs=confirm.jobs, cache=not no_cache,
        )
        try:
            outcome = run(targets, settings, options)
            confirm.run(outcome.result, settings)  # --- end confirm pass
        finally:
            confirm.close()
    except (ConfigError, UsageError, ConfirmError) as exc:
        raise _fail(str(exc))
    except RuleDefinitionError as exc:
        raise _fail(f"broken rule definition: {exc}")

    result = outcome.result
    from fusionlint.report.paths import CwdPaths

    shown = CwdPaths(settings.root)  # messages on stderr name files as the text output does
    if result.files_found == 0:
        # Not an error (Ruff exits 0 too), but a run that checked nothing must not look clean.
        click.echo(f"fusionlint: warning: no Python files found in {' '.join(targets)}", err=True)
    if diff:
        text = "".join(outcome.diffs)
        _emit(text, output)
        for err in result.errors:
            click.echo(f"{shown(err.path)}: {err.message}", err=True)
        code = EXIT_ERROR if outcome.internal_errors else (EXIT_FINDINGS if outcome.diffs else EXIT_CLEAN)
        raise click.exceptions.Exit(code)

    colored = fmt == "text" and use_color(color, output is None and sys.stdout.isatty())
    try:
        rendered = renderer(fmt)(
            result,
            rules=rules,
            root=settings.root,
            tool_version=__version__,
            options={
                "color": colored,
                "quiet": quiet,
                "statistics": statistics,
                "category": category,
                "docs_url": settings.docs_url,
            },
        )
    except RuleDefinitionError as exc:
        raise _fail(f"broken rule definition: {exc}")
    try:
        _emit(rendered, output, color=colored)
    except OSError as exc:
        raise _fail(f"cannot write {output}: {exc.strerror or exc}")
    if fmt != "text" or output is not None:  # the text report on the terminal lists them already
        for err in outcome.internal_errors:
            click.echo(f"fusionlint: {shown(err.path)}: {err.message}", err=True)
    if outcome.internal_errors:
        raise click.exceptions.Exit(EXIT_ERROR)
    if exit_zero:
        raise click.exceptions.Exit(EXIT_CLEAN)
    raise click.exceptions.Exit(EXIT_FINDINGS if result.findings or result.errors else EXIT_CLEAN)


def _check_stdin(params: dict, overrides: dict) -> int:
    request = _stdin.StdinRequest(
        paths=params["paths"],
        stdin_filename=params["stdin_filename"],
        overrides=overrides,
        config_file=params["config_file"],
        fmt=params["fmt"],
        output=params["output"],
        fix=params["fix"],
        diff=params["diff"],
        exit_zero=params["exit_zero"],
        statistics=params["statistics"],
        quiet=params["quiet"],
        category=params["category"],
        confirm=any(params["confirm_kw"].get(k) for k in ("confirm", "confirm_on_gpu", "confirm_verify")),
    )
    return _stdin.check_stdin(request)


def _emit(text: str, output: Optional[Path], color: bool = False) -> None:
    if output is None:
        # color=True: click would otherwise strip the escapes whenever stdout is not a terminal,
        # undoing --color always / FORCE_COLOR.
        click.echo(text, nl=False, color=color or None)
    else:
        atomic_write(output, text)


main.add_command(merge_command)  # `fusionlint merge a.json b.json` (confirm shards)


@main.command("lsp")
def lsp_cmd() -> None:
    """Start the language server on stdin/stdout (needs `pip install "fusionlint[lsp]"`)."""
    from fusionlint.lsp import main as serve

    raise click.exceptions.Exit(serve())


@main.command("clean")
@click.argument("path", required=False, type=click.Path(file_okay=False, path_type=Path))
def clean_cmd(path: Optional[Path]) -> None:
    """Remove the findings cache (.fusionlint_cache/) of the project at PATH (default: here)."""
    from fusionlint.cache.store import DIRNAME, NotOurs, clean

    start = path if path is not None else Path.cwd()
    if not start.exists():
        raise _fail(f"path does not exist: {start}")
    try:
        root = load_settings(start).root
        removed = clean(root)
    except ConfigError as exc:
        raise _fail(str(exc))
    except NotOurs as exc:
        raise _fail(f"{exc} was not made by fusionlint (no fusionlint CACHEDIR.TAG); not removed")
    except OSError as exc:
        raise _fail(f"cannot remove {root / DIRNAME}: {exc.strerror or exc}")
    if removed is None:
        click.echo(f"fusionlint: no cache in {root}")
        return
    names = {"static": "findings cache", "confirm": "confirm results"}
    what = ", ".join(f"{names.get(part, part)}: {files:,} files, {size / 1e6:.1f} MB" for part, files, size in removed)
    click.echo(f"fusionlint: removed {root / DIRNAME} ({what})")


@main.command("rule")
@click.argument("code")
def rule_cmd(code: str) -> None:
    """Explain one rule: what it does, why it hurts (measured), the fix."""
    rules = all_rules()
    rule = rules.get(code.upper())
    if rule is None:
        raise _fail(f"unknown rule {code!r}; `fusionlint rules` lists them")
    fix = rule.fix_applicability.value if rule.fix_applicability else "none"
    click.echo(f"# {rule.code} {rule.name}\n")
    click.echo(f"Effects: {', '.join(e.value for e in rule.effects) or 'none'}")
    click.echo(f"Enabled by default: {'yes' if rule.default_enabled else 'no'}   Fix: {fix}   Severity: {rule.severity.value}")
    if rule.measured_on:
        click.echo(f"Measured on: {'; '.join(rule.measured_on)}")
    if rule.gb_ids:
        click.echo(f"PyTorch graph-break ids: {', '.join(rule.gb_ids)}")
    click.echo("")
    click.echo(rule.docs.strip() or rule.message)


@main.command("rules")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def rules_cmd(fmt: str) -> None:
    """List every rule with its effect, default, fix availability and where it was measured."""
    rules = all_rules()
    if fmt == "json":
        import json

        rows = [
            {
                "code": r.code,
                "name": r.name,
                "effects": [e.value for e in r.effects],
                "default": r.default_enabled,
                "fix": r.fix_applicability.value if r.fix_applicability else None,
                "measured_on": list(r.measured_on),
            }
            for r in rules.values()
        ]
        from fusionlint.rules import CHECKED_WITHOUT_EFFECT

        click.echo(json.dumps({"rules": rows, "checked_without_effect": list(CHECKED_WITHOUT_EFFECT)}, indent=2))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(box=None, pad_edge=False)
    for col in ("code", "name", "effects", "default", "fix", "measured on"):
        table.add_column(col)
    for r in rules.values():
        table.add_row(
            r.code,
            r.name,
            ", ".join(e.value for e in r.effects) or "-",
            "on" if r.default_enabled else "off",
            r.fix_applicability.value if r.fix_applicability else "-",
            "; ".join(r.measured_on) or "-",
        )
    console = Console(highlight=False, soft_wrap=True, width=200 if not sys.stdout.isatty() else None)
    console.print(table)
    from fusionlint.rules import CHECKED_WITHOUT_EFFECT

    console.print("\nChecked, no effect (not flagged):")
    for family in CHECKED_WITHOUT_EFFECT:
        console.print(f"  {family['family']} ({family['torch']}): {family['forms']}. Evidence: {family['evidence']}.")


if __name__ == "__main__":  # pragma: no cover
    main()
