"""`--jobs N`: the static pass in worker processes gives exactly what one process gives, in the same order."""

from __future__ import annotations

import shutil
from pathlib import Path

from fusionlint.config import load_settings
from fusionlint.runner import RunOptions, run

BAD = (
    "import torch\nfrom torch import nn\n\n\nclass M{n}(nn.Module):\n    def forward(self, x):\n"
    "        y = x.permute(0, 2, 1).view(-1)\n        return y * x.sum().item()\n"
)


def _project(root: Path, files: int = 40) -> Path:
    (root / "pyproject.toml").write_text("[tool.fusionlint]\n")
    pkg = root / "pkg"
    pkg.mkdir()
    for n in range(files):
        (pkg / f"m{n:02d}.py").write_text(BAD.format(n=n) if n % 3 else "def f(:\n" if n == 6 else "x = 1\n")
    return root


def _run(root: Path, jobs: int, **options):
    return run([str(root / "pkg")], load_settings(root), RunOptions(jobs=jobs, **options))


def _summary(outcome):
    r = outcome.result
    return (
        [(f.path, f.line, f.column, f.code, f.message, f.fix) for f in r.findings],
        [(e.path, e.message, e.line) for e in r.errors],
        r.files_found, r.files_checked, r.fixed, outcome.diffs,
    )


def test_two_workers_find_what_one_process_finds(tmp_path):
    root = _project(tmp_path)
    one, two = _summary(_run(root, 1)), _summary(_run(root, 2))
    assert one == two
    findings, errors = one[0], one[1]
    assert len(findings) == 2 * 26 and [e[0] for e in errors] == ["pkg/m06.py"]


def test_two_workers_fix_and_diff_like_one_process(tmp_path):
    (tmp_path / "a").mkdir()
    a = _project(tmp_path / "a")
    b = Path(shutil.copytree(a, tmp_path / "b"))  # an identical tree for the other run
    assert _summary(_run(a, 1, fix=True, diff=True)) == _summary(_run(b, 2, fix=True, diff=True))
    one, two = _run(a, 1, fix=True), _run(b, 2, fix=True)
    assert one.result.fixed == two.result.fixed == 26
    for path in sorted((a / "pkg").iterdir()):
        assert path.read_text() == (b / "pkg" / path.name).read_text()
    assert "reshape" in (a / "pkg" / "m01.py").read_text()


def test_two_jobs_lint_in_two_worker_processes(tmp_path, monkeypatch):
    import os

    from fusionlint import runner

    (tmp_path / "p").mkdir()
    root = _project(tmp_path / "p")
    log = tmp_path / "pids"
    check = runner._FileChecker.check

    def recording(self, *source):
        with open(log, "a") as fh:  # from the worker processes, so through a file
            fh.write(f"{os.getpid()}\n")
        return check(self, *source)

    monkeypatch.setattr(runner._FileChecker, "check", recording)
    _run(root, 2)
    pids = set(log.read_text().split())
    assert pids and str(os.getpid()) not in pids  # linted by workers (how many took a slice may vary)
