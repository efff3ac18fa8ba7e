#!/usr/bin/env bash
# Set up everything the test suite needs, then run it. The README's test command; .ci/run calls it.
# Usage: bash scripts/test.sh [pytest args...]      (e.g. -q, -k confirm, -m "not slow", -n 0)
#
# What it installs, and where (the README's "Set-up" section says the same):
#   1. Python packages from requirements-dev.txt (torch==2.13.0 CPU, numpy, fusionlint itself in
#      editable mode with its test and confirm extras) into a virtual environment: the active one,
#      else ./.venv (created here when missing). $PYTHON overrides the interpreter.
#   2. The SARIF multitool (@microsoft/sarif-multitool, npm) into ./.cache/npm, when npm exists:
#      tests/test_sarif_multitool.py validates fusionlint's SARIF with it.
#   3. Debian's chromium, only when it is missing and the script runs as root with apt-get:
#      tests/test_confirm_report.py renders the HTML report in headless Chromium.
# Nothing is installed globally except (3). Outside CI a test whose tool is missing skips and says
# why; with CI=true (.ci/run) it fails.
set -euo pipefail
cd "$(dirname "$0")/.."
say() { echo "scripts/test.sh: $*" >&2; }

if [ -n "${PYTHON:-}" ]; then
  PY=$PYTHON
elif [ -n "${VIRTUAL_ENV:-}" ]; then
  PY=python
else
  if [ ! -x .venv/bin/python ]; then
    say "creating the virtual environment .venv (python3 -m venv .venv)"
    python3 -m venv .venv
  fi
  PY=.venv/bin/python
  say "using .venv (activate it with: . .venv/bin/activate)"
fi

say "installing requirements-dev.txt into $("$PY" -c 'import sys; print(sys.prefix)')"
"$PY" -m pip install -q --disable-pip-version-check -r requirements-dev.txt

# The SARIF multitool, pinned, in a project-local npm prefix (never npm install -g).
NPM_PREFIX=.cache/npm
MULTITOOL_VERSION=5.7.0
if command -v npm >/dev/null 2>&1; then
  if [ ! -x "$NPM_PREFIX/node_modules/.bin/sarif-multitool" ]; then
    say "installing @microsoft/sarif-multitool@$MULTITOOL_VERSION into $NPM_PREFIX (npm) for tests/test_sarif_multitool.py"
    npm install --prefix "$NPM_PREFIX" --no-save --no-audit --no-fund --silent "@microsoft/sarif-multitool@$MULTITOOL_VERSION" >/dev/null \
      || say "could not install @microsoft/sarif-multitool (tests/test_sarif_multitool.py will skip, or fail under CI=true)"
  fi
else
  say "npm not found: tests/test_sarif_multitool.py will skip (fail under CI=true); install Node.js to run it"
fi
export PATH="$PWD/$NPM_PREFIX/node_modules/.bin:$PATH"

# Headless Chromium for the HTML report test: a system package, installed only as root with apt-get.
if ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    say "installing the Debian packages chromium and chromium-driver (apt-get, system-wide) for tests/test_confirm_report.py"
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null) \
      || say "could not install chromium (tests/test_confirm_report.py will skip, or fail under CI=true)"
  else
    say "chromium not found and not root: tests/test_confirm_report.py will skip (fail under CI=true)"
  fi
fi

# Byte-compile the repository's own modules once. The tests start over 200 Python processes
# (CLI runs, confirm workers, language servers) that import fusionlint from this checkout; where
# PYTHONDONTWRITEBYTECODE is set (it is on our CI machines) none of them may write a .pyc, so each
# one compiled all ~27k lines again: 3.8 -> 0.9 CPU-s for `fusionlint check examples/` on the
# 2-core machine. compileall writes the cache whatever that variable says; stale entries are
# rebuilt by Python's usual source mtime check, and __pycache__/ is git-ignored.
"$PY" -m compileall -q -j 0 fusionlint rules bench tests/helpers.py >/dev/null

# Two workers per CPU; worksteal keeps them busy when slow tests cluster. Many tests wait on a
# process they started (a CLI run, a confirm worker, a language server) and leave their core idle
# meanwhile: on the 2-core machine, with a fresh inductor cache, 4 workers ran the suite in 214.5 s
# against 256.7 s with one per CPU (same 1,307 tests). A later -n in "$@" wins.
CPUS=$("$PY" -c 'import os; print(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)')
exec "$PY" -m pytest -n "$((2 * CPUS))" --dist worksteal "$@"
