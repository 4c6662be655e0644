#!/usr/bin/env bash
# Where does a request's time go? Runs one workload under wrk (the client
# bench.sh uses) against a release server at one concurrency, and reports
# (1) the CPU each party used during the run (server, PostgreSQL backends,
# wrk), (2) the server's CPU per request answered, (3) how many answers the
# server itself measured within 5, 25 and 100 ms, beside wrk's p99 and max,
# and (4) the server's hottest functions, sampled with perf. The server
# logs at `warn` here, so the per-attempt INFO line is not in these numbers;
# PROFILE_RUST_LOG sets another filter (`info,sqlx=warn,rmcp=warn` is the
# shipped default, every line on). PROFILE_CALL_GRAPH sets perf's call
# graph (default `-g`, frame pointers; `--call-graph dwarf,16384` follows
# calls through Rust code built without them, at more cost per sample).
#
# Usage: drivers/profile.sh [concurrency] [seconds] [workload] [postgres|sqlite] [rest|mcp]
#        (defaults: 32 10 create postgres rest; workload is create or replay)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
c="${1:-32}"; seconds="${2:-10}"; workload="${3:-create}"; database="${4:-postgres}"; door="${5:-rest}"
case "$workload" in create|replay) ;; *) echo "workload: create or replay, not $workload" >&2; exit 2 ;; esac
case "$door" in rest|mcp) ;; *) echo "door: rest or mcp, not $door" >&2; exit 2 ;; esac
cargo build --quiet --release --bin tickets
bin="$root/target/release"
# shellcheck source=drivers/wrk/fire.sh
. "$root/drivers/wrk/fire.sh"
wrk_install
out="$root/target/profile/$(date -u +%Y%m%dT%H%M%SZ)"
mkdir -p "$out"
pg_server="${BENCH_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/postgres}"
db=""; server=""
cleanup() {
    [ -n "$server" ] && kill "$server" 2>/dev/null
    [ -n "$db" ] && psql -q "$pg_server" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1
    rm -rf "$out/db"
}
trap cleanup EXIT
case "$database" in
    postgres)
        db="profile_$(date +%s)"
        psql -q "$pg_server" -c "CREATE DATABASE $db" >/dev/null
        url="${pg_server%/*}/$db"; label=PostgreSQL ;;
    sqlite)
        mkdir -p "$out/db"
        url="sqlite:$out/db/profile.db"; label=SQLite ;;
    *) echo "database: postgres or sqlite, not $database" >&2; exit 2 ;;
esac
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
base="http://127.0.0.1:$port"
DATABASE_URL="$url" DATABASE_MAX_CONNECTIONS=32 RUST_LOG="${PROFILE_RUST_LOG:-warn}" "$bin/tickets" serve --listen "127.0.0.1:$port" 2>"$out/server.log" &
server=$!
for _ in $(seq 1 100); do curl -fsS "$base/readyz" >/dev/null 2>&1 && break; sleep 0.1; done
DATABASE_URL="$url" "$bin/tickets" tenant create profile >/dev/null 2>&1
token="$(DATABASE_URL="$url" "$bin/tickets" token issue profile 2>/dev/null)"

ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
pg_ticks() { local t=0; for p in $(pgrep -x postgres); do t=$((t + $(ticks "$p"))); done; echo "$t"; }
# The server's own measure of each answer (`http.server.request.duration`,
# from routing to the answer), before and after: against wrk's, it tells
# time in the handler from time spent waiting for a CPU or in the kernel.
server_durations() { curl -fsS "$base/metrics" | grep '^http_server_request_duration_seconds_bucket' | grep 'http_request_method="POST"' || true; }
server_durations > "$out/durations.before"
server0=$(ticks $server); pg0=$(pg_ticks); idle0=$(awk '/^cpu / {print $5}' /proc/stat); total0=$(awk '/^cpu / {s=0; for (i=2;i<=NF;i++) s+=$i; print s}' /proc/stat)
# wrk_run primes a replay key (one curl, before the window opens) and
# prints wrk's JSON line; /usr/bin/time measures wrk's own CPU.
export -f wrk_run wrk_prime wrk_replay_body
export wrk_dir base token
/usr/bin/time -o "$out/wrk.time" -f "%U %S" \
    bash -c 'wrk_run "$@"' _ "$door" "$workload" "$c" "$seconds" profile > "$out/wrk.json" &
load=$!
perf record -F 499 ${PROFILE_CALL_GRAPH:--g} -p "$server" -o "$out/perf.data" -- sleep "$((seconds - 1))" 2>/dev/null || true
wait $load
# The client's CPU seconds, as clock ticks (bash, curl and the priming
# request count too: a few ms, a slight overcount).
load_ticks=$(awk -v hz="$(getconf CLK_TCK)" '{printf "%d", ($1 + $2) * hz}' "$out/wrk.time")
server_durations > "$out/durations.after"
server1=$(ticks $server); pg1=$(pg_ticks); idle1=$(awk '/^cpu / {print $5}' /proc/stat); total1=$(awk '/^cpu / {s=0; for (i=2;i<=NF;i++) s+=$i; print s}' /proc/stat)
all=$((total1 - total0))
{
    echo "$(tr a-z A-Z <<<"$door") $workload, $label, c=$c, ${seconds}s (wrk): $(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print("%.0f req/s, p99 %.2f ms, %d failed" % (r["throughput"], r["latency_ms"]["p99"], r["errors"]))' "$out/wrk.json")"
    echo "CPU share of the machine (2 cores) during the run:"
    python3 - "$all" "$((server1 - server0))" "$((pg1 - pg0))" "$load_ticks" "$((idle1 - idle0))" "$database" "$out/wrk.json" "$(getconf CLK_TCK)" <<'PY'
import json, sys
total, server, pg, load, idle = map(int, sys.argv[1:6])
parties = [("tickets server", server)]
if sys.argv[6] == "postgres":
    parties.append(("PostgreSQL backends", pg))
parties += [("wrk", load), ("idle", idle)]
for name, t in parties:
    print(f"  {name:<20} {100 * t / total:5.1f}%")
print(f"  {'other':<20} {100 * (total - sum(t for _, t in parties)) / total:5.1f}%")
# Steadier than the rate on a shared machine: what one request cost the
# server, whatever else ran beside it.
requests = json.load(open(sys.argv[7]))["requests"]
if requests:
    print(f"Server CPU per request: {server / int(sys.argv[8]) / requests * 1e6:.1f} us")
PY
    python3 - "$out/durations.before" "$out/durations.after" "$out/wrk.json" <<'PY'
import json, re, sys
from collections import Counter
def buckets(path):
    counts = Counter()
    for line in open(path):
        m = re.search(r'le="([^"]+)"\}\s+(\S+)', line)
        if m:
            counts[m.group(1)] += float(m.group(2))
    return counts
before, after = buckets(sys.argv[1]), buckets(sys.argv[2])
run = {le: after[le] - before.get(le, 0) for le in after}
total = run.get("+Inf", 0)
if total:
    wrk = json.load(open(sys.argv[3]))["latency_ms"]
    within = ", ".join(f"{ms} ms {100 * run.get(le, 0) / total:.2f}%" for le, ms in (("0.005", 5), ("0.025", 25), ("0.1", 100)))
    print(f"Answered by the server's own measure within {within} (wrk saw p99 {wrk['p99']:.1f} ms, max {wrk['max']:.1f} ms)")
PY
    echo "Server's hottest functions (perf, self time):"
    perf report -i "$out/perf.data" --stdio --no-children --sort dso,symbol 2>/dev/null \
        | grep -E '^ +[0-9]' | head -20 | sed -E 's/ +$//; s/ {2,}-.*$//' | cut -c1-110
} | tee "$out/profile.txt"
echo "profile: $out" >&2
