"""Time from ``textDocument/didChange`` to ``publishDiagnostics`` in `fusionlint lsp` on a 2,000-line file.

    python bench/lsp_latency.py                 # prints the table; --out FILE also writes it

The real server runs in a subprocess over stdio, driven by pygls' own client. The file is a set of
nn.Module classes with a graph break every few methods. After the first lint (which also indexes
the workspace), each round edits one line in the middle of the file and waits for the diagnostics
of that version. It is run twice: with the default 300 ms debounce (what a user sees after the last
keystroke) and with ``debounceMs: 0`` (the server's own work: apply the change, lint, publish).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

from lsprotocol import types
from pygls.lsp.client import LanguageClient

ROUNDS = 30
TARGET_LINES = 2000

BLOCK = '''

class Block{n}(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.norm = nn.LayerNorm(dim)

    def forward(self, x):
        h = self.norm(self.proj(x))
        h = torch.relu(h) * 0.5 + x
        scale = h.mean().item()
        y = h.permute(0, 2, 1).view(h.shape[0], -1)
        return self._mix(h, scale) + y.sum()

    def _mix(self, h, scale):
        out = h * scale
        out = out + torch.tanh(h)
        return out - h.mean(dim=-1, keepdim=True)
'''


def make_source() -> str:
    head = "import torch\nfrom torch import nn\n"
    parts, n = [head], 0
    while sum(p.count("\n") for p in parts) < TARGET_LINES:
        parts.append(BLOCK.format(n=n))
        n += 1
    return "".join(parts)


async def measure(debounce_ms: int | None, source: str, root: Path) -> tuple[float, list[float], int]:
    client = LanguageClient("lsp-latency", "1")
    published: asyncio.Queue = asyncio.Queue()

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def on_publish(params: types.PublishDiagnosticsParams) -> None:
        published.put_nowait((time.perf_counter(), params))

    await client.start_io(sys.executable, "-m", "fusionlint.cli", "lsp")
    options = {} if debounce_ms is None else {"debounceMs": debounce_ms}
    await client.initialize_async(
        types.InitializeParams(
            capabilities=types.ClientCapabilities(),
            root_uri=root.as_uri(),
            initialization_options=options,
        )
    )
    client.initialized(types.InitializedParams())
    uri = (root / "model.py").as_uri()

    async def wait_for(version: int) -> tuple[float, int]:
        while True:
            at, params = await asyncio.wait_for(published.get(), 60)
            if params.uri == uri and params.version == version:
                return at, len(params.diagnostics)

    sent = time.perf_counter()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(types.TextDocumentItem(uri=uri, language_id="python", version=1, text=source))
    )
    at, count = await wait_for(1)
    first = at - sent
    lines = source.split("\n")
    middle = len(lines) // 2
    times = []
    for version in range(2, ROUNDS + 2):
        old = lines[middle]
        new = old + " " if version % 2 else old.rstrip(" ")
        change = types.TextDocumentContentChangePartial(
            range=types.Range(types.Position(middle, 0), types.Position(middle, len(old))), text=new
        )
        lines[middle] = new
        sent = time.perf_counter()
        client.text_document_did_change(
            types.DidChangeTextDocumentParams(types.VersionedTextDocumentIdentifier(uri=uri, version=version), [change])
        )
        at, count = await wait_for(version)
        times.append(at - sent)
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    return first, times, count


def _in_process(source: str) -> list[str]:
    """The same lint without the server (``fusionlint.api.Linter``), to show where the time goes:
    whole-file lints without the memo (wall), and the server's memo after a one-line edit in CPU
    time (``time.process_time``), which other processes on a loaded machine inflate less."""
    from fusionlint.api import Linter
    from fusionlint.config import Settings

    linter = Linter(Settings(root=Path(tempfile.gettempdir())))
    times = []
    for _ in range(5):
        start = time.perf_counter()
        found = linter.lint(source, "model.py").findings
        times.append(time.perf_counter() - start)
    times.sort()
    rows = [f"| Linter.lint in process (no LSP, no memo), wall | - | {_ms(statistics.median(times))} | - | {_ms(times[-1])} | {len(found)} |"]
    memo = Linter(Settings(root=Path(tempfile.gettempdir())), memo=True)
    start = time.process_time()
    memo.lint(source, "model.py")
    first = time.process_time() - start
    lines = source.split("\n")
    middle = len(lines) // 2
    cpu = []
    for round_ in range(ROUNDS):
        lines[middle] = lines[middle] + " " if round_ % 2 == 0 else lines[middle].rstrip(" ")
        start = time.process_time()
        found = memo.lint("\n".join(lines), "model.py").findings
        cpu.append(time.process_time() - start)
    cpu.sort()
    rows.append(
        f"| Linter(memo=True).lint in process, CPU | {_ms(first)} | {_ms(statistics.median(cpu))} | "
        f"{_ms(cpu[int(len(cpu) * 0.9) - 1])} | {_ms(cpu[-1])} | {len(found)} |"
    )
    return rows


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms"


async def main_async() -> str:
    source = make_source()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "pyproject.toml").write_text("[tool.fusionlint]\n")
        (root / "model.py").write_text(source)
        rows = []
        for label, debounce in (("default debounce (300 ms)", None), ("debounceMs: 0", 0)):
            first, times, count = await measure(debounce, source, root)
            times.sort()
            p90 = times[int(len(times) * 0.9) - 1]
            rows.append(
                f"| {label} | {_ms(first)} | {_ms(statistics.median(times))} | {_ms(p90)} | {_ms(times[-1])} | {count} |"
            )
    rows.extend(_in_process(source))
    head = (
        f"fusionlint lsp: didChange -> publishDiagnostics, {source.count(chr(10))}-line file, {ROUNDS} edits\n"
        f"python {platform.python_version()} on {platform.machine()}, {platform.system()}, {os.cpu_count()} CPUs, "
        f"load average {os.getloadavg()[0]:.1f} at the end of the run\n\n"
        "| server | first lint (didOpen) | median | p90 | max | diagnostics |\n|---|---|---|---|---|---|\n"
    )
    return head + "\n".join(rows) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="also write the table to this file")
    args = parser.parse_args()
    text = asyncio.run(main_async())
    print(text, end="")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)


if __name__ == "__main__":
    main()
