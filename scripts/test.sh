#!/usr/bin/env bash
# Set up everything the test suite needs, then run it. The README's test command; .ci/run calls it.
# Usage: bash scripts/test.sh [pytest args...]
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python3}
"$PY" -m pip install -q --disable-pip-version-check -r requirements-dev.txt

# The HTML report test drives headless Chromium; install it when we can (root on Debian).
if ! command -v chromium >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "scripts/test.sh: installing chromium for the HTML report test" >&2
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null) \
    || echo "scripts/test.sh: could not install chromium" >&2
fi

# SARIF files are also checked with Microsoft's SARIF multitool (npm registry), when npm is here.
if ! command -v sarif-multitool >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; then
  echo "scripts/test.sh: installing @microsoft/sarif-multitool for the SARIF validation test" >&2
  npm install -g --silent @microsoft/sarif-multitool@5.7.0 >/dev/null 2>&1 \
    || echo "scripts/test.sh: could not install @microsoft/sarif-multitool" >&2
fi

exec "$PY" -m pytest "$@"
