"""`fusionlint lsp`, driven over stdio by pytest-lsp as VS Code and as Neovim 0.11 would drive it.

The real server runs in a subprocess, one per client profile for the tests of this module (a server
takes 1.7 CPU s to start on the 2-core machine, most of it importing lsprotocol and libcst), as one
editor session serves many files: each test works in a folder of its own with its own
``pyproject.toml`` (a project of its own), and closes its documents and undoes its client settings
when it ends. A fake ``torch`` package on the server's PYTHONPATH writes a marker file if anything
imports it: the server must never need torch.
"""

from __future__ import annotations

import asyncio
import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest
import pytest_asyncio
import pytest_lsp
from click.testing import CliRunner
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

PUBLISH = types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS
PROFILES = ["visual_studio_code", "neovim@v0.11.0"]

_FAKE = Path(tempfile.mkdtemp(prefix="fusionlint-fake-torch-"))
atexit.register(shutil.rmtree, _FAKE, ignore_errors=True)  # made at import (the servers' env names it)
(_FAKE / "torch").mkdir()
(_FAKE / "torch" / "__init__.py").write_text(
    f"open({str(_FAKE / 'IMPORTED')!r}, 'w').close()\nraise ImportError('the language server imported torch')\n"
)
SERVER_ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(_FAKE), *sys.path])}
SERVER = [sys.executable, "-m", "fusionlint.cli", "lsp"]

VIEW = (
    "import torch\nfrom torch import nn\n\n\n"
    "class Model(nn.Module):\n"
    "    def forward(self, x):\n"
    "        return x.permute(0, 2, 1).view(x.shape[0], -1)\n"
)
VIEW_LINE = 6  # 0-based line of the FL301 finding
VIEW_START = VIEW.splitlines()[VIEW_LINE].index("x.permute")


def _units(text: str, encoding: str) -> int:
    """Length of ``text`` in the client's position units, computed independently of the server."""
    if encoding == "utf-8":
        return len(text.encode("utf-8"))
    if encoding == "utf-32":
        return len(text)
    return len(text.encode("utf-16-le")) // 2


def _offset(text: str, pos: types.Position, encoding: str) -> int:
    lines = text.split("\n")
    before = sum(len(line) + 1 for line in lines[: pos.line])
    line = lines[pos.line] if pos.line < len(lines) else ""
    count = 0
    for i, ch in enumerate(line):
        if count >= pos.character:
            return before + i
        count += _units(ch, encoding)
    return before + len(line)


def apply_workspace_edit(text: str, uri: str, edit: types.WorkspaceEdit, encoding: str) -> str:
    edits: list[types.TextEdit] = []
    if edit.document_changes:
        for change in edit.document_changes:
            assert change.text_document.uri == uri
            edits.extend(change.edits)
    else:
        edits.extend(edit.changes[uri])
    spans = sorted(((_offset(text, e.range.start, encoding), _offset(text, e.range.end, encoding), e.new_text) for e in edits), reverse=True)
    for start, end, new in spans:
        text = text[:start] + new + text[end:]
    return text


class Session:
    """A client, its workspace folder and its negotiated encoding, with the few moves the tests make."""

    def __init__(self, client: LanguageClient, root: Path, encoding: str, profile: str) -> None:
        self.client, self.root, self.encoding, self.profile = client, root, encoding, profile
        self.versions: dict[str, int] = {}
        self.texts: dict[str, str] = {}
        self.opened: set[str] = set()  # closed when the test ends
        self.settings_changed = False

    def uri(self, name: str) -> str:
        return (self.root / name).as_uri()

    async def _publish_after(self, send) -> types.PublishDiagnosticsParams:
        future = asyncio.wrap_future(self.client.protocol.wait_for_notification(PUBLISH))
        send()
        return await asyncio.wait_for(future, 20)

    async def open(self, name: str, text: str) -> types.PublishDiagnosticsParams:
        uri = self.uri(name)
        self.versions[uri], self.texts[uri] = 1, text
        self.opened.add(uri)
        item = types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)
        return await self._publish_after(
            lambda: self.client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=item))
        )

    async def change(self, name: str, text: str) -> types.PublishDiagnosticsParams:
        uri = self.uri(name)
        self.versions[uri] += 1
        self.texts[uri] = text
        params = types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=self.versions[uri]),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
        )
        return await self._publish_after(lambda: self.client.text_document_did_change(params))

    async def actions(self, name: str, rng: types.Range, only=None) -> list[types.CodeAction]:
        params = types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=self.uri(name)),
            range=rng,
            context=types.CodeActionContext(diagnostics=[], only=only),
        )
        return await self.client.text_document_code_action_async(params) or []

    async def apply(self, name: str, action: types.CodeAction) -> types.PublishDiagnosticsParams:
        uri = self.uri(name)
        return await self.change(name, apply_workspace_edit(self.texts[uri], uri, action.edit, self.encoding))


def _accept_registrations(client: LanguageClient) -> list:
    """The test client answers client/registerCapability as an editor does, and remembers it."""
    seen: list = []

    @client.feature(types.CLIENT_REGISTER_CAPABILITY)
    def register(params: types.RegistrationParams) -> None:
        seen.extend(r.method for r in params.registrations)

    return seen


@pytest_lsp.fixture(scope="module", params=PROFILES, config=ClientServerConfig(server_command=SERVER, server_env=SERVER_ENV))
async def client(request, lsp_client: LanguageClient, tmp_path_factory):
    workspace = tmp_path_factory.mktemp("lsp-workspace")
    (workspace / "pyproject.toml").write_text("[tool.fusionlint]\n")
    lsp_client.registered = _accept_registrations(lsp_client)
    params = types.InitializeParams(
        capabilities=client_capabilities(request.param),
        root_uri=workspace.as_uri(),
        workspace_folders=[types.WorkspaceFolder(uri=workspace.as_uri(), name="w")],
    )
    result = await lsp_client.initialize_session(params)
    lsp_client.negotiated = str(result.capabilities.position_encoding or "utf-16")
    lsp_client.profile = request.param
    lsp_client.workspace = workspace
    yield
    await lsp_client.shutdown_session()
    assert not (_FAKE / "IMPORTED").exists(), "the language server imported torch"


@pytest_asyncio.fixture(loop_scope="module")
async def session(client: LanguageClient, request):
    root = client.workspace / request.node.name.split("[")[0]
    root.mkdir()
    (root / "pyproject.toml").write_text("[tool.fusionlint]\n")
    session = Session(client, root, client.negotiated, client.profile)
    yield session
    # what this test left in the shared server: its open documents and its client settings
    if session.settings_changed:
        await session._publish_after(lambda: client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings={"fusionlint": {}})))
    for uri in list(session.opened):
        close = types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
        await session._publish_after(lambda: client.text_document_did_close(close))


def _only(diags, code):
    return [d for d in diags if d.code == code]


@pytest.mark.asyncio(loop_scope="module")
async def test_open_reports_the_break_at_its_range(session):
    published = await session.open("m.py", VIEW)
    (diag,) = _only(published.diagnostics, "FL301")
    line = VIEW.splitlines()[VIEW_LINE]
    assert diag.range.start == types.Position(VIEW_LINE, VIEW_START)
    assert diag.range.end == types.Position(VIEW_LINE, len(line))
    assert diag.source == "fusionlint" and diag.severity == types.DiagnosticSeverity.Error
    assert diag.code_description is None  # no docs URL configured: no link to a page that may not exist
    assert [r.message for r in diag.related_information] == ["compiled because torch.compile traces `Model.forward`"]
    assert diag.related_information[0].location.range.start.line == 5  # the `def forward` line
    assert published.version == 1


@pytest.mark.asyncio(loop_scope="module")
async def test_quick_fix_applied_leaves_no_diagnostics(session):
    published = await session.open("m.py", VIEW)
    (diag,) = _only(published.diagnostics, "FL301")
    actions = await session.actions("m.py", diag.range)
    fixes = [a for a in actions if a.kind == types.CodeActionKind.QuickFix and "reshape" in a.title]
    assert len(fixes) == 1 and fixes[0].is_preferred
    uses_versions = session.profile.startswith("visual_studio_code")
    assert (fixes[0].edit.document_changes is not None) == uses_versions  # Neovim 0.11 lacks documentChanges
    if uses_versions:
        assert fixes[0].edit.document_changes[0].text_document.version == 1
    after = await session.apply("m.py", fixes[0])
    assert list(after.diagnostics) == []
    assert ".reshape(x.shape[0], -1)" in session.texts[session.uri("m.py")]


@pytest.mark.asyncio(loop_scope="module")
async def test_positions_after_non_ascii_text_and_an_emoji(session):
    prefix = '        note = "é 😀"; y = '
    text = VIEW.replace("        return x.permute", prefix + "x.permute").replace("-1)\n", "-1)\n        return y\n")
    published = await session.open("e.py", text)
    (diag,) = _only(published.diagnostics, "FL301")
    line = text.splitlines()[VIEW_LINE]
    assert diag.range.start.character == _units(prefix, session.encoding)
    assert diag.range.end.character == _units(line, session.encoding)
    if session.profile.startswith("neovim"):
        assert session.encoding == "utf-8"  # Neovim offers utf-8 first; VS Code speaks utf-16
    # and back: a range in client units must select the same code
    (fix,) = [a for a in await session.actions("e.py", diag.range) if "reshape" in a.title]
    after = await session.apply("e.py", fix)
    assert list(after.diagnostics) == []
    assert prefix + "x.permute(0, 2, 1).reshape(x.shape[0], -1)" in session.texts[session.uri("e.py")]


@pytest.mark.asyncio(loop_scope="module")
async def test_syntax_errors_empty_files_and_surrogates_do_not_stop_the_server(session):
    broken = await session.open("b.py", "def f(:\n    pass\n")
    (diag,) = broken.diagnostics
    assert diag.code == "FL000" and "syntax error" in diag.message and diag.range.start.line == 0
    assert list((await session.open("empty.py", "")).diagnostics) == []
    odd = await session.open("s.py", 'x = "\udcff"\n' + VIEW)
    assert [d.code for d in odd.diagnostics] == ["FL000"]
    fixed = await session.change("b.py", VIEW)  # the same server, still answering
    assert [d.code for d in fixed.diagnostics] == ["FL301"]


@pytest.mark.asyncio(loop_scope="module")
async def test_config_change_is_picked_up_without_restart(session):
    assert _only((await session.open("m.py", VIEW)).diagnostics, "FL301")
    watches = types.WORKSPACE_DID_CHANGE_WATCHED_FILES in session.client.registered
    assert watches == session.profile.startswith("visual_studio_code")  # only VS Code offers dynamic registration
    (session.root / "pyproject.toml").write_text('[tool.fusionlint]\nignore = ["FL301"]\n')
    params = types.DidChangeWatchedFilesParams(
        changes=[types.FileEvent(uri=session.uri("pyproject.toml"), type=types.FileChangeType.Changed)]
    )
    published = await session._publish_after(lambda: session.client.workspace_did_change_watched_files(params))
    assert list(published.diagnostics) == []
    # without any notification (a client that cannot watch files): the next lint re-reads it
    (session.root / "pyproject.toml").write_text("[tool.fusionlint]\n")
    assert _only((await session.change("m.py", VIEW + "\n")).diagnostics, "FL301")
    # an invalid config is shown on the file instead of silently linting with defaults
    (session.root / "pyproject.toml").write_text('[tool.fusionlint]\nselect = ["NOPE"]\n')
    (diag,) = (await session.change("m.py", VIEW)).diagnostics
    assert diag.code == "FL000" and "select" in diag.message


@pytest.mark.asyncio(loop_scope="module")
async def test_client_settings_override_select_and_ignore(session):
    assert _only((await session.open("m.py", VIEW)).diagnostics, "FL301")
    params = types.DidChangeConfigurationParams(settings={"fusionlint": {"ignore": ["FL3"]}})
    session.settings_changed = True
    published = await session._publish_after(lambda: session.client.workspace_did_change_configuration(params))
    assert list(published.diagnostics) == []


@pytest.mark.asyncio(loop_scope="module")
async def test_suppress_merges_into_an_existing_noqa(session):
    text = VIEW.replace("-1)\n", "-1)  # noqa: FL999\n")
    published = await session.open("m.py", text)
    (diag,) = _only(published.diagnostics, "FL301")
    (suppress,) = [a for a in await session.actions("m.py", diag.range) if a.title == "Suppress FL301 on this line"]
    after = await session.apply("m.py", suppress)
    assert list(after.diagnostics) == []
    assert "-1)  # noqa: FL999, FL301\n" in session.texts[session.uri("m.py")]


@pytest.mark.asyncio(loop_scope="module")
async def test_fix_all_hover_and_close(session):
    text = VIEW + "\n\nclass Other(nn.Module):\n    def forward(self, x):\n        return x.permute(1, 0).view(-1)\n"
    published = await session.open("m.py", text)
    assert len(_only(published.diagnostics, "FL301")) == 2
    start = types.Position(0, 0)
    (fix_all,) = await session.actions("m.py", types.Range(start, start), only=[types.CodeActionKind.SourceFixAll])
    assert fix_all.kind == "source.fixAll.fusionlint"
    assert list((await session.apply("m.py", fix_all)).diagnostics) == []
    await session.change("m.py", VIEW)
    hover = await session.client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=session.uri("m.py")),
            position=types.Position(VIEW_LINE, VIEW_START + 3),
        )
    )
    assert hover.contents.kind == types.MarkupKind.Markdown and "FL301" in hover.contents.value
    close = types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=session.uri("m.py")))
    closed = await session._publish_after(lambda: session.client.text_document_did_close(close))
    session.opened.discard(session.uri("m.py"))
    assert list(closed.diagnostics) == []


# A server whose hover handler raises: the request fails, the server lives on.
CRASHING = [
    sys.executable,
    "-c",
    "import fusionlint.lsp.features as f\n"
    "def boom(rules): raise RuntimeError('boom')\n"
    "f.hover_markdown = boom\n"
    "from fusionlint.lsp import main; raise SystemExit(main())\n",
]


@pytest_lsp.fixture(config=ClientServerConfig(server_command=CRASHING, server_env=SERVER_ENV))
async def crashing_client(lsp_client: LanguageClient, tmp_path: Path):
    (tmp_path / "pyproject.toml").write_text("[tool.fusionlint]\n")
    _accept_registrations(lsp_client)
    await lsp_client.initialize_session(
        types.InitializeParams(capabilities=client_capabilities("visual_studio_code"), root_uri=tmp_path.as_uri())
    )
    yield
    await lsp_client.shutdown_session()


@pytest.fixture
def crashing(crashing_client: LanguageClient, tmp_path: Path) -> Session:
    return Session(crashing_client, tmp_path, "utf-16", "visual_studio_code")


@pytest.mark.asyncio
async def test_a_failing_request_does_not_kill_the_server(crashing):
    await crashing.open("m.py", VIEW)
    hover = await crashing.client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=crashing.uri("m.py")),
            position=types.Position(VIEW_LINE, VIEW_START + 3),
        )
    )
    assert hover is None
    assert any("boom" in m.message for m in crashing.client.log_messages)
    assert _only((await crashing.change("m.py", VIEW + "\n")).diagnostics, "FL301")


def test_lsp_without_the_extra_exits_2_with_an_install_hint(monkeypatch):
    import fusionlint.lsp as lsp
    from fusionlint.cli import main

    monkeypatch.setattr(lsp, "missing_dependencies", lambda: ["pygls"])
    result = CliRunner().invoke(main, ["lsp"])
    assert result.exit_code == 2
    assert 'pip install "fusionlint[lsp]"' in result.output
