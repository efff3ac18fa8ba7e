"""A plain, non-editable wheel install ships `fusionlint.rules` and works away from the checkout."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_wheel_install_has_rules_and_runs(tmp_path: Path):
    src = tmp_path / "src"
    # Build from a copy so build artefacts never land in the checkout.
    shutil.copytree(REPO, src, ignore=shutil.ignore_patterns(".git", ".venv", "*.egg-info", "build", "__pycache__", ".whl"))
    wheels = tmp_path / "wheels"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(wheels), str(src)],
        check=True,
    )
    (wheel,) = wheels.glob("fusionlint-*.whl")
    env_dir = tmp_path / "venv"
    # Dependencies (libcst, click...) come from this interpreter's site-packages; fusionlint itself
    # only from the wheel, which the venv's own site-packages puts first on sys.path.
    venv.create(env_dir, system_site_packages=True, with_pip=True)
    py = env_dir / "bin" / "python"
    subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-deps", str(wheel)], check=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.copy(REPO / "fixtures" / "FL301_view_after_permute" / "bad.py", elsewhere / "model.py")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    probe = subprocess.run(
        [str(py), "-c", "import fusionlint, fusionlint.rules.FL101_tensor_to_python as r, fusionlint.registry as g;"
         "print(fusionlint.__file__); print(r.__file__); print(len(g.all_rules()))"],
        cwd=elsewhere, env=env, capture_output=True, text=True, check=True,
    )
    pkg_file, rule_file, count = probe.stdout.split()
    assert str(env_dir) in pkg_file and str(env_dir) in rule_file, probe.stdout
    assert int(count) >= 2
    check = subprocess.run(
        [str(env_dir / "bin" / "fusionlint"), "check", "model.py"], cwd=elsewhere, env=env, capture_output=True, text=True
    )
    assert check.returncode == 1 and "FL301" in check.stdout, check.stdout + check.stderr
