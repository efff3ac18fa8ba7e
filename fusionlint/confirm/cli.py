"""Command-line glue for the confirm pass: ``check``'s confirm options and the ``merge`` command.

Kept here so ``fusionlint/cli.py`` only needs a decorator and two calls. Nothing here imports torch.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Optional

import click

from fusionlint.config import ConfigError, check_confirm_timeout
from fusionlint.confirm.orchestrate import ConfirmError, confirm_findings, merge_files, parse_shard
from fusionlint.confirm.progress import for_terminal

SCOPES = ("all", "flagged")

_OPTIONS = [
    click.option("--confirm", "confirm", is_flag=True, help="Run every module with an example under torch.compile and attach the measured evidence (imports your code; needs torch). --confirm=flagged: only modules with findings."),
    click.option("--confirm-scope", "confirm_scope", type=click.Choice(SCOPES), default=None, hidden=True),
    click.option("--confirm-inferred", "confirm_inferred", is_flag=True, default=None, help="With --confirm: also run modules whose inputs must be guessed (no registered example)."),
    click.option("--confirm-budget", "confirm_budget", type=float, default=None, metavar="SECONDS", help="Start no new module after SECONDS; the rest stay unconfirmed (budget)."),
    click.option("--confirm-backend", "confirm_backend", type=click.Choice(("auto", "eager", "aot_eager", "inductor")), default=None, help="torch.compile backend (auto: eager for breaks/recompiles, inductor where kernels, syncs or numerics are claimed)."),
    click.option("--confirmed-only", "confirmed_only", is_flag=True, help="With --confirm: hide findings the confirm pass measured as not-reproduced (exit code follows)."),
    click.option("--confirm-on-gpu", "confirm_on_gpu", is_flag=True, help="Like --confirm, on a CUDA GPU (fails when none is visible)."),
    click.option("--device", "confirm_device", default=None, metavar="cpu|cuda|cuda:N", help="Device for --confirm/--verify (default: cuda if available, else cpu)."),
    click.option("--jobs", "confirm_jobs", type=int, default=None, help="Processes working in parallel: static-pass workers (default: the available cores) and confirm workers (default: the CPU cores on CPU, four per visible GPU on CUDA, no more than the cores)."),
    click.option("--shard", "confirm_shard", default=None, metavar="K/N", help="Confirm only the K-th of N deterministic slices of the modules."),
    click.option("--confirm-timeout", "confirm_timeout", type=float, default=None, metavar="SECONDS", help="Per-module time limit (default 120)."),
    click.option("--report", "confirm_report", type=click.Path(dir_okay=False, path_type=Path), default=None, help="With --confirm: write a self-contained HTML evidence report."),
    click.option("--verify", "confirm_verify", is_flag=True, help="With --fix: write a fix only if the module stays allclose and the effect shrinks."),
    click.option("--no-confirm-cache", "confirm_no_cache", is_flag=True, help="Ignore cached confirm results."),
]


class ConfirmCommand(click.Command):
    """``check``'s command class: accepts ``--confirm=flagged`` / ``--confirm=all``.

    ``--confirm`` stays a flag (``check --confirm src/`` must not read ``src/`` as its value), so
    the attached form is rewritten to the flag plus the scope before click parses.
    """

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        out = []
        for arg in args:
            if arg == "--":
                out.extend(args[len(out):])
                break
            if arg.startswith("--confirm="):
                value = arg.split("=", 1)[1]
                if value not in SCOPES:
                    raise click.UsageError(f"--confirm={value}: expected --confirm, --confirm=all or --confirm=flagged", ctx)
                out += ["--confirm", "--confirm-scope", value]
            else:
                out.append(arg)
        return super().parse_args(ctx, out)


def confirm_options(func: Callable) -> Callable:
    """Decorator adding the confirm pass's options to ``check`` (they arrive as keyword args)."""
    for option in reversed(_OPTIONS):
        func = option(func)
    return func


class ConfirmCLI:
    """Validates the confirm options and runs the pass around the static run."""

    def __init__(self, kw: dict, *, fix: bool, echo: Optional[Callable[[str], None]] = None) -> None:
        self.enabled = bool(kw.get("confirm") or kw.get("confirm_on_gpu"))
        self.on_gpu = bool(kw.get("confirm_on_gpu"))
        self.device = kw.get("confirm_device")
        self.jobs = kw.get("confirm_jobs")
        self.shard = parse_shard(kw.get("confirm_shard"))
        self.timeout = kw.get("confirm_timeout")
        self.report = kw.get("confirm_report")
        self.verify = bool(kw.get("confirm_verify"))
        self.use_cache = not kw.get("confirm_no_cache")
        self.scope = kw.get("confirm_scope") or "all"
        self.inferred = kw.get("confirm_inferred")
        self.budget = kw.get("confirm_budget")
        self.backend = kw.get("confirm_backend")
        self.confirmed_only = bool(kw.get("confirmed_only"))
        self.echo = echo or (lambda line: click.echo(line, err=True))
        self.progress = None if echo is None else echo  # a given echo: lines, never the bar
        self.verifier: Any = None
        if self.verify and not fix:
            raise ConfirmError("--verify needs --fix (or --diff)")
        if not self.enabled:
            for flag, value in (
                ("--shard", self.shard),
                ("--report", self.report),
                ("--confirm-timeout", self.timeout if not self.verify else None),
                ("--device", self.device if not self.verify else None),
                ("--confirm-budget", self.budget),
                ("--confirm-inferred", self.inferred),
                ("--confirm-backend", self.backend),
                ("--confirmed-only", True if self.confirmed_only else None),
            ):
                if value is not None:
                    raise ConfirmError(f"{flag} needs --confirm")
        if self.budget is not None and not (0 < self.budget <= 7 * 86_400):
            raise ConfirmError(f"--confirm-budget must be a number of seconds > 0 and <= 604800, got {self.budget:g}")
        if self.jobs is not None and self.jobs < 1:
            raise ConfirmError("--jobs must be at least 1")
        if self.timeout is not None:
            try:  # the same bounds as the config file's `timeout` (1e308 overflowed a timer)
                self.timeout = check_confirm_timeout(self.timeout, "--confirm-timeout")
            except ConfigError as exc:
                raise ConfirmError(str(exc)) from None

    def _device(self, settings: Any) -> str:
        """--device, else `[tool.fusionlint.confirm] device`, else cuda for --confirm-on-gpu / auto."""
        configured = (getattr(settings, "confirm", None) or {}).get("device")
        return self.device or configured or ("cuda" if self.on_gpu else "auto")

    def verify_hook(self, settings: Any) -> Optional[Callable]:
        if not self.verify:
            return None
        from fusionlint.confirm.verify import Verifier

        self.verifier = Verifier(
            settings, device=self._device(settings), timeout=self.timeout, log=self.echo
        )
        return self.verifier

    def close(self) -> None:
        """End what the verifier started (its template)."""
        if self.verifier is not None:
            self.verifier.close()

    def run(self, result: Any, settings: Any) -> None:
        if not self.enabled:
            return
        confirm_findings(
            result,
            settings=settings,
            device=self._device(settings),
            jobs=self.jobs,
            shard=self.shard,
            timeout=self.timeout,
            report_path=self.report,
            require_gpu=self.on_gpu,
            use_cache=self.use_cache,
            progress=self.progress or for_terminal(self.echo),
            scope=self.scope,
            inferred=self.inferred,
            budget=self.budget,
            backend=self.backend,
        )
        if self.confirmed_only:
            # Exit codes follow what is shown: the CLI counts result.findings after this.
            result.findings = [
                f for f in result.findings if (f.confirmation or {}).get("status") != "not-reproduced"
            ]
        if self.report is not None:
            self.echo(f"wrote {self.report}")


@click.command("merge")
@click.argument("reports", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path), help="Write the merged JSON to FILE.")
def merge_command(reports: tuple[Path, ...], output: Optional[Path]) -> None:
    """Merge JSON reports of `check --confirm --shard K/N --format json` runs into one."""
    try:
        merged = merge_files(list(reports))
    except ConfirmError as exc:
        click.echo(f"fusionlint: error: {exc}", err=True)
        raise click.exceptions.Exit(2)
    text = json.dumps(merged, indent=2, ensure_ascii=False) + "\n"
    if output is None:
        click.echo(text, nl=False)
    else:
        from fusionlint.files import atomic_write

        try:
            atomic_write(output, text)
        except OSError as exc:
            click.echo(f"fusionlint: error: cannot write {output}: {exc.strerror or exc}", err=True)
            raise click.exceptions.Exit(2)
    remaining = merged.get("findings") or merged.get("errors")
    raise click.exceptions.Exit(1 if remaining else 0)
