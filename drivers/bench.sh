#!/usr/bin/env bash
# The benchmark: how close does the retry-safe create come to the
# database's own limit, and what does a replay cost?
#
# For SQLite and PostgreSQL, at each concurrency, several times:
#   ceiling  the store's own create transaction (claim, ticket insert,
#            history entry, result) and replay read, with nothing around
#            them: pgbench running the store's statements on PostgreSQL;
#            `load ceiling` (the same transaction and pragmas, in-process) on
#            SQLite;
#   service  `load run` against a running `tickets serve`: create and replay,
#            over REST and over MCP, with the server's state checked for
#            duplicates and losses after every run.
# Then the growth case (1,000,000 existing operations) and peak server RSS.
# Prints a table of medians with service/ceiling ratios; writes JSON and a
# PNG chart under target/bench/.
#
# Usage: drivers/bench.sh           full run, release build (about 15 minutes)
#        drivers/bench.sh --smoke   tiny sizes, debug build: proves it runs
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

if [ "${1:-}" = "--smoke" ]; then
    profile=debug; seconds=1; concurrencies="1 8"; repeats=1; growth=10000
    cargo build --quiet --bin tickets --bin load
else
    profile=release; seconds=5; concurrencies="1 8 32 64"; repeats=3; growth=1000000
    cargo build --quiet --release --bin tickets --bin load
fi
bin="$root/target/$profile"
out="$root/target/bench/$(date -u +%Y%m%dT%H%M%SZ)"
mkdir -p "$out"
results="$out/results.jsonl"
: > "$results"
pg_server="${BENCH_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/postgres}"
server_pid=""
work="$(mktemp -d)"
cleanup() {
    [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
    [ -n "${pg_db:-}" ] && psql -q "$pg_server" -c "DROP DATABASE IF EXISTS $pg_db WITH (FORCE)" >/dev/null 2>&1
    rm -rf "$work"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

record() { # db path door workload concurrency repeat json-or-number
    python3 - "$@" >> "$results" <<'PY'
import json, sys
db, path, door, workload, c, r, value = sys.argv[1:8]
try:
    data = json.loads(value)
except ValueError:
    data = {"throughput": float(value)}
if not isinstance(data, dict):
    data = {"throughput": float(data)}
data.update(db=db, path=path, door=door, workload=workload, concurrency=int(c), repeat=int(r))
print(json.dumps(data))
PY
}

start_server() { # database-url
    port="$(free_port)"
    base="http://127.0.0.1:$port"
    DATABASE_URL="$1" DATABASE_MAX_CONNECTIONS=32 RUST_LOG=warn \
        "$bin/tickets" serve --listen "127.0.0.1:$port" 2>>"$out/server.log" &
    server_pid=$!
    for _ in $(seq 1 100); do curl -fsS "$base/readyz" >/dev/null 2>&1 && break; sleep 0.1; done
    DATABASE_URL="$1" "$bin/tickets" tenant create "bench-$port" >/dev/null 2>&1
    token="$(DATABASE_URL="$1" "$bin/tickets" token issue "bench-$port" 2>/dev/null)"
}

stop_server() { # db label: records the server's peak RSS
    local hwm
    hwm="$(awk '/VmHWM/ {print $2}' "/proc/$server_pid/status" 2>/dev/null || echo 0)"
    record "$1" "server" "-" "peak_rss_kib" 0 0 "${hwm:-0}"
    kill "$server_pid"; wait "$server_pid" 2>/dev/null || true
    server_pid=""
}

service() { # db door workload c r
    local report
    report="$("$bin/load" run --url "$base" --token "$token" --door "$2" --workload "$3" \
        --concurrency "$4" --seconds "$seconds" --quiet)"
    record "$1" "service" "$2" "$3" "$4" "$5" "$report"
}

pg_ceiling() { # kind c r
    local script="$work/$1.sql" tps
    "$bin/load" pgbench-script --kind "$1" --tenant-id "$ceiling_tenant" --key "$ceiling_key" > "$script"
    tps="$(pgbench -n -c "$2" -j "$(( $2 < 2 ? $2 : 2 ))" -T "$seconds" -f "$script" "$pg_url" 2>/dev/null \
        | awk '/^tps = / {print $3}')"
    record postgres ceiling - "$1" "$2" "$3" "${tps:-0}"
}

sqlite_ceiling() { # kind c r
    local tps
    tps="$(DATABASE_URL="$sqlite_url" "$bin/load" ceiling --kind "$1" --concurrency "$2" --seconds "$seconds")"
    record sqlite ceiling - "$1" "$2" "$3" "$tps"
}

matrix() { # db ceiling-function
    for c in $concurrencies; do
        for r in $(seq 1 "$repeats"); do
            echo "  $1 c=$c run $r/$repeats" >&2
            "$2" create "$c" "$r"
            "$2" read "$c" "$r"
            for door in rest mcp; do
                service "$1" "$door" create "$c" "$r"
                service "$1" "$door" replay "$c" "$r"
            done
        done
    done
}

growth() { # db database-url
    local c=32
    [ "$seconds" = 1 ] && c=8
    echo "  $1: seeding $growth operations" >&2
    DATABASE_URL="$2" "$bin/load" seed --operations "$growth" >/dev/null
    for r in $(seq 1 "$repeats"); do
        for workload in create replay; do
            local report
            report="$("$bin/load" run --url "$base" --token "$token" --door rest --workload "$workload" \
                --concurrency "$c" --seconds "$seconds" --quiet)"
            record "$1" "growth" rest "$workload" "$c" "$r" "$report"
        done
    done
}

echo "==> PostgreSQL" >&2
pg_db="bench_$(date +%s)"
psql -q "$pg_server" -c "CREATE DATABASE $pg_db" >/dev/null
pg_url="${pg_server%/*}/$pg_db"
start_server "$pg_url"
ceiling_tenant="$(psql -qAt "$pg_url" -c "INSERT INTO tenants (id, name, created_at) VALUES (gen_random_uuid(), 'ceiling', now()) RETURNING id")"
ceiling_key="ceiling-read-key"
psql -q "$pg_url" -c "INSERT INTO operations (tenant_id, action, operation_key, fingerprint_version, fingerprint, state, result_snapshot, created_at, retained_until) VALUES ('$ceiling_tenant', 'create_ticket', '$ceiling_key', 1, 'x', 'succeeded', '{}', now(), now())" >/dev/null
matrix postgres pg_ceiling
# The ceiling must have run the store's whole create, or it measured
# something cheaper: each of its records holds its ticket, that ticket's
# first history entry under the same key, and a snapshot of that ticket.
read -r made whole < <(psql -qAt -F ' ' "$pg_url" -c "
    SELECT count(*), count(*) FILTER (WHERE
        EXISTS (SELECT 1 FROM tickets t WHERE t.id = o.ticket_id)
        AND EXISTS (SELECT 1 FROM ticket_history h
                    WHERE h.ticket_id = o.ticket_id AND h.operation_key = o.operation_key)
        AND o.result_snapshot LIKE '%' || o.ticket_id || '%')
    FROM operations o WHERE o.tenant_id = '$ceiling_tenant' AND o.operation_key <> '$ceiling_key'")
if [ "$made" -eq 0 ] || [ "$made" != "$whole" ]; then
    echo "the PostgreSQL create ceiling made $made records, $whole of them whole creates" >&2
    exit 1
fi
growth postgres "$pg_url"
stop_server postgres

echo "==> SQLite" >&2
sqlite_url="sqlite:$work/bench.db"
start_server "$sqlite_url"
matrix sqlite sqlite_ceiling
growth sqlite "$sqlite_url"
stop_server sqlite

echo "==> Report" >&2
venv="$root/target/bench-venv"
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import matplotlib" 2>/dev/null; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check matplotlib
fi
"$venv/bin/python" "$root/drivers/bench_report.py" "$results" "$out"
echo "results: $out" >&2
