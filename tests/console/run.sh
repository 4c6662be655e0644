#!/usr/bin/env bash
# The operators' console in a real browser: headless Chromium through
# chromium-driver (Debian) and Selenium (PyPI, in a venv under target/).
#
# Usage: tests/console/run.sh   (TICKETS_WRITE_SCREENSHOTS=1 also writes
# the README's screenshots into docs/operations/)
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then
    apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium chromium-driver
fi
venv="$root/target/console-venv"
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import selenium" 2>/dev/null; then
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check "selenium==${SELENIUM_VERSION:-4.51.0}"
fi
cargo build --quiet --bin tickets --bin provider-sim
"$venv/bin/python" tests/console/browser.py "$root/target/debug/tickets" "$root/target/debug/provider-sim"
