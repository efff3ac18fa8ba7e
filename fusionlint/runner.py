"""Run fusionlint over paths: discover, read, index the project, lint each file, optionally fix."""

from __future__ import annotations

import difflib
import gc
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Optional, Sequence

from fusionlint import config as config_mod
from fusionlint import torch_target
from fusionlint.heap import return_free_memory
from fusionlint.cache.session import CacheSession
from fusionlint.config import Settings
from fusionlint.files import (
    CurrentText, DisplayPaths, SourceError, Snapshot, UsageError, WriteRefused, discover, read_source_encoded,
    write_fixed,
)
from fusionlint.lines import split_lines
from fusionlint.project.scope import index_scope
from fusionlint.registry import all_rules, unknown_selectors
from fusionlint.rule import INTERNAL_ERROR_CODE, FileError, Finding, Rule, RunResult

if TYPE_CHECKING:  # pragma: no cover
    from fusionlint.engine import Engine
    from fusionlint.project.model import Project


@dataclass
class RunOptions:
    fix: bool = False
    unsafe_fixes: bool = False
    diff: bool = False  # with fix: do not write, collect unified diffs instead
    # Called before a fixed text is written; returns False to veto it (the confirm pass's --verify).
    verify_fix: Optional[Callable[[Path, str, str, list[Finding]], bool]] = None
    jobs: Optional[int] = None  # processes that lint files in parallel; None: the available cores
    # Serve unchanged files from .fusionlint_cache/ (fusionlint/cache). A --fix/--diff run lints every
    # file it names and serves or stores no finding, but takes the project model (the other files'
    # summaries and the propagated facts) from the cache as a read-only run does.
    cache: bool = False


@dataclass
class Run:
    result: RunResult
    diffs: list[str] = field(default_factory=list)
    files_linted: int = 0  # files the engine analysed in this run (not served from the cache)
    # set by the findings cache once this file's Run is stored as its entry (in a --jobs worker too:
    # the flag comes back with the Run, and the run's snapshot of served runs takes only stored ones)
    entry_stored: bool = field(default=False, compare=False)

    @property
    def internal_errors(self) -> list[FileError]:
        """Failures of fusionlint itself; they are in ``result.errors`` too (every report lists them)."""
        return [e for e in self.result.errors if e.code == INTERNAL_ERROR_CODE]


def enabled_rules(settings: Settings) -> list[type[Rule]]:
    """Rules on for at least some file (per-file-ignores are applied per finding later)."""
    rules = all_rules()
    # Every place a code can be written is checked the same way: a typo in per-file-ignores
    # would otherwise silently ignore nothing.
    lists = [
        ("select", settings.select or []),
        ("extend-select", settings.extend_select),
        ("ignore", settings.ignore),
        *((f"per-file-ignores.{glob}", codes) for glob, codes in settings.per_file_ignores.items()),
    ]
    for key, selectors in lists:
        bad = unknown_selectors(selectors, rules)
        if bad:
            raise config_mod.ConfigError(f"'{key}': {config_mod.unknown_code_message(bad)}")
    return [
        r
        for code, r in rules.items()
        if config_mod.is_selected(code, settings, default_enabled=r.default_enabled, path="\x00")
    ]


def run(paths: list[str], settings: Settings, options: RunOptions = RunOptions()) -> Run:
    if not options.cache or options.fix:  # the selection's errors before any file is read
        rules = enabled_rules(settings)
    files, errors = discover(
        paths,
        root=settings.root,
        exclude=settings.exclude,
        extend_exclude=settings.extend_exclude,
        respect_gitignore=settings.respect_gitignore,
    )
    out = Run(RunResult(errors=list(errors), files_found=len(files) + len(errors)))
    torch_version = torch_target.resolve(settings.target_torch)
    out.result.target_torch = torch_target.format_version(torch_version)
    # --- findings cache (fusionlint/cache): files whose entry holds for this very tree
    cache = CacheSession(settings, torch_version) if options.cache else None
    # A fixing run's findings are not served or stored (a fixed file's are not of the text scanned),
    # but its model comes from the cache: `fusionlint check --fix one.py` (pre-commit's fix hook) in a
    # project of thousands of files summarised every one of them again, in one process.
    serving = cache is not None and not options.fix
    served: dict[Path, Run] = {}
    if cache is not None:
        cache.scan(files, [str(p) for p in paths])
    if serving:
        served = cache.served_as_is(files)
        if files and len(served) == len(files):  # an unchanged tree: nothing to read, index or lint
            out.result.paths.extend(cache.resolved(path) for path in files if path not in cache.unreadable)
            _merge(out, [served[path] for path in files])
            cache.finish([(cache.shown[path], served[path]) for path in files])
            return out
        # only now: an unchanged tree is served without importing the rules (and libcst), and
        # entries exist only for settings whose selection was valid, so nothing is left unchecked
        rules = enabled_rules(settings)
    # --- end findings cache
    # the analysis (and libcst under it) is imported only by a run that has files to analyse
    from fusionlint.analysis.project import ProjectIndex
    from fusionlint.engine import Engine
    from fusionlint.project.ahead import SummariesAhead
    from fusionlint.project.model import Project
    from fusionlint.plan_inputs import PlanInputStore

    # Streamed: each file's text is read, indexed and summarised here, then dropped; linting reads it
    # again (a file changed in between is that file's error). Keeping every text until the end made
    # the peak memory grow with the corpus (109 MB of text on the zoo).
    # Building the index and the model allocates millions of long-lived objects, and each time their
    # count grows by a quarter the cyclic collector re-scans all of them (transformers 5.24.0, --jobs 1:
    # 1.66 CPU s of collections before the lint phase, 0.23 s with this). Summaries leave no cyclic garbage
    # (tests/test_reference_cycles.py), so no collection follows either (see the freeze below).
    cyclic_gc = gc.isenabled()
    gc.disable()
    ahead: Optional[SummariesAhead] = None
    # what each file's lint reads of CPython's tree, made by the summary's parse (fusionlint/plan_inputs.py)
    shown_as = DisplayPaths(settings.root)
    plan_inputs = PlanInputStore.create(frozenset(shown_as(path) for path in files))
    try:
        sources: list[_Source] = []
        snapshots: dict[Path, Snapshot] = {}
        project = ProjectIndex()
        model = Project()
        model.plan_inputs = plan_inputs
        # forked workers summarise the files while this process reads and indexes them (with the cache,
        # those whose summary it does not hold, and they store what they make there)
        others: list[Path] = []  # the project's other files, which the model also summarises
        if cache is None and not options.fix:
            others = _other_project_files(files, settings, paths)
            ahead = SummariesAhead.start(files + others, shown_as, _jobs(options), plan_inputs=plan_inputs)
        elif cache is not None:
            missing, keeper = cache.to_summarise()
            ahead = SummariesAhead.start(missing, shown_as, _jobs(options), keeper=keeper, plan_inputs=plan_inputs)
        waiting: list[tuple[str, Path, int]] = []  # (shown, path, hash of the text read): summarised ahead
        for path in files:
            shown = shown_as(path)
            if serving and cache.add_unread(model, project, shown, path, reread=CurrentText(path)):
                sources.append(_Source(path, shown, "", None))  # read only if it is linted (below)
                out.result.paths.append(cache.resolved(path))
                continue
            try:
                if options.fix:  # taken before reading: a change in between makes the write refuse, never lose it
                    snapshots[path] = Snapshot.take(path)
                if cache is not None:
                    text, encoding = cache.read(path, shown)
                else:
                    text, encoding = read_source_encoded(path, writable=options.fix and not options.diff)
            except (SourceError, OSError) as exc:
                out.result.errors.append(_read_error(shown, exc))
                continue
            if cache is not None:
                cache.add_to_index(project, shown, text, reread=CurrentText(path))
                if ahead is not None and shown in ahead:
                    waiting.append((shown, path, hash(text)))
                else:
                    cache.add_linted(model, project, shown, path, text)
            else:
                project.add_file(shown, text, reread=CurrentText(path))
                if ahead is None:
                    model.add(shown, path, text)
                else:
                    waiting.append((shown, path, hash(text)))
            sources.append(_Source(path, shown, encoding, hash(text)))
            out.result.paths.append(str(path.resolve()))
        if ahead is not None:
            for shown, path, text_hash in waiting:
                made = ahead.get(shown)
                if cache is not None:
                    if made is None or not cache.add_made(model, project, shown, text_hash, made):
                        _summarise_late(cache, model, project, shown, path)
                elif made is not None and made[0].text_hash == text_hash:
                    model.add_summary(made[0])
                else:  # the worker could not make it, or the file changed since (its lint reports that)
                    _summarise_late(None, model, project, shown, path)
            # as if each file had been added in turn (the first file of a module name is its module, and
            # the cache compares the model's files in order with the last run's)
            model.reorder([s.shown for s in sources])
        if cache is not None:
            cache.finish_model(model, project, ahead)
        elif options.fix:
            model = _semantic_model(model, settings, paths)
        else:
            _add_others(model, others, shown_as, ahead)
        if ahead is not None:
            ahead.close()
            return_free_memory()  # the workers' pickles, before the propagation grows the process
        engine = Engine(rules, project, model, target_torch=torch_version)
        model.propagate()  # once, here: forked workers share the result instead of each computing it
        if cache is None and not options.fix:  # no summary changes from here on (the cache keeps whole ones)
            model.drop_bodies()
        if cache is not None:
            # A read-only run drops the bodies as a run without the cache does: the summaries' bodies are
            # stored apart, and no summary changes from here on (timm + transformers, a cold CLI run with
            # the cache, --jobs 2: peak RSS 207.7 -> 201.1 MiB). Before the facts are pickled and the
            # entries' questions asked again, each of which allocates for a while (transformers after an
            # edit in compiled code: the peak, the parent's, 212 -> 188 MB with the questions after it)
            cache.propagate(model, then_drop_bodies=serving)
        if serving:  # entries made in another tree whose cross-file facts still hold
            served.update(cache.served_after_check([s.path for s in sources if s.path not in served], model, project))
            sources = [_read_late(cache, model, source, out) if source.text_hash is None and source.path not in served
                       else source for source in sources]
            served.update((source.path, source.failed) for source in sources if source.failed is not None)
            cache.instrument(engine)
        # The model's many small objects live for the whole run and hold no cycles: keep the cyclic
        # collector from re-scanning them at every collection of the libcst trees (measured on timm: the
        # lint phase took 16 instead of 14 CPU seconds with them scanned). Unfrozen below. Frozen before
        # the collector is on again, and with no collection first: either would scan every object the
        # build made to find almost none (timm + transformers: 1,694 objects for 0.23-0.26 CPU s; 0.03 s
        # on a run of a dozen files).
        gc.freeze()  # also keeps forked workers from touching (and so copying) those pages
    except BaseException:
        if plan_inputs is not None:
            plan_inputs.close()
        raise
    finally:
        if ahead is not None:  # (closed already, unless something above raised)
            ahead.close()
        if cyclic_gc:
            gc.enable()
    try:
        # what building the model allocated and freed (texts, trees, a worker's pickled summaries) goes
        # back to the system before the lint workers are forked with this process's pages
        return_free_memory()
        may_write = _WritableArea(paths, settings.root)
        checker = _FileChecker(engine, settings, options, snapshots, may_write, cache if serving else None)
        to_check = [source for source in sources if source.path not in served]
        checked = iter(_check_all(checker, to_check, options))
        runs = [served[source.path] if source.path in served else next(checked) for source in sources]
        _merge(out, runs)
        out.files_linted = len(to_check)
    finally:
        gc.unfreeze()
        if plan_inputs is not None:
            plan_inputs.close()
    if serving:
        cache.finish([(source.shown, one) for source, one in zip(sources, runs)])
    elif cache is not None:  # the manifest only: no entry, and no snapshot of a tree it may have changed
        cache.world = None
        cache.finish()
    return out


def _summarise_late(cache: Optional[CacheSession], model, project, shown: str, path: Path) -> None:
    """Summarise a file read earlier whose summary the workers did not make: read again, so its text
    need not be kept meanwhile; unreadable now, its lint reports why."""
    try:
        text = cache.read(path, shown)[0] if cache is not None else read_source_encoded(path)[0]
    except (SourceError, OSError):
        return
    if cache is not None:
        cache.add_linted(model, project, shown, path, text)
    else:
        model.add(shown, path, text)


def _merge(out: Run, runs: list[Run]) -> None:
    """Add each file's Run (in the order given: the files' order) to the run's result."""
    for one in runs:
        out.result.findings.extend(one.result.findings)
        out.result.errors.extend(one.result.errors)
        out.result.files_checked += one.result.files_checked
        out.result.fixed += one.result.fixed
        out.diffs.extend(one.diffs)
    out.result.findings.sort(key=lambda f: f.sort_key)


def _semantic_model(model: Project, settings: Settings, paths: Sequence[str] = ()) -> Project:
    """The project model over every Python file of the project, not only the linted ones (already in
    ``model``): a linted file's answers must not depend on which other files were named (pre-commit
    names staged files)."""
    _add_others(model, _other_project_files([], settings, paths), DisplayPaths(settings.root))
    return model


def _other_project_files(linted: list[Path], settings: Settings, paths: Sequence[str]) -> list[Path]:
    """The project's Python files other than ``linted``, in the order found (see ``_semantic_model``)."""
    try:
        everything, _ = discover(
            index_scope(paths, settings), root=settings.root, exclude=settings.exclude,
            extend_exclude=settings.extend_exclude, respect_gitignore=settings.respect_gitignore,
        )
    except (OSError, ValueError, UsageError):  # an unreadable root: the linted files alone
        return []
    named = {os.path.realpath(p) for p in linted}
    return [path for path in everything if path.suffix == ".py" and os.path.realpath(path) not in named]


def _add_others(model: Project, others: list[Path], shown_as, ahead=None) -> None:
    """Summarise the project's other files into ``model`` (from ``ahead``'s workers where they made one)."""
    for path in others:
        shown = shown_as(path)
        if model.has(shown):
            continue
        made = ahead.get(shown) if ahead is not None else None
        if made is not None:  # (no text was read here to compare with: the worker's read is the one)
            model.add_summary(made[0])
            continue
        try:
            text, _ = read_source_encoded(path)
        except SourceError:
            continue  # not linted, so not this run's error
        model.add(shown, path, text)


@dataclass(frozen=True)
class _Source:
    """A file to lint, without its text (read again when it is linted)."""

    path: Path
    shown: str
    encoding: str
    # of the text the index and the model were built from; None: indexed from the findings cache
    # without being read (``CacheSession.add_unread``), read before linting by ``_read_late``
    text_hash: Optional[int]
    failed: Optional["Run"] = None  # that late read failed: this file's run is its error


def _read_late(cache: CacheSession, model: Project, source: _Source, out: Run) -> _Source:
    try:
        text, encoding = cache.read_late(model, source.path, source.shown)
    except (SourceError, OSError) as exc:
        resolved = cache.resolved(source.path)
        if resolved in out.result.paths:
            out.result.paths.remove(resolved)
        return _Source(source.path, source.shown, "", None, Run(RunResult(errors=[_read_error(source.shown, exc)])))
    return _Source(source.path, source.shown, encoding, hash(text))


def _read_error(shown: str, exc: Exception) -> FileError:
    if isinstance(exc, SourceError):
        return FileError(shown, str(exc), exc.line)
    return FileError(shown, f"cannot read file: {getattr(exc, 'strerror', None) or exc}")


def _reread(source: _Source, writable: bool) -> tuple[Optional[str], Optional[FileError]]:
    """The text of ``source`` as it was indexed, or the error saying why it cannot be linted now."""
    try:
        text, encoding = read_source_encoded(source.path, writable=writable)
    except (SourceError, OSError) as exc:
        return None, _read_error(source.shown, exc)
    if hash(text) != source.text_hash or encoding != source.encoding:
        return None, FileError(source.shown, "changed while fusionlint was checking it: not checked (run again)")
    return text, None


@dataclass
class _FileChecker:
    """Everything linting (and fixing) one file needs; shared by the worker processes of a run."""

    engine: Engine
    settings: Settings
    options: RunOptions
    snapshots: dict[Path, Snapshot]
    may_write: "_WritableArea"
    cache: Optional[CacheSession] = None

    def check(self, source: _Source) -> Run:
        """One file's findings, errors, fixes and diff, as a Run of its own (merged by the caller)."""
        if self.cache is None:
            return self._check(source)
        self.cache.begin()  # records the cross-file facts this file's analysis asks for
        one = self._check(source)
        self.cache.end(source.shown, one)
        return one

    def _check(self, source: _Source) -> Run:
        out = Run(RunResult())
        engine, settings, options = self.engine, self.settings, self.options
        path, shown, encoding = source.path, source.shown, source.encoding
        text, failed_read = _reread(source, writable=options.fix and not options.diff)
        if failed_read is not None:
            out.result.errors.append(failed_read)
            return out
        crashes: list[FileError] = []  # rules that raised on this file (in any fix round), once each

        def lint(source: str) -> list[Finding]:
            linted = engine.lint(source, shown)
            if linted.error is not None:
                raise _LintFailed(linted.error)
            for crash in linted.rule_errors:
                if all((c.rule, c.message) != (crash.rule, crash.message) for c in crashes):
                    crashes.append(crash)
            return [f for f in linted.findings if config_mod.is_selected(f.code, settings, default_enabled=True, path=shown)]

        try:
            findings = lint(text)
        except _LintFailed as failed:
            out.result.errors.append(failed.error)
            return out
        except Exception as exc:  # a bug in fusionlint outside any one rule: report it, keep going, exit 2
            out.result.errors.append(
                FileError(shown, f"internal error: {type(exc).__name__}: {exc}", code=INTERNAL_ERROR_CODE)
            )
            return out
        out.result.files_checked = 1  # only files that every rule ran on
        if options.fix and findings:
            fix_target = _FixTarget(path, shown, text, encoding, self.snapshots[path], self.may_write.why_not(path))
            try:
                findings = _fix_file(fix_target, findings, lint, options, out)
            except Exception as exc:  # same: this file's findings are still reported
                out.result.errors.append(
                    FileError(shown, f"internal error while fixing: {type(exc).__name__}: {exc}", code=INTERNAL_ERROR_CODE)
                )
        out.result.errors.extend(crashes)
        out.result.findings.extend(findings)
        return out


# Files per worker task, and the fewest files worth starting workers for: below that, forking and
# sending results back cost more than they save.
_CHUNK = 8
_MIN_PARALLEL_FILES = 24
_checker_in_worker: Optional[_FileChecker] = None  # set before the fork, inherited by the workers


def _jobs(options: RunOptions) -> int:
    return options.jobs if options.jobs is not None else _default_jobs()


def _default_jobs() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _check_all(checker: _FileChecker, sources: list[_Source], options: RunOptions) -> list[Run]:
    """Each file's Run, in the order of ``sources`` whatever the number of workers (deterministic output).

    Workers are forked after the project index and model are built, so they share them instead of
    rebuilding them; each lints a slice of the files. A ``--verify`` hook runs the user's code and
    stays in this process, and where fork is unavailable the files are linted here one by one.
    """
    jobs = _jobs(options)
    if (
        jobs <= 1
        or len(sources) < _MIN_PARALLEL_FILES
        or options.verify_fix is not None
        or "fork" not in multiprocessing.get_all_start_methods()
    ):
        return [checker.check(source) for source in sources]
    global _checker_in_worker
    _checker_in_worker = checker
    chunks = [list(range(i, min(i + _CHUNK, len(sources)))) for i in range(0, len(sources), _CHUNK)]
    try:
        with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("fork")) as pool:
            done = list(pool.map(_check_chunk, [[sources[i] for i in chunk] for chunk in chunks]))
    except BrokenProcessPool:  # a worker died (killed, out of memory): do the whole run here instead
        return [checker.check(source) for source in sources]
    finally:
        _checker_in_worker = None
    return [run for chunk in done for run in chunk]


def _check_chunk(chunk: list[_Source]) -> list[Run]:
    assert _checker_in_worker is not None
    return [_checker_in_worker.check(source) for source in chunk]


class _LintFailed(Exception):
    def __init__(self, error: FileError) -> None:
        super().__init__(error.message)
        self.error = error


@dataclass
class _FixTarget:
    path: Path
    shown: str
    text: str
    encoding: str
    snapshot: Snapshot  # the file as it was read
    refusal: Optional[str]  # why it may not be written at all (outside the project), else None


class _WritableArea:
    """Where ``--fix`` may write: inside the project root, or a file or directory named explicitly.

    A symlink found while walking a directory that leads out of it is not written through: a fix
    never leaves the project unless the user named the file (or a directory holding its target).
    """

    def __init__(self, paths: list[str], root: Path) -> None:
        self.files: set[str] = set()
        self.dirs: list[str] = [os.path.realpath(root)]
        for given in paths:
            real = os.path.realpath(given)
            if os.path.isdir(real):
                self.dirs.append(real)
            else:
                self.files.add(real)

    def why_not(self, path: Path) -> Optional[str]:
        real = os.path.realpath(path)
        if real in self.files or any(real.startswith(d.rstrip(os.sep) + os.sep) for d in self.dirs):
            return None
        return f"symlink to a file outside the project ({real}); not fixed (name the file to fix it)"


def _fix_file(target: _FixTarget, findings: list[Finding], lint, options: RunOptions, out: Run) -> list[Finding]:
    path, shown, text = target.path, target.shown, target.text
    try:
        from fusionlint.fixes import fix_source

        outcome = fix_source(text, lint, unsafe=options.unsafe_fixes, findings=findings)
    except _LintFailed as failed:  # a fix produced something our own parser rejects
        out.result.errors.append(FileError(shown, f"fix not applied: {failed.error.message}", failed.error.line))
        return findings
    if outcome.error:
        out.result.errors.append(FileError(shown, outcome.error))
    if outcome.applied == 0 or outcome.source == text:
        return outcome.findings
    if options.verify_fix is not None and not options.verify_fix(path, text, outcome.source, findings):
        return findings
    if options.diff:
        out.diffs.append(
            "".join(
                difflib.unified_diff(
                    split_lines(text, keepends=True),
                    split_lines(outcome.source, keepends=True),
                    fromfile=f"a/{shown}",
                    tofile=f"b/{shown}",
                )
            )
        )
        return findings  # nothing written: what was found is still there
    try:
        if target.refusal:
            raise WriteRefused(target.refusal)
        write_fixed(path, outcome.source, encoding=target.encoding, expected=target.snapshot)  # cookie, BOM kept
    except WriteRefused as refused:
        out.result.errors.append(FileError(shown, str(refused)))
        return findings
    except (OSError, UnicodeError) as exc:
        out.result.errors.append(FileError(shown, f"cannot write fixed file: {getattr(exc, 'strerror', None) or exc}"))
        return findings
    out.result.fixed += outcome.applied
    return outcome.findings
