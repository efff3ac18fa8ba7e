"""One run's use of the findings cache: which files can be served, the project model from
cached summaries and propagation, and the entries written for the files linted.

Three layers, each keyed by what it is computed from:

- **manifest**: display path -> (size, mtime_ns, inode, content digest). A file whose stat is
  unchanged is not read at all; otherwise its bytes are hashed (the digest is the key, the stat
  only a shortcut). A file modified within the last two seconds is not trusted to stat (its
  mtime could repeat after a second edit in the same tick) and is hashed again next run.
- **summaries** (``ast`` pass, per file, keyed by content + module name + fusionlint's code) and
  the **propagated facts** of the whole model (keyed by every summary in model order + the class
  names of the regex index), so a run where something changed does not redo the ``ast`` pass of
  unchanged files, nor the propagation when no summary changed.
- **findings entries**, keyed by content + path + fusionlint's code + settings + target torch +
  rules. Each holds the file's result, the questions its analysis asked other files (see
  ``fusionlint.cache.recording``) and the *world* it was computed in: the digest of every project
  file's path, content and module name. An entry of the same world is served as is (an
  unchanged tree needs no model at all); one of another world is served when all its questions
  get the same answers from this run's model, and is stamped with the new world.
- **snapshot** (``served.pickle``): the runs of the last run's linted files, each with its entry's
  key, written at the end of a run that saw one tree throughout. A run over that same tree (same
  world, same settings) serves every file from this one file instead of opening an entry per file
  (timm + transformers: 3,216 entries); any other tree reads the entries as above.
"""

from __future__ import annotations

import dataclasses
import os
import pickle
import sys
import time
from pathlib import Path
from typing import Optional

import fusionlint
from fusionlint.cache.recording import CLASS_QUESTIONS, LINE_QUESTIONS, Answers, RecordingIndex, RecordingModel, Recorder, still_holds
from fusionlint.cache.store import FORMAT, Store, digest
# fusionlint.project.model and .summary are imported where they are used: they pull in libcst,
# which a warm run (every file served as is) never needs
from fusionlint.project.scope import index_scope
from fusionlint.files import (
    DEFAULT_MAX_BYTES, SourceError, UsageError, decode_source, DisplayPaths, discover, read_source_encoded,
)
from fusionlint.rule import INTERNAL_ERROR_CODE, FileError, RunResult

# More changed summaries than this: propagate again rather than compare each with its last version
_MAX_CHANGED_SUMMARIES = 16
_NO_READS = pickle.dumps([], protocol=pickle.HIGHEST_PROTOCOL)
# the runs of the last run's linted files, valid for its config and world (``CacheSession.finish``)
_SNAPSHOT = "served.pickle"
_RACY_NS = 2_000_000_000  # files younger than this are hashed again next run (see the module doc)


@dataclasses.dataclass
class _File:
    path: Path
    shown: str
    digest: Optional[str]  # None: could not be read (its lint reports why)
    module: tuple[str, bool]
    linted: bool


class CacheSession:
    def __init__(self, settings, torch_version) -> None:
        self.settings = settings
        # one folder per fusionlint build and Python (fusionlint.cache.store: old builds' folders go)
        self.store = Store(settings.root, digest(repr((FORMAT, fusionlint.__version__, _code_fingerprint(),
                                                           sys.version_info[:2])).encode()))
        self.store.mark_used()
        # the rules in force follow from the settings and fusionlint's own code, both in the key: a
        # warm run need not import the rules (and libcst) to know which entries are its own
        self.config = digest(
            repr(
                (FORMAT, fusionlint.__version__, _code_fingerprint(), sys.version_info[:2],
                 dataclasses.astuple(settings), torch_version)
            ).encode("utf-8", "surrogatepass")
        )
        self.recorder = Recorder()
        self.files: dict[str, _File] = {}
        self.world: Optional[str] = None
        self._summary_digests: dict[str, str] = {}  # display path -> digest of its summary's content
        self._manifest: dict[str, tuple[int, int, int, str]] = {}
        self._manifest_dirty = False
        self._package_dirs: dict[str, tuple[str, ...]] = {}
        self._real_dirs: dict[str, str] = {}
        self.shown: dict[Path, str] = {}  # linted path -> display path
        self._facts_key: Optional[str] = None
        self._facts_loaded = False
        self.unreadable: set[Path] = set()  # served files whose entry is a read error (not in result.paths)
        self._trusted: set[str] = set()  # files whose digest came from an unchanged stat (not read this run)
        self._previous: dict[str, str] = {}  # display path -> content digest of the last run, where it changed
        # display path -> (entry key, world) of the entry whose questions were last found to hold in
        # that world: one table written per run instead of every entry again
        self._verified: dict[str, tuple[str, str]] = {}
        self._verified_dirty = False
        # display path -> (summary key, the summary): the summaries loaded without their function bodies;
        # a summary that replaced one in the model since (an editor's buffer, a fixed text) is whole
        self._bodiless: dict[str, tuple[str, object]] = {}
        self._entries: dict[str, tuple[str, dict]] = {}  # display path -> (key, entry) loaded this run
        # display path -> (entry key, run, unreadable) of the last run whose whole tree was the one of
        # this run (see ``finish``): the runs a warm run serves from one file instead of one per file
        self._snapshot: dict[str, tuple[str, object, bool]] = {}
        self._from_snapshot: set[str] = set()  # display paths served from it in this run
        self._unreadable_saved: dict[str, tuple[str, object, bool]] = {}  # entries of files read as errors
        self._state: Optional[dict] = None  # what this run's model is made of (compared by the next run)
        self.facts_reused = False  # the last run's facts held for this run's changed summaries
        # the last run's world, when every model question gets the answer it got in that world: an
        # entry found to hold there needs only its name-index questions asked again
        self.model_same_since: Optional[str] = None
        # the last run's world, when every class question gets the answer it got there (the facts may
        # not): an entry found to hold there needs its other questions asked again
        self.classes_same_since: Optional[str] = None
        self.questions = Answers()  # question -> digest of its answer in this run's model

    # -- 1. what the tree is now --------------------------------------------------------------------
    def scan(self, linted: list[Path], given: list[str], others: Optional[list[Path]] = None) -> None:
        """Digest every project file (the linted ones, then every Python file under the root, or
        ``others`` where the caller found them: the language server, which lints none here)."""
        manifest = self.store.load_file(self.store.base / "manifest.pickle")
        self._manifest = manifest if isinstance(manifest, dict) else {}
        verified = self.store.load_file(self.store.base / "verified.pickle")
        self._verified = verified if isinstance(verified, dict) else {}
        shown_as = DisplayPaths(self.settings.root)
        for path in linted:
            shown = self.shown[path] = shown_as(path)
            self.files.setdefault(shown, self._file(path, shown, True))
        if others is None:
            scope = index_scope(given, self.settings)
            named = {os.path.realpath(p) for p in given}
            # (all named: they are the linted files already)
            others = [] if all(os.path.realpath(p) in named for p in scope) else self._project_files(scope)
        for path in others:
            shown = shown_as(path)
            if shown not in self.files and path.suffix == ".py":
                self.files[shown] = self._file(path, shown, False)
        self.world = digest(repr([(f.shown, f.digest, f.module, f.linted) for f in self.files.values()]).encode(
            "utf-8", "surrogatepass"))
        snapshot = self.store.load_file(self.store.base / _SNAPSHOT)
        if isinstance(snapshot, dict) and snapshot.get("config") == self.config and snapshot.get("world") == self.world:
            runs = snapshot.get("runs")
            self._snapshot = runs if isinstance(runs, dict) else {}

    def _project_files(self, scope: list[Path]) -> list[Path]:
        s = self.settings
        try:
            found, _ = discover(scope, root=s.root, exclude=s.exclude, extend_exclude=s.extend_exclude,
                                respect_gitignore=s.respect_gitignore)
        except (OSError, ValueError, UsageError):
            return []
        return found

    def _file(self, path: Path, shown: str, linted: bool) -> _File:
        return _File(path, shown, self._digest(path, shown), self._module(path), linted)

    def _digest(self, path: Path, shown: str) -> Optional[str]:
        try:
            st = os.stat(path)
        except OSError:
            return None
        known = self._manifest.get(shown)
        if known is not None and known[:3] == (st.st_size, st.st_mtime_ns, st.st_ino):
            self._trusted.add(shown)
            return known[3]
        if st.st_size > DEFAULT_MAX_BYTES:
            return None
        try:
            with open(path, "rb") as fh:
                data = fh.read(DEFAULT_MAX_BYTES + 1)
        except OSError:
            return None
        found = digest(data)
        if known is not None and known[3] != found:
            self._previous[shown] = known[3]
        if time.time_ns() - st.st_mtime_ns > _RACY_NS:
            self._manifest[shown] = (st.st_size, st.st_mtime_ns, st.st_ino, found)
        else:
            self._manifest.pop(shown, None)
        self._manifest_dirty = True
        return found

    def _module(self, path: Path) -> tuple[str, bool]:
        """``fusionlint.project.model.module_name``, each directory's package prefix worked out once
        (on strings: pathlib's objects cost more than the lookups on a large tree)."""
        directory, name = os.path.split(str(path))
        stem = name.rsplit(".", 1)[0] if "." in name[1:] else name
        if name == "__init__.py":
            parent, dirname = os.path.split(directory)
            prefix = self._package_prefix(parent)
            return ".".join([*prefix, dirname]) or stem, True
        return ".".join([*self._package_prefix(directory), stem]) or stem, False

    def _package_prefix(self, directory: str) -> tuple[str, ...]:
        """The package names ``directory`` and the packages around it make: ("pkg", "sub") or ()."""
        found = self._package_dirs.get(directory)
        if found is None:
            parent, name = os.path.split(directory)
            if parent == directory or not os.path.isfile(os.path.join(directory, "__init__.py")):
                found = ()
            else:
                found = (*self._package_prefix(parent), name)
            self._package_dirs[directory] = found
        return found

    def resolved(self, path: Path) -> str:
        """``str(path.resolve())``, each directory resolved once."""
        text = str(path)
        if os.path.islink(text):
            return os.path.realpath(text)
        directory, name = os.path.split(os.path.abspath(text))
        real = self._real_dirs.get(directory)
        if real is None:
            real = self._real_dirs[directory] = os.path.realpath(directory)
        return os.path.join(real, name)

    # -- 2. entries ---------------------------------------------------------------------------------
    def _entry_key(self, f: _File) -> str:
        return digest(f"{self.config}\0{f.shown}\0{f.digest}".encode("utf-8", "surrogatepass"))

    def _entry(self, shown: str):
        f = self.files.get(shown)
        if f is None or f.digest is None:
            return None
        key = self._entry_key(f)
        loaded = self._entries.get(shown)
        if loaded is not None and loaded[0] == key:
            return loaded[1]
        entry = self.store.load("findings", key)
        if not (isinstance(entry, dict) and {"world", "reads", "run"} <= entry.keys()):
            return None
        self._entries[shown] = (key, entry)
        return entry

    def served_as_is(self, linted: list[Path]) -> dict[Path, object]:
        """The runs of the linted files whose entry was made, or last found to hold, in this very world."""
        out = {}
        self.unreadable = set()
        for path in linted:
            shown = self.shown[path]
            kept = self._snapshot.get(shown)
            if kept is not None and self.world is not None and kept[0] == self._entry_key(self.files[shown]):
                self._from_snapshot.add(shown)
                out[path] = kept[1]
                if kept[2]:
                    self.unreadable.add(path)
                continue
            entry = self._entry(shown)
            if entry is None or self.world is None:
                continue
            if entry["world"] == self.world or self._verified.get(shown) == (self._entries[shown][0], self.world):
                out[path] = entry["run"]
                if entry.get("unreadable"):
                    self.unreadable.add(path)
        return out

    def _save_unreadable(self, f: _File, error: FileError) -> None:
        from fusionlint.runner import Run  # the runner imports this module

        one = Run(RunResult(errors=[error]))
        key = self._entry_key(f)
        if self.store.save("findings", key, {"world": self.world, "reads": _NO_READS, "run": one, "unreadable": True}):
            self._unreadable_saved[f.shown] = (key, one, True)

    def served_after_check(self, pending: list[Path], model, index) -> dict[Path, object]:
        """The runs of ``pending`` whose entry's questions get the same answers in this run's model."""
        out = {}
        for path in pending:
            shown = self.shown[path]
            entry = self._entry(shown)
            if entry is None or entry.get("unreadable"):
                continue
            try:
                reads = pickle.loads(entry["reads"])
            except Exception:  # damaged inside a whole file (its digest held): treat as absent
                continue
            key, stamp = self._entries[shown][0], self._verified.get(shown)
            worlds = {entry["world"], stamp[1] if stamp is not None and stamp[0] == key else None}
            if self.model_same_since is not None and self.model_same_since in worlds:
                # answered as then, but for lines (the model's views leave them out)
                reads = [read for read in reads if not read[0][0].startswith("model.") or read[0][0] in LINE_QUESTIONS]
            elif self.classes_same_since is not None and self.classes_same_since in worlds:
                # the propagated facts changed, the classes did not: their questions are answered as then
                # (a call added in LlamaAttention.forward: 1.3 of the 3.5 s of asking again on transformers)
                reads = [read for read in reads if read[0][0] not in CLASS_QUESTIONS]
            if not still_holds(reads, model, index, self.questions):
                continue
            out[path] = entry["run"]
            if self.world is not None:  # the next run of this tree serves it unchecked
                self._verified[shown] = (self._entries[shown][0], self.world)
                self._verified_dirty = True
        # asked once per run: not kept into the lint phase, whose workers would inherit them
        self.questions = Answers()
        return out

    def read(self, path: Path, shown: str) -> tuple[str, str]:
        """``files.read_source_encoded`` for a linted file, also checking that the bytes are the
        ones scanned: a file changed since the scan gets its new digest (its entry is then
        keyed by what was linted) and this run's world is not one tree, so nothing is stamped with it."""
        try:
            with open(path, "rb") as fh:
                data = fh.read(DEFAULT_MAX_BYTES + 1)
        except OSError:
            data = None
        if data is None or len(data) > DEFAULT_MAX_BYTES:
            return read_source_encoded(path)  # its own message for what went wrong
        f = self.files.get(shown)
        now = digest(data)
        if f is not None and f.digest != now:
            f.digest = now
            self.world = None
        try:
            return decode_source(data)
        except SourceError as exc:  # undecodable, NUL bytes: an entry too, or every run would miss
            if f is not None:
                self._save_unreadable(f, FileError(shown, str(exc), exc.line))
            raise

    # -- 3. the name index and the project model -------------------------------------------------------
    def add_to_index(self, index, shown: str, text: str, reread=None) -> None:
        """``index.add_file``, with the regex scan of unchanged content taken from the cache."""
        f = self.files.get(shown)
        key = None if f is None or f.digest is None else digest(f"{self.config_code}\0{f.digest}".encode())
        cached = self.store.load("scans", key) if key is not None else None
        if isinstance(cached, tuple) and len(cached) == 1:
            index.update_file(shown, text, reread, facts=cached[0])
            return
        index.add_file(shown, text, reread)
        if key is not None and index.scanned(shown) is not None:
            self.store.save("scans", key, (index.scanned(shown),))

    def add_unread(self, model, index, shown: str, path: Path, reread=None) -> bool:
        """Index and summarise a linted file without reading it, when its stat is the one of the last
        run and both its name-index scan and its summary are cached; False: read it as usual.
        Such a file's text is read only if it has to be linted after all (``read_late``)."""
        f = self.files.get(shown)
        if f is None or f.digest is None or shown not in self._trusted:
            return False
        scan = self.store.load("scans", digest(f"{self.config_code}\0{f.digest}".encode()))
        summary = self.store.load("summaries", self._summary_key(f))
        if not (isinstance(scan, tuple) and len(scan) == 1 and isinstance(summary, tuple) and len(summary) == 2):
            return False
        index.update_file(shown, "", reread, facts=scan[0])  # the text is not kept when reread is given
        model.name_index = index
        found, self._summary_digests[shown] = summary
        if found is not None:
            found.path = shown  # the entry serves every file of this text and module name (see ``_add``)
            found.text_hash = 0  # not this text's hash until read_late sets it
            self._bodiless[shown] = (self._summary_key(f), found)
            model.add_summary(found)
        else:
            model.remove(shown)
        return True

    def read_late(self, model, path: Path, shown: str) -> tuple[str, str]:
        """The text of a file indexed by ``add_unread`` that is to be linted now: checked against the
        digest it was indexed with, and marked in the model as the text its summary was made from."""
        f = self.files.get(shown)
        try:
            with open(path, "rb") as fh:
                data = fh.read(DEFAULT_MAX_BYTES + 1)
        except OSError:
            data = None
        if data is None or len(data) > DEFAULT_MAX_BYTES or f is None or digest(data) != f.digest:
            self.world = None
            raise SourceError("changed while fusionlint was checking it: not checked (run again)")
        text, encoding = decode_source(data)
        summary = model.files.get(shown)
        if summary is not None:
            summary.text_hash = hash(text)
        return text, encoding

    def add_linted(self, model, index, shown: str, path: Path, text: str) -> None:
        """``model.add`` for a linted file as the run reads it (texts are not kept: the run streams),
        from its cached summary where the content is unchanged."""
        model.name_index = index  # before the facts: a later change of index makes the model start over
        self._add(model, shown, path, text)

    def to_summarise(self) -> tuple[list[Path], SummaryKeeper]:
        """The project's files (the linted ones first) whose summary is not in the cache (the ones a run
        summarises), and what stores the summaries a worker makes of them (``fusionlint.project.ahead``)."""
        paths, keys = [], {}
        for f in self.files.values():
            if f.digest is None or f.path.suffix != ".py":
                continue
            key = self._summary_key(f)
            if not os.path.exists(self.store.path("summaries", key)):
                paths.append(f.path)
                keys[f.shown] = (f.digest, key)
        return paths, SummaryKeeper(self.store, keys)

    def add_made(self, model, index, shown: str, text_hash: int, made) -> bool:
        """``add_linted`` with the summary a worker made and stored (``to_summarise``): False when it is
        not one of the text the run read (that file changed in between), or the worker stored none."""
        summary, stored_as = made
        f = self.files.get(shown)
        if stored_as is None or summary.text_hash != text_hash or f is None:
            return False
        model.name_index = index
        self._summary_digests[shown] = stored_as
        model.add_summary(summary)
        return True

    def finish_model(self, model, index, ahead=None) -> None:
        """Fill ``model`` as ``runner._semantic_model`` does after the linted files (the rest of the
        project), from cached summaries where the content is unchanged, else the summaries ``ahead``'s
        workers made (and stored), and load the propagation: the one computed over exactly these
        summaries, else the last run's when what changed since is nothing the propagation reads
        (``_compare_with_last_run``)."""
        model.name_index = index
        # whenever the propagation runs (runner.run, or later in a worker): it reads the bodies
        model.before_propagation = lambda: self._bodies_for_propagation(model)
        for f in list(self.files.values()):
            if model.has(f.shown) or f.linted or f.path.suffix != ".py":
                continue
            made = ahead.get(f.shown) if ahead is not None else None
            if made is not None and made[1] is not None:  # stored: made of the bytes scanned
                self._summary_digests[f.shown] = made[1]
                model.add_summary(made[0])
                continue
            self._add(model, f.shown, f.path, None)
        # what the summaries say, not their files' text: an edit that leaves every summary as it was
        # (a comment, a changed string) keeps the propagation
        keys = [(shown, self._summary_digests.get(shown) or _summary_digest(s)) for shown, s in model.files.items()]
        bases = sorted((name, tuple(b)) for name, b in index.class_bases.items())
        self._facts_key = digest(repr((self.config, keys, bases)).encode("utf-8", "surrogatepass"))
        self._state = {"config": self.config, "key": self._facts_key, "bases": bases, "world": self.world,
                       "files": [(shown, d, self.files[shown].digest if shown in self.files else None)
                                 for shown, d in keys]}
        last = self._compare_with_last_run(model, keys, bases)
        saved = self.store.load("facts", self._facts_key)
        if _is_facts(saved):
            model.import_facts(saved["facts"], saved["probes"])
            self._facts_loaded = True
        elif last is not None and last[1] is not None:
            reused = self.store.load("facts", last[1])
            if _is_facts(reused):
                model.import_facts(reused["facts"], reused["probes"])
                self._facts_loaded = self.facts_reused = True
                self._save_facts(reused["facts"], reused["probes"])
        if last is not None and last[2]:
            self.model_same_since = last[0]
        if last is not None and last[3]:
            self.classes_same_since = last[0]

    def _compare_with_last_run(self, model, keys, bases):
        """(last run's world, the key of its facts if they hold for this run's summaries, whether every
        model question gets the answer it got then, whether every class question does), or None when the
        last run's model is not comparable: other settings, other files or file order, other regex-index
        classes, or more than a few summaries changed."""
        last = self.store.load_file(self.store.base / "state.pickle")
        if not (isinstance(last, dict) and last.get("config") == self.config and last.get("bases") == bases):
            return None
        before = last.get("files")
        if not isinstance(before, list) or [row[0] for row in before] != [shown for shown, _ in keys]:
            return None
        changed = [(shown, old_content) for (shown, d), (_, old_d, old_content) in zip(keys, before) if d != old_d]
        if len(changed) > _MAX_CHANGED_SUMMARIES:
            return None
        # what the comparison needs of the last run's facts (which functions of each file it entered, and
        # what it looked up), not the facts: loading those too left the edited run 23 MiB larger
        saved = self.store.load("facts-index", last.get("key")) if isinstance(last.get("key"), str) else None
        facts_hold, classes_hold = _is_facts_index(saved), True
        for shown, old_content in changed:
            f, now = self.files.get(shown), model.files.get(shown)
            cached = None
            if f is not None and now is not None and old_content is not None:
                cached = self.store.load("summaries", self._summary_key(dataclasses.replace(f, digest=old_content)))
            if not (isinstance(cached, tuple) and len(cached) == 2 and cached[0] is not None):
                return None
            old = cached[0]
            old.path = shown  # made, maybe, for another file of the same text and module name (``_add``)
            if not self._fill_bodies(old, self._summary_key(dataclasses.replace(f, digest=old_content))):
                return None
            if shown in self._bodiless:
                key, loaded = self._bodiless.pop(shown)
                if loaded is now and not self._fill_bodies(now, key):
                    return None
            from fusionlint.project.model import class_view, propagation_view

            if facts_hold:
                entered = saved["entered"].get(old.path, NO_ENTERED)
                probed = saved["probes"].get(old.module, frozenset())
                facts_hold = propagation_view(old, entered, probed) == propagation_view(now, entered, probed)
            classes_hold = classes_hold and class_view(old, model.modules) == class_view(now, model.modules)
            # `binds_logger` answers come from the module-level loggers and the imports (re-exports)
            classes_hold = classes_hold and (old.loggers, old.aliases) == (now.loggers, now.aliases)
        facts = last.get("key") if facts_hold else None  # (the facts' key: loaded when they are taken)
        # the facts answer function_facts/has_compiled, the classes class_kind/attributes (and the loggers and imports binds_logger), the same
        # files in the same order has/summary
        world = last.get("world")
        return world, facts, facts_hold and classes_hold and world is not None, classes_hold and world is not None

    def _summary_key(self, f: _File) -> str:
        # "bodies apart": summaries stored whole by an earlier layout must not be taken for shapes
        return digest(repr((self.config_code, f.digest, f.module, "bodies apart")).encode("utf-8", "surrogatepass"))

    @property
    def config_code(self) -> str:
        return _code_fingerprint()

    def _add(self, model, shown: str, path: Path, text: Optional[str]) -> None:
        f = self.files.get(shown)
        if f is None or f.digest is None:  # not scanned (cannot happen) or unreadable: no cache
            if text is not None:
                model.add(shown, path, text)
            return
        key = self._summary_key(f)
        cached = self.store.load("summaries", key)
        if isinstance(cached, tuple) and len(cached) == 2:
            summary, self._summary_digests[shown] = cached
            if summary is not None:
                # keyed by text and module name, so the entry may have been made for another file with both
                # (a `train.py` copied into two example folders): it is this file's summary under its path
                summary.path = shown
                if text is not None:
                    summary.text_hash = hash(text)  # str hashes differ per process: the model compares them
                self._bodiless[shown] = (key, summary)
                model.add_summary(summary)
            return
        if text is None:
            try:
                with open(path, "rb") as fh:
                    text, _ = decode_source(fh.read(DEFAULT_MAX_BYTES + 1))
            except (OSError, SourceError):
                return  # not linted, so not this run's error (as runner._semantic_model)
        model.add(shown, path, text)
        self._summary_digests[shown] = _store_summary(self.store, key, model.files.get(shown))

    def _fill_bodies(self, summary, key: str) -> bool:
        """Put the cached function bodies back into a summary loaded without them, and share the whole
        summary's values with the other files' (``summary.adopt``), as in the summaries a run makes
        itself: each file's pickle shares only within itself. A run that propagates holds every body and
        the facts on top of the model: on transformers, after an edit inside LlamaAttention.forward, the
        parent stood at 215 MB when the lint workers forked with only the bodies adopted, 188 MB with the
        whole summaries (the bodies alone, not adopted: 70 MB more). Runs that do not propagate load the
        summaries as they are (adopting them all costs about a CPU second there)."""
        bodies = self.store.load("bodies", key)
        if not (isinstance(bodies, dict) and bodies.keys() == summary.functions.keys()):
            return False
        from fusionlint.project.summary import adopt

        for qualname, (calls, returns, tensor_uses) in bodies.items():
            fn = summary.functions[qualname]
            fn.calls, fn.returns, fn.tensor_uses = calls, returns, tensor_uses
        adopt(summary)
        return True

    def _bodies_for_propagation(self, model) -> None:
        """Every summary whole before the propagation runs: bodies from the cache, else the file read
        and summarised again (a missing or damaged bodies file), else the file left out as unreadable."""
        for shown, (key, loaded) in list(self._bodiless.items()):
            summary = model.files.get(shown)
            if summary is not loaded:
                continue  # replaced since (an edited buffer, a fixed text): its bodies are its own text's
            if not self._fill_bodies(summary, key):
                f = self.files.get(shown)
                model.remove(shown)
                try:
                    with open(f.path, "rb") as fh:
                        text, _ = decode_source(fh.read(DEFAULT_MAX_BYTES + 1))
                except (OSError, SourceError, AttributeError):
                    continue
                model.add(shown, f.path, text)
        self._bodiless.clear()

    def _save_facts(self, facts: dict, probes: dict) -> bool:
        """Store the propagated facts under this run's key, and apart what the next run compares first."""
        entered: dict[str, set[str]] = {}
        for path, qualname in facts:
            entered.setdefault(path, set()).add(qualname)
        index = {"entered": {path: frozenset(names) for path, names in entered.items()}, "probes": probes}
        return self.store.save("facts", self._facts_key, {"facts": facts, "probes": probes}) and self.store.save(
            "facts-index", self._facts_key, index)

    def propagate(self, model, then_drop_bodies: bool = False) -> None:
        """Compute the propagated facts now (before workers fork) and keep them for the next run;
        ``then_drop_bodies``: ``model.drop_bodies()`` once they are computed, before they are saved."""
        model.propagate()
        facts, probes = model.export_facts(), model.export_probes()
        if then_drop_bodies:
            model.drop_bodies()
        if self._facts_key is None:
            return
        if not self._facts_loaded:
            stored = facts is not None and probes is not None and self._save_facts(facts, probes)
        else:  # read from the entry, or the last run's saved under this key (finish_model)
            stored = self.store.path("facts", self._facts_key).exists()
        # (not by loading the entry back: a second copy of every fact, 18 MiB on timm + transformers,
        # made the cold run's peak)
        if self._state is not None and stored:
            self.store.save_file(self.store.base / "state.pickle", self._state)  # the next run compares with it

    # -- 4. linting with the questions recorded ---------------------------------------------------------
    def instrument(self, engine) -> None:
        engine.model = RecordingModel(engine.model, self.recorder)
        engine.project = RecordingIndex(engine.project, self.recorder)

    def begin(self) -> None:
        self.recorder.begin()

    def end(self, shown: str, one) -> None:
        """Store one linted file's run, unless it holds a failure of fusionlint or asked an unknown question."""
        reads, cacheable = self.recorder.end()
        f = self.files.get(shown)
        if f is None or f.digest is None or reads is None or not cacheable or one.diffs:
            return
        if any(e.code == INTERNAL_ERROR_CODE for e in one.result.errors):
            return
        # the questions as bytes: they are most of an entry (10.7 of 12.1 MB on timm + transformers)
        # and only an entry checked against a changed tree reads them; a warm run unpickles
        # only the runs (served_as_is over 3,216 entries: 0.40 -> 0.24 s)
        entry = {"world": self.world, "reads": pickle.dumps(reads, protocol=pickle.HIGHEST_PROTOCOL), "run": one}
        one.entry_stored = self.store.save("findings", self._entry_key(f), entry)

    def finish(self, runs: list[tuple[str, object]] = ()) -> None:
        """Save what the next run reads first: the manifest, the verified stamps and, when this run saw
        one unchanged tree throughout, the snapshot of ``runs`` (display path, run of each linted file)
        that were served or stored as entries in it."""
        if self._manifest_dirty:
            self.store.save_file(self.store.base / "manifest.pickle", self._manifest)
        if self._verified_dirty:
            self.store.save_file(self.store.base / "verified.pickle", self._verified)
        if self.world is None or not (runs or self._unreadable_saved):
            return
        kept = dict(self._snapshot)
        for shown, one in runs:
            f = self.files.get(shown)
            if f is None or f.digest is None or shown in self._from_snapshot:
                continue
            key = self._entry_key(f)
            loaded = self._entries.get(shown)
            if loaded is not None and loaded[0] == key and (loaded[1]["world"] == self.world
                                                            or self._verified.get(shown) == (key, self.world)):
                kept[shown] = (key, loaded[1]["run"], bool(loaded[1].get("unreadable")))
            elif getattr(one, "entry_stored", False):
                kept[shown] = (key, one, False)
        kept.update(self._unreadable_saved)  # files read as errors (no run of theirs is in ``runs``)
        if kept.keys() != self._snapshot.keys() or any(kept[k] is not self._snapshot[k] for k in kept):
            self.store.save_file(self.store.base / _SNAPSHOT, {"config": self.config, "world": self.world, "runs": kept})


def _store_summary(store: Store, key: str, summary) -> str:
    """Save a file's summary (None: it does not parse) under ``key``; the digest of its content."""
    stored = None if summary is None else dataclasses.replace(summary, text_hash=0)
    made = _summary_digest(stored)
    # the function bodies apart: only a propagation reads them, and they are most of a summary's
    # loading time (a run that reuses the last propagation never loads them)
    store.save("summaries", key, (_without_bodies(stored), made))
    if stored is not None:
        store.save("bodies", key, _bodies(stored))
    return made


class SummaryKeeper:
    """What a worker of ``fusionlint.project.ahead`` runs after each summary it makes: stores it as
    ``CacheSession._add`` would, if the bytes it read are those the scan digested (a file changed
    since must not be stored under the old content's key). Returns the summary's digest, or None
    when it stored nothing (the run then summarises the file itself)."""

    def __init__(self, store: Store, keys: dict[str, tuple[str, str]]) -> None:
        self.store = store
        self.keys = keys  # display path -> (the content digest scanned, the summary's key)

    def __call__(self, shown: str, data: bytes, summary) -> Optional[str]:
        expected = self.keys.get(shown)
        if expected is None or digest(data) != expected[0]:
            return None
        return _store_summary(self.store, expected[1], summary)


def _without_bodies(summary):
    if summary is None:
        return None
    from fusionlint.project.summary import NO_NAMES

    functions = {q: dataclasses.replace(fn, calls=(), returns=(), tensor_uses=NO_NAMES)
                 for q, fn in summary.functions.items()}
    return dataclasses.replace(summary, functions=functions)


def _bodies(summary) -> dict:
    return {q: (fn.calls, fn.returns, fn.tensor_uses) for q, fn in summary.functions.items()}


NO_ENTERED: frozenset[str] = frozenset()


def _is_facts_index(saved) -> bool:
    return isinstance(saved, dict) and isinstance(saved.get("entered"), dict) and isinstance(saved.get("probes"), dict)


def _is_facts(saved) -> bool:
    return isinstance(saved, dict) and isinstance(saved.get("facts"), dict) and isinstance(saved.get("probes"), dict)


def _summary_digest(summary) -> str:
    if summary is not None and (summary.text_hash or summary.units is not None or summary.outline is not None):
        # the per-process str hash is not content, and an editor's summary (``keep_units``: its
        # definitions' units, outline and shapes) says to the model what a run's summary of the same
        # text says: the language server's buffers then find the propagated facts a CLI run stored
        summary = dataclasses.replace(summary, text_hash=0, units=None, outline=None, shapes=None)
    return digest(pickle.dumps(summary, protocol=pickle.HIGHEST_PROTOCOL))


_FINGERPRINT: Optional[str] = None


def _code_fingerprint() -> str:
    """fusionlint's own code (the package and its rules, by size and mtime): an edited rule or a new
    version must not be served an older one's findings, even with the version number unchanged."""
    global _FINGERPRINT
    if _FINGERPRINT is None:
        import fusionlint.rules as rules_package

        seen = []
        # the package directory itself, not all of fusionlint.__path__: in a checkout that also
        # holds the repository root (for ``rules/``), and walking it would walk the whole checkout
        for top in [os.path.dirname(fusionlint.__file__), *rules_package.__path__]:
            for dirpath, dirnames, names in os.walk(top):
                dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
                for name in sorted(names):
                    if name.endswith(".py"):
                        full = os.path.join(dirpath, name)
                        try:
                            st = os.stat(full)
                        except OSError:
                            continue
                        seen.append((full, st.st_size, st.st_mtime_ns))
        _FINGERPRINT = digest(repr(sorted(set(seen))).encode("utf-8", "surrogatepass"))
    return _FINGERPRINT
