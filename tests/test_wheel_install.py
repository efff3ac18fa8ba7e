"""A plain, non-editable wheel install ships `fusionlint.rules` and works away from the checkout.

The wheel goes into a fresh virtual environment that sees nothing else: no system site-packages
(the base interpreter may hold any libcst or none), and its dependencies are resolved by pip from
the wheel's own metadata, offline (`--no-index`), out of a folder of wheels pinned to the versions
this test run uses. A dependency missing from pyproject.toml therefore fails here.

The dependency wheels are fetched with `pip download` from the configured package index (the same
one `scripts/test.sh` installed from, so pip's cache usually has them). Without an index the test
skips, except in CI (`CI` set) where it fails.
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parent.parent


def runtime_closure(root: str) -> dict[str, str]:
    """Installed versions of every runtime dependency of ``root``, transitively: a dependency's own
    extras are followed when a requirement asks for them (``pathspec[re2]`` -> google-re2); the
    root's extras (test, confirm, lsp) stay out."""
    pins: dict[str, str] = {}
    todo: list[tuple[str, frozenset[str]]] = [(root, frozenset())]
    seen: set[tuple[str, frozenset[str]]] = set()
    while todo:
        name, extras = todo.pop()
        if (name, extras) in seen:
            continue
        seen.add((name, extras))
        dist = importlib.metadata.distribution(name)
        for line in dist.requires or []:
            req = Requirement(line)
            if req.marker is not None and not any(req.marker.evaluate({"extra": e}) for e in {"", *extras}):
                continue
            dep = canonicalize_name(req.name)
            pins.setdefault(dep, importlib.metadata.version(dep))
            todo.append((dep, frozenset(req.extras)))
    return pins


def download_wheels(pins: dict[str, str], dest: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check", "--no-deps",
         "--only-binary", ":all:", "-d", str(dest), *(f"{n}=={v}" for n, v in sorted(pins.items()))],
        capture_output=True, text=True, timeout=600,
    )
    if proc.returncode != 0:
        reason = f"cannot download the dependency wheels {sorted(pins)}: {proc.stderr.strip()[-500:]}"
        if os.environ.get("CI"):
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)


def test_runtime_closure_pins_the_declared_dependencies():
    pins = runtime_closure("fusionlint")
    assert {"libcst", "click", "rich", "sarif-om", "pathspec", "google-re2"} <= set(pins)
    assert "torch" not in pins and "pytest" not in pins  # extras stay out of a plain install
    assert pins["libcst"] == importlib.metadata.version("libcst")


def test_wheel_install_has_rules_and_runs(tmp_path: Path):
    src = tmp_path / "src"
    # Build from a copy so build artefacts never land in the checkout.
    shutil.copytree(REPO, src, ignore=shutil.ignore_patterns(
        ".git", ".venv", "*.egg-info", "build", "__pycache__", ".whl", ".cache", ".zoo", ".fusionlint_cache",
        ".bench", ".pytest_cache"))  # (git-ignored: the bench's venv and models are over a gigabyte)
    wheels = tmp_path / "wheels"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(wheels), str(src)],
        check=True, timeout=600,
    )
    (wheel,) = wheels.glob("fusionlint-*.whl")
    download_wheels(runtime_closure("fusionlint"), wheels)

    env_dir = tmp_path / "venv"
    # no pip of its own (ensurepip costs seconds): this run's pip installs into it with --python
    venv.create(env_dir, system_site_packages=False, with_pip=False)
    py = env_dir / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH" and not k.startswith("PIP_")}
    # Dependencies resolved from the wheel's metadata, offline, from the pinned wheels only.
    install = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(py), "install", "-q", "--disable-pip-version-check", "--no-index",
         "--find-links", str(wheels), str(wheel)],
        env=env, capture_output=True, text=True, timeout=600,
    )
    assert install.returncode == 0, install.stdout + install.stderr

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.copy(REPO / "fixtures" / "FL301_view_after_permute" / "bad.py", elsewhere / "model.py")
    probe = subprocess.run(
        [str(py), "-c", "import sys, fusionlint, libcst, fusionlint.rules.FL101_tensor_to_python as r, fusionlint.registry as g;"
         "print(fusionlint.__file__); print(r.__file__); print(libcst.__file__); print(len(g.all_rules()));"
         "print(sys.flags.no_site, any('site-packages' in p and not p.startswith(sys.prefix) for p in sys.path))"],
        cwd=elsewhere, env=env, capture_output=True, text=True, check=True, timeout=120,
    )
    pkg_file, rule_file, libcst_file, count, _no_site, foreign = probe.stdout.split()
    assert all(f.startswith(str(env_dir)) for f in (pkg_file, rule_file, libcst_file)), probe.stdout
    assert foreign == "False", f"the venv sees another site-packages: {probe.stdout}"
    assert int(count) >= 2
    check = subprocess.run(
        [str(env_dir / "bin" / "fusionlint"), "check", "model.py"], cwd=elsewhere, env=env,
        capture_output=True, text=True, timeout=300,
    )
    assert check.returncode == 1 and "FL301" in check.stdout, check.stdout + check.stderr
