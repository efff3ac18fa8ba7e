"""The pre-commit hooks in .pre-commit-hooks.yaml, end to end with the real `pre-commit`.

`pre-commit try-repo` installs this repository into a fresh virtualenv the way users get it,
runs the hook on a throwaway git repository and reports. How the test stays offline and honest:

* try-repo needs a git repository at a commit, and only sees committed (or, for a dirty tree,
  tracked) files. To test the working tree as it is, including files not committed yet, the
  test copies the tracked and untracked-but-not-ignored files into a temporary git repository
  and commits them there. The project's own git state is never touched.
* pre-commit creates the hook's virtualenv with `virtualenv` and runs `pip install .` in it.
  By default the test makes that install offline: `VIRTUALENV_SYSTEM_SITE_PACKAGES=1` lets the
  venv see the dependencies already installed for the test run, `PIP_NO_INDEX=1` forbids
  downloads and `PIP_NO_BUILD_ISOLATION=0` (pip reads it inverted) builds with the setuptools
  already there. fusionlint
  itself is still built from the snapshot and installed into the hook's own venv (checked
  below). When the tests run inside a venv (CI does), virtualenv's "system" packages are the
  base interpreter's, so the venv's site-packages are passed on through PYTHONPATH instead.
  Set `FUSIONLINT_PRECOMMIT_ISOLATED=1` to let pip resolve the dependencies from the
  package index instead, exactly as a user's first run does (needs PyPI).
* PRE_COMMIT_HOME points into the test's temporary directory. try-repo installs the hook into
  a temporary store of its own on every call, so only the first step uses it; the fix and the
  re-check run from a .pre-commit-config.yaml (one install, kept under PRE_COMMIT_HOME, which
  the test then inspects).

Measured on the shared 2-core development machine (two hook installs): 6-18 s depending on
the load, 7-10 s from a plain venv like CI's.
"""

from __future__ import annotations

import os
import shutil
import site
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
HOOKS_FILE = REPO / ".pre-commit-hooks.yaml"

BAD_MODEL = """\
import torch
from torch import nn


class Model(nn.Module):
    def forward(self, x):
        b = x.shape[0]
        return x.permute(0, 2, 1).view(b, -1) * 2
"""
FIXED_LINE = "return x.permute(0, 2, 1).reshape(b, -1) * 2"


# --------------------------------------------------------------------------- the manifest


def hooks() -> dict[str, dict]:
    return {h["id"]: h for h in yaml.safe_load(HOOKS_FILE.read_text(encoding="utf-8"))}


def test_manifest_is_valid_for_pre_commit():
    from pre_commit.clientlib import load_manifest

    loaded = {h["id"]: h for h in load_manifest(str(HOOKS_FILE))}
    assert set(loaded) == {"fusionlint", "fusionlint-fix"}


def test_hook_definitions():
    defined = hooks()
    assert defined["fusionlint"]["entry"] == "fusionlint check"
    assert defined["fusionlint-fix"]["entry"] == "fusionlint check --fix"
    for hook in defined.values():
        assert hook["language"] == "python"
        assert hook["types_or"] == ["python", "pyi"]
        assert hook["require_serial"] is True  # one project index per run
        major, minor, *_ = (int(p) for p in hook["minimum_pre_commit_version"].split("."))
        assert (major, minor) >= (2, 9)  # types_or appeared in pre-commit 2.9.0
        assert "additional_dependencies" not in hook


def test_hook_environment_does_not_pull_in_torch():
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert not [d for d in project["dependencies"] if d.lower().startswith("torch")]
    assert any(d.startswith("torch") for d in project["optional-dependencies"]["confirm"])


# --------------------------------------------------------------------------- end to end


def git(*args: str, cwd: Path) -> str:
    proc = subprocess.run(
        ["git", "-c", "user.name=fusionlint-test", "-c", "user.email=test@fusionlint.invalid",
         "-c", "commit.gpgsign=false", "-c", "init.defaultBranch=main", *args],
        cwd=cwd, capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, f"git {' '.join(args)} failed:\n{proc.stdout}{proc.stderr}"
    return proc.stdout


def snapshot_working_tree(dest: Path) -> Path:
    """Tracked + untracked-but-not-ignored files of this repo, committed in a new repo at dest."""
    listing = git("ls-files", "-z", "--cached", "--others", "--exclude-standard", cwd=REPO)
    dest.mkdir()
    for rel in filter(None, listing.split("\0")):
        src = REPO / rel
        if not src.is_file():  # deleted but still in the index
            continue
        if rel.split("/", 1)[0] == "node_modules":  # a local npm install (SARIF multitool)
            continue
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, target)
    git("init", "-q", cwd=dest)
    git("add", "-A", cwd=dest)
    git("commit", "-q", "-m", "snapshot of the fusionlint working tree", cwd=dest)
    return dest


def pre_commit_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PRE_COMMIT", "VIRTUALENV_"))}
    env["PRE_COMMIT_HOME"] = str(home)
    env["PRE_COMMIT_COLOR"] = "never"
    env.pop("PIP_REQUIRE_VIRTUALENV", None)
    if os.environ.get("FUSIONLINT_PRECOMMIT_ISOLATED") != "1":
        env["PIP_NO_INDEX"] = "1"
        # pip reads the environment form of a --no-* flag inverted: "0" *disables* isolation.
        env["PIP_NO_BUILD_ISOLATION"] = "0"
        env["VIRTUALENV_SYSTEM_SITE_PACKAGES"] = "1"
        if sys.prefix != sys.base_prefix:
            # Running inside a venv (as CI does): virtualenv's "system" site-packages are the
            # base interpreter's, which lack our dependencies. Expose this venv's instead.
            paths = site.getsitepackages() + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
            env["PYTHONPATH"] = os.pathsep.join(paths)
    return env


def try_repo(snapshot: Path, hook: str, target: Path, env: dict[str, str]):
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", "try-repo", str(snapshot), hook, "--all-files",
         "--verbose"],
        cwd=target, env=env, capture_output=True, text=True, timeout=900,
    )


def write_config(snapshot: Path, path: Path) -> Path:
    """A .pre-commit-config.yaml using both hooks of the snapshot, as a user would write it."""
    rev = git("rev-parse", "HEAD", cwd=snapshot).strip()
    config = {"repos": [{"repo": str(snapshot), "rev": rev,
                         "hooks": [{"id": "fusionlint"}, {"id": "fusionlint-fix"}]}]}
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def run_hook(config: Path, hook: str, target: Path, env: dict[str, str]):
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", "run", "--config", str(config), hook, "--all-files",
         "--verbose"],
        cwd=target, env=env, capture_output=True, text=True, timeout=900,
    )


def test_pre_commit_try_repo_end_to_end(tmp_path):
    start = time.perf_counter()
    snapshot = snapshot_working_tree(tmp_path / "fusionlint-snapshot")
    target = tmp_path / "user-project"
    target.mkdir()
    (target / "model.py").write_text(BAD_MODEL, encoding="utf-8")
    (target / "stubs.pyi").write_text("def f(x: int) -> int: ...\n", encoding="utf-8")
    # Not Python: types_or keeps it away from the hook even though it holds the bad pattern.
    (target / "notes.txt").write_text("x.permute(0, 2, 1).view(b, -1)\n", encoding="utf-8")
    git("init", "-q", cwd=target)
    git("add", "-A", cwd=target)
    home = tmp_path / "pre-commit-home"
    env = pre_commit_env(home)

    # 1. The check hook fails and names the finding.
    first = try_repo(snapshot, "fusionlint", target, env)
    output = first.stdout + first.stderr
    assert first.returncode == 1, output
    assert "FL301" in output, output
    assert "model.py" in output and "notes.txt" not in output.split("Using config")[-1]
    assert (target / "model.py").read_text(encoding="utf-8") == BAD_MODEL  # check never writes

    # 2. The same hooks from a .pre-commit-config.yaml (installed once under PRE_COMMIT_HOME;
    #    try-repo installs into a temporary store of its own on every call). The fix hook
    #    rewrites the file and fails because it changed it.
    config = write_config(snapshot, tmp_path / "pre-commit-config.yaml")
    fix = run_hook(config, "fusionlint-fix", target, env)
    output = fix.stdout + fix.stderr
    assert fix.returncode == 1, output
    assert "files were modified by this hook" in output, output
    fixed = (target / "model.py").read_text(encoding="utf-8")
    assert FIXED_LINE in fixed and ".view(" not in fixed
    assert (target / "notes.txt").read_text(encoding="utf-8") == "x.permute(0, 2, 1).view(b, -1)\n"

    # 3. Now both hooks pass.
    for hook in ("fusionlint", "fusionlint-fix"):
        again = run_hook(config, hook, target, env)
        assert again.returncode == 0, again.stdout + again.stderr
    assert (target / "model.py").read_text(encoding="utf-8") == fixed

    # The hook environment runs fusionlint built from the snapshot, and has no torch of its own.
    envs = sorted(home.glob("repo*/py_env-*/bin/python"))
    assert len(envs) == 1, f"expected one hook virtualenv under {home}, found {envs}"
    python = envs[0]
    probe = subprocess.run(
        [str(python), "-c",
         "import fusionlint, sysconfig; print(fusionlint.__file__); print(sysconfig.get_paths()['purelib'])"],
        cwd=target, env=env, capture_output=True, text=True, timeout=120,
    )
    assert probe.returncode == 0, probe.stderr
    module_file, purelib = probe.stdout.split("\n")[:2]
    assert Path(module_file).is_relative_to(python.parent.parent), module_file
    assert not (Path(purelib) / "torch").exists(), "the hook environment installed torch"

    duration = time.perf_counter() - start
    print(f"pre-commit end-to-end test: {duration:.1f} s")


def test_docs_snippet_uses_the_published_hooks():
    """The .pre-commit-config.yaml snippet in docs/integrations.md names hooks that exist."""
    text = (REPO / "docs" / "integrations.md").read_text(encoding="utf-8")
    blocks = [b.split("```", 1)[0] for b in text.split("```yaml\n")[1:]]
    (snippet,) = [b for b in blocks if "repos:" in b]
    config = yaml.safe_load(snippet)
    (repo,) = config["repos"]
    assert repo["repo"].startswith("https://github.com/")
    assert {h["id"] for h in repo["hooks"]} <= set(hooks())
    # The commented alternative too.
    assert "# - id: fusionlint-fix" in snippet
