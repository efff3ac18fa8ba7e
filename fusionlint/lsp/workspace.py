"""Per-project state of the language server: settings, the project index and a Linter.

A project is the directory of the ``pyproject.toml`` that configures a file (found as the CLI finds
it), else the workspace folder holding the file. Its index of cross-file facts is built once, from
the files on disk, the first time a file of it is linted; after that only the file that changed is
re-scanned (an open buffer's text, or a file changed on disk), never the whole project.

The configuration file is checked (one ``stat``) before each lint, so an edit to ``[tool.fusionlint]``
applies on the next lint even when the client sends no file-change notification.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from fusionlint.analysis.project import ProjectIndex
from fusionlint.project.model import Project as SemanticProject
from fusionlint.api import Linter
from fusionlint.config import ConfigError, Settings, find_pyproject, load_settings
from fusionlint.files import CurrentText, SourceError, discover, display_path, read_source


def _model_cache(settings: Settings, files: list[Path]):
    """The findings cache's session for a project model of ``files``, or None where it cannot be used."""
    from fusionlint import torch_target
    from fusionlint.cache.session import CacheSession

    try:
        cache = CacheSession(settings, torch_target.resolve(settings.target_torch))
        cache.scan([], [], others=files)
    except (OSError, ValueError):
        return None
    return cache


def _stamp(path: Optional[Path]) -> Optional[tuple[int, int]]:
    if path is None:
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size)


@dataclass
class Project:
    root: Path
    config_path: Optional[Path]
    overrides: dict
    index: ProjectIndex = field(default_factory=ProjectIndex)
    # kept across config reloads, like index; a changed buffer is re-summarised per changed definition
    model: SemanticProject = field(default_factory=lambda: SemanticProject(keep_units=True))
    linter: Optional[Linter] = None
    error: Optional[str] = None  # an invalid configuration: shown instead of findings
    indexed: bool = False
    _stamp: Optional[tuple[int, int]] = None

    def refresh(self) -> None:
        """(Re)load the settings when the config file changed since they were read."""
        stamp = _stamp(self.config_path)
        if self.linter is not None or self.error is not None:
            if stamp == self._stamp:
                return
        self._stamp = stamp
        try:
            settings = load_settings(self.config_path or self.root, config_file=self.config_path, overrides=self.overrides)
            if settings.config_path is None:
                settings.root = self.root  # no pyproject: the workspace folder, not the server's cwd
            self.linter = Linter(settings, self.index, self.model, memo=True)  # a keystroke re-lints one group
            self.error = None
        except ConfigError as exc:
            self.linter, self.error = None, str(exc)

    @property
    def settings(self) -> Optional[Settings]:
        return self.linter.settings if self.linter is not None else None

    def ensure_indexed(self, open_paths: dict[str, str]) -> None:
        """Index every Python file of the project once (open buffers win over the disk)."""
        if self.indexed or self.linter is None:
            return
        self.indexed = True
        settings = self.linter.settings
        files, _errors = discover(
            [str(settings.root)],
            root=settings.root,
            exclude=settings.exclude,
            extend_exclude=settings.extend_exclude,
            respect_gitignore=settings.respect_gitignore,
        )
        # The other files' name-index scans and summaries come from the findings cache the CLI keeps
        # (.fusionlint_cache/, keyed by content), and what is missing is stored there: the first lint
        # in transformers (2,912 files) summarised every file first, 48.7 CPU s before any diagnostic.
        cache = _model_cache(settings, files)
        if cache is not None:
            from fusionlint.cache.warm import fill_in_helper

            # no cache yet (the first start at this fusionlint version): a helper process summarises in
            # forked workers and stores into the cache, then the files come from there, unread
            if fill_in_helper(cache, settings, files):
                cache = _model_cache(settings, files)
        for path in files:
            shown = display_path(path, settings.root)
            text = open_paths.get(os.path.abspath(path))
            if text is None and cache is not None:
                if not cache.add_unread(self.model, self.index, shown, path, reread=CurrentText(path)):
                    try:
                        text = read_source(path)
                    except (SourceError, OSError):
                        continue  # a file that cannot be read adds no facts; linting it will say why
                    cache.add_to_index(self.index, shown, text, reread=CurrentText(path))
                    # (here, not in finish_model: the model's files in the order found, in every run,
                    # as the propagated facts' key and a module name's first file need)
                    cache.add_linted(self.model, self.index, shown, path, text)
                continue
            if text is None:
                try:
                    text = read_source(path)
                except (SourceError, OSError):
                    continue  # a file that cannot be read adds no facts; linting it will say why
            elif cache is not None and text == CurrentText(path)():
                # an open buffer as saved: its summary (and the digest the propagated facts are keyed
                # by, which a summary made here would get anew in every process) from the cache too
                cache.add_to_index(self.index, shown, text)
                cache.add_linted(self.model, self.index, shown, path, text)
                continue
            self.index.update_file(shown, text)
            self.model.add(shown, path, text)
        if cache is not None:
            cache.finish_model(self.model, self.index)
            cache.propagate(self.model)  # the propagated facts too: stored, or read back when they still hold
            cache.world = None  # the buffers may differ from the disk: no snapshot of findings
            cache.finish()

    def file_changed_on_disk(self, path: str) -> None:
        """A file was saved, created, changed or deleted outside the buffers: re-scan just it."""
        if not self.indexed or self.linter is None:
            return
        shown = display_path(Path(path), self.linter.settings.root)
        try:
            text = read_source(Path(path))
        except (SourceError, OSError):
            self.index.remove_file(shown)
            self.model.remove(shown)
            return
        self.index.update_file(shown, text)
        self.model.add(shown, Path(path), text)


class Projects:
    """All projects of the session, found from the files that get linted."""

    def __init__(self, folders: list[Path]) -> None:
        self.folders = sorted(folders, key=lambda p: len(str(p)), reverse=True)  # innermost first
        self.overrides: dict = {}
        self._by_key: dict[tuple, Project] = {}
        self._by_dir: dict[str, tuple] = {}  # directory -> project key (cleared when configs change)

    def for_path(self, path: Optional[str]) -> Project:
        directory = os.path.dirname(os.path.abspath(path)) if path else os.getcwd()
        key = self._by_dir.get(directory)
        if key is None:
            config = find_pyproject(Path(directory))
            root = config.parent if config is not None else self._folder_of(directory)
            key = (str(root), str(config) if config else None)
            self._by_dir[directory] = key
        project = self._by_key.get(key)
        if project is None:
            project = Project(Path(key[0]), Path(key[1]) if key[1] else None, dict(self.overrides))
            self._by_key[key] = project
        project.refresh()
        return project

    def _folder_of(self, directory: str) -> Path:
        for folder in self.folders:
            if directory == str(folder) or directory.startswith(str(folder).rstrip(os.sep) + os.sep):
                return folder
        return Path(directory)

    def config_files_changed(self) -> None:
        """A pyproject.toml appeared, changed or went away: find each file's config again."""
        self._by_dir.clear()
        for project in self._by_key.values():
            project._stamp = ("changed",)  # type: ignore[assignment]  # force a reload on next use

    def set_overrides(self, overrides: dict) -> None:
        self.overrides = overrides
        for project in self._by_key.values():
            project.overrides = dict(overrides)
            project._stamp = ("changed",)  # type: ignore[assignment]

    def all(self) -> list[Project]:
        return list(self._by_key.values())
