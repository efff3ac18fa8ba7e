"""``fusionlint lsp``: the language server (pygls 2 over stdio).

Diagnostics are published when a document opens, about 300 ms after the last change (on the unsaved
text), and when it is saved; closing clears them. Code actions offer each finding's fix, a fix-all
(``source.fixAll.fusionlint``, safe fixes only) and a ``# noqa`` suppression; hover shows the rule's
documentation. Every handler is guarded: an exception is logged to the client and that request
fails, the server keeps running. The server never imports torch or the user's code.
"""

from __future__ import annotations

import asyncio
import logging
import os
import traceback
from functools import wraps
from pathlib import Path
from typing import Any, Callable, Optional

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from fusionlint import __version__
from fusionlint.lsp import features
from fusionlint.lsp.documents import Document
from fusionlint.lsp.idle_gc import IdleCollector
from fusionlint.lsp.positions import UTF16
from fusionlint.lsp.workspace import Projects
from fusionlint.registry import all_rules
from fusionlint.rule import FileError, Finding

DEBOUNCE_SECONDS = 0.3
log = logging.getLogger("fusionlint.lsp")


class FusionlintServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("fusionlint", __version__)
        self.documents: dict[str, Document] = {}
        self.projects = Projects([])
        self.debounce = DEBOUNCE_SECONDS
        self.rules = all_rules()
        # uri -> (version, findings, error) of the last lint, for code actions and hover
        self.results: dict[str, tuple[Optional[int], list[Finding], Optional[FileError]]] = {}
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self.idle_gc = IdleCollector()  # started by start(): not in-process test servers

    # -- client facts ---------------------------------------------------------------------------
    @property
    def encoding(self) -> str:
        enc = self.workspace.position_encoding if self.protocol._workspace is not None else None
        return str(getattr(enc, "value", enc) or UTF16)

    @property
    def document_changes(self) -> bool:
        ws = self.client_capabilities.workspace
        edit = ws.workspace_edit if ws is not None else None
        return bool(edit is not None and edit.document_changes)

    def log(self, message: str, kind: types.MessageType = types.MessageType.Error) -> None:
        try:
            self.window_log_message(types.LogMessageParams(type=kind, message=message))
        except Exception:  # the transport is gone: nothing left to tell
            log.exception("cannot send a log message")

    # -- linting --------------------------------------------------------------------------------
    def lint(self, uri: str) -> None:
        doc = self.documents.get(uri)
        if doc is None:
            return
        project = self.projects.for_path(doc.path)
        encoding = self.encoding
        diagnostics: list[types.Diagnostic]
        if project.linter is None:
            self.results[uri] = (doc.version, [], None)
            diagnostics = [features.config_diagnostic(project.error or "invalid configuration")]
        else:
            project.ensure_indexed(self._open_texts())
            result = project.linter.lint(doc.text, doc.path)
            self.results[uri] = (doc.version, result.findings, result.error)
            settings = project.linter.settings
            diagnostics = [features.to_diagnostic(doc, f, encoding, self.rules.get(f.code), settings) for f in result.findings]
            if result.error is not None:
                diagnostics.append(features.error_diagnostic(doc, result.error, encoding))
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics, version=doc.version)
        )

    def lint_safely(self, uri: str) -> None:
        self._timers.pop(uri, None)
        try:
            self.lint(uri)
        except Exception:
            self.log(f"fusionlint: linting {uri} failed:\n{traceback.format_exc()}")
        self.idle_gc.work_done()

    def lint_later(self, uri: str) -> None:
        self.idle_gc.cancel()  # typing: no collection until it pauses
        old = self._timers.pop(uri, None)
        if old is not None:
            old.cancel()
        loop = asyncio.get_running_loop()
        self._timers[uri] = loop.call_later(self.debounce, self.lint_safely, uri)

    def lint_all_open(self) -> None:
        for uri in list(self.documents):
            self.lint_safely(uri)

    def current(self, uri: str) -> tuple[Optional[Document], list[Finding]]:
        """The document and the findings for its current text (lints now if the last lint is stale)."""
        doc = self.documents.get(uri)
        if doc is None:
            return None, []
        cached = self.results.get(uri)
        if cached is None or cached[0] != doc.version:
            self.lint(uri)
            cached = self.results.get(uri)
        return doc, list(cached[1]) if cached else []

    def _open_texts(self) -> dict[str, str]:
        return {os.path.abspath(d.path): d.text for d in self.documents.values() if d.path}

    # -- settings -------------------------------------------------------------------------------
    def apply_client_settings(self, options: Any) -> None:
        """``select``/``extendSelect``/``ignore`` from initializationOptions or didChangeConfiguration."""
        if not isinstance(options, dict):
            return
        if isinstance(options.get("fusionlint"), dict):
            options = options["fusionlint"]
        overrides = {}
        for key, name in (("select", "select"), ("extendSelect", "extend_select"), ("extend_select", "extend_select"), ("ignore", "ignore")):
            value = options.get(key)
            if isinstance(value, list) and all(isinstance(v, str) for v in value):
                overrides[name] = value
        debounce = options.get("debounceMs")
        if isinstance(debounce, (int, float)) and not isinstance(debounce, bool) and 0 <= debounce <= 10_000:
            self.debounce = debounce / 1000
        self.projects.set_overrides(overrides)


server = FusionlintServer()


def guarded(default: Any = None) -> Callable:
    """Run a handler so that its exception is logged to the client instead of reaching pygls."""

    def decorate(fn: Callable) -> Callable:
        @wraps(fn)
        def wrapper(ls: FusionlintServer, params):
            try:
                return fn(ls, params)
            except Exception:
                ls.log(f"fusionlint: {fn.__name__} failed:\n{traceback.format_exc()}")
                return default

        return wrapper

    return decorate


def _path(uri: str) -> Optional[str]:
    if not uri.startswith("file:"):
        return None
    return to_fs_path(uri)


def _is_config(uri: str) -> bool:
    return uri.endswith("/pyproject.toml")


@server.feature(types.INITIALIZE)
@guarded()
def initialize(ls: FusionlintServer, params: types.InitializeParams) -> None:
    folders = [Path(p) for f in params.workspace_folders or [] if (p := _path(f.uri))]
    if not folders and params.root_uri and (root := _path(params.root_uri)):
        folders = [Path(root)]
    ls.projects = Projects(folders)
    ls.apply_client_settings(params.initialization_options)


@server.feature(types.INITIALIZED)
async def initialized(ls: FusionlintServer, params: types.InitializedParams) -> None:
    """Ask for pyproject.toml and *.py change notifications when the client can register them."""
    ws = ls.client_capabilities.workspace
    watched = ws.did_change_watched_files if ws is not None else None
    if watched is None or not watched.dynamic_registration:
        return  # the config is still re-read when its mtime changes (checked before each lint)
    options = types.DidChangeWatchedFilesRegistrationOptions(
        watchers=[types.FileSystemWatcher(glob_pattern="**/pyproject.toml"), types.FileSystemWatcher(glob_pattern="**/*.py")]
    )
    try:
        await ls.client_register_capability_async(
            types.RegistrationParams(
                registrations=[
                    types.Registration(id="fusionlint-watch", method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES, register_options=options)
                ]
            )
        )
    except Exception:
        ls.log(f"fusionlint: cannot register file watchers:\n{traceback.format_exc()}", types.MessageType.Warning)


@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
@guarded()
def did_open(ls: FusionlintServer, params: types.DidOpenTextDocumentParams) -> None:
    item = params.text_document
    if _is_config(item.uri) or not (item.language_id == "python" or item.uri.endswith((".py", ".pyi"))):
        return
    ls.documents[item.uri] = Document(item.uri, _path(item.uri), item.text, item.version)
    ls.lint_safely(item.uri)


@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
@guarded()
def did_change(ls: FusionlintServer, params: types.DidChangeTextDocumentParams) -> None:
    doc = ls.documents.get(params.text_document.uri)
    if doc is None:
        return
    doc.apply(params.content_changes, params.text_document.version, ls.encoding)
    ls.lint_later(doc.uri)


@server.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=False))
@guarded()
def did_save(ls: FusionlintServer, params: types.DidSaveTextDocumentParams) -> None:
    uri = params.text_document.uri
    if _is_config(uri):
        ls.projects.config_files_changed()
        ls.lint_all_open()
        return
    if uri in ls.documents:
        timer = ls._timers.pop(uri, None)
        if timer is not None:
            timer.cancel()
        ls.lint_all_open()  # this file's cross-file facts may change what other open files report


@server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
@guarded()
def did_close(ls: FusionlintServer, params: types.DidCloseTextDocumentParams) -> None:
    uri = params.text_document.uri
    timer = ls._timers.pop(uri, None)
    if timer is not None:
        timer.cancel()
    doc = ls.documents.pop(uri, None)
    ls.results.pop(uri, None)
    if doc is not None and doc.path:
        ls.projects.for_path(doc.path).file_changed_on_disk(doc.path)  # back to what is on disk
    ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))


@server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
@guarded()
def did_change_watched_files(ls: FusionlintServer, params: types.DidChangeWatchedFilesParams) -> None:
    open_uris = set(ls.documents)
    for change in params.changes:
        if _is_config(change.uri):
            ls.projects.config_files_changed()
        elif change.uri not in open_uris and (path := _path(change.uri)) and path.endswith((".py", ".pyi")):
            ls.projects.for_path(path).file_changed_on_disk(path)
    ls.lint_all_open()


@server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
@guarded()
def did_change_configuration(ls: FusionlintServer, params: types.DidChangeConfigurationParams) -> None:
    ls.apply_client_settings(params.settings)
    ls.lint_all_open()


@server.feature(
    types.TEXT_DOCUMENT_CODE_ACTION,
    types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix, features.FIX_ALL_KIND]),
)
@guarded(default=[])
def code_action(ls: FusionlintServer, params: types.CodeActionParams) -> list[types.CodeAction]:
    doc, findings = ls.current(params.text_document.uri)
    if doc is None:
        return []
    encoding = ls.encoding
    rng = params.range
    start = doc.lines.offset(rng.start.line, rng.start.character, encoding)
    end = doc.lines.offset(rng.end.line, rng.end.character, encoding)
    here = features.overlapping(doc, findings, start, end)
    project = ls.projects.for_path(doc.path)
    settings = project.linter.settings if project.linter is not None else None
    diagnostics = {id(f): features.to_diagnostic(doc, f, encoding, ls.rules.get(f.code), settings) for f in here}
    only = params.context.only
    actions = features.quick_fixes(doc, here, diagnostics, encoding, ls.document_changes, only)
    if project.linter is not None and features.matches_only(features.FIX_ALL_KIND, only):
        if any(f.fix is not None and f.fix.applicability.value == "safe" for f in findings):
            fixed = project.linter.fix(doc.text, doc.path, unsafe=False)
            action = features.fix_all_action(doc, fixed.text, encoding, ls.document_changes)
            if action is not None:
                actions.append(action)
    return actions


@server.feature(types.TEXT_DOCUMENT_HOVER)
@guarded()
def hover(ls: FusionlintServer, params: types.HoverParams) -> Optional[types.Hover]:
    doc, findings = ls.current(params.text_document.uri)
    if doc is None:
        return None
    at = doc.lines.offset(params.position.line, params.position.character, ls.encoding)
    here = features.overlapping(doc, findings, at, at)
    rules = [ls.rules[c] for c in dict.fromkeys(f.code for f in here) if c in ls.rules]
    if not rules:
        return None
    return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=features.hover_markdown(rules)))


def start() -> None:
    server.idle_gc.start()
    server.start_io()
