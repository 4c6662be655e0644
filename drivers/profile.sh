#!/usr/bin/env bash
# Where does a create's time go? Runs REST creates against a release server
# on PostgreSQL at one concurrency, and reports (1) the CPU each party used
# during the run (server, PostgreSQL backends, load generator) and (2) the
# server's hottest functions, sampled with perf.
#
# Usage: drivers/profile.sh [concurrency] [seconds] [workload]   (default: 32 10 create)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
c="${1:-32}"; seconds="${2:-10}"; workload="${3:-create}"
cargo build --quiet --release --bin tickets --bin load
bin="$root/target/release"
pg_server="${BENCH_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/postgres}"
db="profile_$(date +%s)"
psql -q "$pg_server" -c "CREATE DATABASE $db" >/dev/null
url="${pg_server%/*}/$db"
out="$root/target/profile/$(date -u +%Y%m%dT%H%M%SZ)"
mkdir -p "$out"
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
DATABASE_URL="$url" DATABASE_MAX_CONNECTIONS=32 RUST_LOG=warn "$bin/tickets" serve --listen "127.0.0.1:$port" 2>"$out/server.log" &
server=$!
trap 'kill $server 2>/dev/null; psql -q "$pg_server" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1' EXIT
for _ in $(seq 1 100); do curl -fsS "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && break; sleep 0.1; done
DATABASE_URL="$url" "$bin/tickets" tenant create profile >/dev/null 2>&1
token="$(DATABASE_URL="$url" "$bin/tickets" token issue profile 2>/dev/null)"

ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
pg_ticks() { local t=0; for p in $(pgrep -x postgres); do t=$((t + $(ticks "$p"))); done; echo "$t"; }
server0=$(ticks $server); pg0=$(pg_ticks); idle0=$(awk '/^cpu / {print $5}' /proc/stat); total0=$(awk '/^cpu / {s=0; for (i=2;i<=NF;i++) s+=$i; print s}' /proc/stat)
/usr/bin/time -o "$out/load.time" -f "%U %S" \
    "$bin/load" run --url "http://127.0.0.1:$port" --token "$token" --workload "$workload" --concurrency "$c" --seconds "$seconds" --quiet > "$out/load.json" &
load=$!
perf record -F 499 -g -p "$server" -o "$out/perf.data" -- sleep "$((seconds - 1))" 2>/dev/null || true
wait $load
# The load generator's CPU seconds, as clock ticks (it also ran its final
# verification, a few hundred ms, outside the window: a slight overcount).
load_ticks=$(awk -v hz="$(getconf CLK_TCK)" '{printf "%d", ($1 + $2) * hz}' "$out/load.time")
server1=$(ticks $server); pg1=$(pg_ticks); idle1=$(awk '/^cpu / {print $5}' /proc/stat); total1=$(awk '/^cpu / {s=0; for (i=2;i<=NF;i++) s+=$i; print s}' /proc/stat)
all=$((total1 - total0))
{
    echo "REST $workload, PostgreSQL, c=$c, ${seconds}s: $(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print("%.0f req/s, p99 %.2f ms" % (r["throughput"], r["latency_ms"]["p99"]))' "$out/load.json")"
    echo "CPU share of the machine (2 cores) during the run:"
    python3 - "$all" "$((server1 - server0))" "$((pg1 - pg0))" "$load_ticks" "$((idle1 - idle0))" <<'PY'
import sys
total, server, pg, load, idle = map(int, sys.argv[1:])
for name, t in [("tickets server", server), ("PostgreSQL backends", pg), ("load generator", load), ("idle", idle)]:
    print(f"  {name:<20} {100 * t / total:5.1f}%")
print(f"  {'other':<20} {100 * (total - server - pg - load - idle) / total:5.1f}%")
PY
    echo "Server's hottest functions (perf, self time):"
    perf report -i "$out/perf.data" --stdio --no-children --sort dso,symbol 2>/dev/null \
        | grep -E '^ +[0-9]' | head -20 | sed -E 's/ +$//; s/ {2,}-.*$//' | cut -c1-110
} | tee "$out/profile.txt"
echo "profile: $out" >&2
