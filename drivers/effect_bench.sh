#!/usr/bin/env bash
# The effect benchmark (drivers/bench/src/effect_bench/): every fault point against
# blind retry, the provider's native key, this service with a naive client,
# and this service with tickets-client, on this service's database and on
# providers that honour or ignore keys; then blind retry through this service
# with its likely-duplicate guard off, warn and confirm; effects counted where
# they are made.
#
# Usage: drivers/effect_bench.sh           full run (about 6 minutes on 2 cores):
#                                          docs/effect-benchmark/results.json,
#                                          docs/effect-benchmark/heatmap.png and the
#                                          results section of docs/effect-benchmark.md
#        drivers/effect_bench.sh --smoke   a few cells (two of them the guard's), one
#                                          intent each, SQLite only (under a minute):
#                                          target/effect-bench/smoke/
#        Further arguments go to effect-bench (e.g. --seed 5, --intents 3,
#        --only-strategy blind --only-guard confirm).
# Needs PostgreSQL for the full run's two-instance row (TEST_POSTGRES_URL).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

if [ "${1:-}" = "--smoke" ]; then
    shift
    out="target/effect-bench/smoke"
    args=(--smoke --out "$out" --work-dir "$out/work")
else
    out="docs/effect-benchmark"
    args=(--out "$out" --doc docs/effect-benchmark.md --work-dir target/effect-bench/work)
fi
mkdir -p "$out" target/effect-bench
cargo build --quiet --workspace --bin tickets --bin effect-bench
status=0
target/debug/effect-bench "${args[@]}" "$@" > "target/effect-bench/last-table.md" || status=$?

venv="$root/target/bench-venv"
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import matplotlib" 2>/dev/null; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check matplotlib
fi
if [ -f "$out/results.json" ]; then
    "$venv/bin/python" drivers/effect_bench_report.py "$out/results.json" "$out/heatmap.png"
fi
exit "$status"
