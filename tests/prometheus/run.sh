#!/usr/bin/env bash
# The Prometheus rules and alerts: promtool's unit tests for every rule
# and alert, then a live Prometheus over a real server (live.py).
#
# Usage: tests/prometheus/run.sh      (from anywhere; installs Debian's
# prometheus, which ships promtool, if it is missing)
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
if ! command -v promtool >/dev/null 2>&1 || ! command -v prometheus >/dev/null 2>&1; then
    apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q prometheus
fi
echo "==> promtool check and test rules"
promtool check rules ops/prometheus/tickets.rules.yml ops/prometheus/tickets.alerts.yml
promtool test rules ops/prometheus/tests/tickets_test.yml
echo "==> a live Prometheus scraping a server under load with provider faults"
cargo build --quiet --bin tickets --bin provider-sim
python3 tests/prometheus/live.py "$root/target/debug/tickets" "$root/target/debug/provider-sim"
