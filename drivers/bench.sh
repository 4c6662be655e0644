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
#   service  wrk (drivers/wrk/) against a running `tickets serve`: create
#            and replay, over REST and over MCP; after every run the
#            database itself is checked: each key of the run made exactly
#            one ticket, each of its records points to an existing ticket,
#            and no answered create was lost. A violation stops the bench.
# Then the growth case (1,000,000 existing operations) and peak server RSS.
# Prints a table of medians with service/ceiling ratios and the targets;
# writes JSON and a PNG chart under target/bench/.
#
# The service is driven by wrk, a lean C client, so that the two shared
# cores go to the server and the database, as in the comparison the
# targets come from. Our own client (`load run`, which verifies through
# the API) stays available, but nothing here uses it any more: wrk does
# every job, and the checks read the database directly.
#
# Usage: drivers/bench.sh           full run, release build (about 17 minutes)
#        drivers/bench.sh --smoke   tiny sizes, debug build: proves it runs
#        BENCH_CONCURRENCIES, BENCH_REPEATS, BENCH_SECONDS, BENCH_GROWTH
#                                   override the sizes of either
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
# Any size can be overridden, e.g. a one-cell sanity run of the release
# build: BENCH_CONCURRENCIES=32 BENCH_REPEATS=1 BENCH_SECONDS=3 BENCH_GROWTH=100000
concurrencies="${BENCH_CONCURRENCIES:-$concurrencies}"; repeats="${BENCH_REPEATS:-$repeats}"
seconds="${BENCH_SECONDS:-$seconds}"; growth="${BENCH_GROWTH:-$growth}"
bin="$root/target/$profile"
# shellcheck source=drivers/wrk/fire.sh
. "$root/drivers/wrk/fire.sh"
wrk_install
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

record() { # db path door workload concurrency repeat json-or-number [verification-json]
    python3 - "$@" >> "$results" <<'PY'
import json, sys
db, path, door, workload, c, r, value = sys.argv[1:8]
try:
    data = json.loads(value)
except ValueError:
    data = {"throughput": float(value)}
if not isinstance(data, dict):
    data = {"throughput": float(data)}
if len(sys.argv) > 8:
    data["verification"] = json.loads(sys.argv[8])
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

stop_server() {
    kill "$server_pid"; wait "$server_pid" 2>/dev/null || true
    server_pid=""
}

# The server's peak RSS so far, recorded as `what`: after the matrix (whose
# largest concurrency is 64 in a full run: the RSS target's number) and
# again after the growth case.
peak_rss() { # db what
    local hwm
    hwm="$(awk '/VmHWM/ {print $2}' "/proc/$server_pid/status" 2>/dev/null || echo 0)"
    record "$1" "server" "-" "$2" 0 0 "${hwm:-0}"
}

# Each service run gets a tag of its own, a slug that is the project of
# every ticket it makes and the prefix of every key it sends, so that the
# check after it counts exactly that run's work.
bench_id="b$(date +%s)"
runs=0

# What the database holds for one run, read in one statement (one
# snapshot: a create still in flight when wrk stopped is wholly there or
# not at all): the run's operation records, the tickets of its project, the
# records that point to no ticket of the project, and how many distinct
# tickets the others point to.
run_counts() { # db key-prefix project
    local ops="o.action = 'create_ticket' AND substr(o.operation_key, 1, ${#2}) = '$2'"
    local made="SELECT 1 FROM tickets t WHERE t.id = COALESCE(o.ticket_id, o.resource_id) AND t.project_id = '$3'"
    local sql="SELECT (SELECT count(*) FROM operations o WHERE $ops),
                      (SELECT count(*) FROM tickets WHERE project_id = '$3'),
                      (SELECT count(*) FROM operations o WHERE $ops AND NOT EXISTS ($made)),
                      (SELECT count(DISTINCT COALESCE(o.ticket_id, o.resource_id)) FROM operations o
                       WHERE $ops AND EXISTS ($made))"
    case "$1" in
        postgres) psql -qAt -F ' ' "$pg_url" -c "$sql" ;;
        # Python's sqlite3 module rather than the sqlite3 CLI: python3 is
        # already needed here, the CLI is one more package.
        sqlite) python3 -c 'import sqlite3, sys
print(*sqlite3.connect(sys.argv[1], timeout=10).execute(sys.argv[2]).fetchone())' "${sqlite_url#sqlite:}" "$sql" ;;
    esac
}

# Checks one run in the database; prints its verification JSON, and fails
# on a violation. A create run: every record points to a ticket of the run
# and no two to the same one, no ticket lacks a record of its own (a key
# that made two tickets leaves one without), and there are at least as
# many records as answered creates (none lost). A replay run: the primed
# key still has exactly one record and one ticket.
verify() { # db tag workload answered-ok
    local db="$1" tag="$2" workload="$3" ok="$4" prefix records tickets dangling linked
    if [ "$workload" = replay ]; then prefix="$tag-primed"; else prefix="$tag-"; fi
    read -r records tickets dangling linked < <(run_counts "$db" "$prefix" "$tag")
    if [ -z "${linked:-}" ]; then
        echo '{"violation":true,"unread":true}'
        echo "could not read the $db database to check run $tag" >&2
        return 1
    fi
    local shared=$((records - dangling - linked)) orphans=$((tickets - linked))
    local lost=0 problem=""
    [ "$workload" = replay ] || lost=$((ok > records ? ok - records : 0))
    [ "$dangling" -eq 0 ] || problem+=" $dangling records point to no ticket of the run;"
    [ "$shared" -eq 0 ] || problem+=" $shared records share a ticket;"
    [ "$orphans" -eq 0 ] || problem+=" $orphans tickets have no record of their own (a key made more than one);"
    [ "$lost" -eq 0 ] || problem+=" $lost answered creates have no record;"
    [ "$ok" -gt 0 ] || problem+=" no request succeeded;"
    if [ "$workload" = replay ] && { [ "$records" -ne 1 ] || [ "$tickets" -ne 1 ]; }; then
        problem+=" the primed key has $records records and $tickets tickets, not one of each;"
    fi
    printf '{"records":%d,"tickets":%d,"dangling":%d,"shared":%d,"orphans":%d,"lost":%d,"violation":%s}\n' \
        "$records" "$tickets" "$dangling" "$shared" "$orphans" "$lost" "$([ -z "$problem" ] && echo false || echo true)"
    if [ -n "$problem" ]; then
        echo "VIOLATION in the $db $workload run $tag:$problem" >&2
        return 1
    fi
}

service() { # db path door workload c r
    local db="$1" path="$2" door="$3" workload="$4" c="$5" r="$6" report verification ok failed status=0
    runs=$((runs + 1))
    local tag="$bench_id-$runs"
    report="$(wrk_run "$door" "$workload" "$c" "$seconds" "$tag")"
    read -r ok failed < <(python3 -c 'import json, sys; r = json.loads(sys.argv[1]); print(r["ok"], r["errors"])' "$report")
    verification="$(verify "$db" "$tag" "$workload" "$ok")" || status=$?
    record "$db" "$path" "$door" "$workload" "$c" "$r" "$report" "$verification"
    if [ "$status" -ne 0 ]; then
        echo "the bench stops: the service broke its promise (results so far: $results)" >&2
        exit 1
    fi
    # Failed requests (a 409 in_progress past the lock wait, a timeout)
    # are no broken promise; the report counts the runs that had any.
    [ "$failed" = 0 ] || echo "  note: $door $workload c=$c had $failed failed requests: $report" >&2
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
                service "$1" service "$door" create "$c" "$r"
                service "$1" service "$door" replay "$c" "$r"
            done
        done
    done
}

growth() { # db database-url
    local c=32
    [ "$seconds" = 1 ] && c=8
    echo "  $1: seeding $growth operations" >&2
    DATABASE_URL="$2" "$bin/load" seed --operations "$growth" >/dev/null
    record "$1" growth - seeded 0 0 "{\"operations\": $growth}"
    for r in $(seq 1 "$repeats"); do
        for workload in create replay; do
            service "$1" growth rest "$workload" "$c" "$r"
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
peak_rss postgres peak_rss_kib
growth postgres "$pg_url"
peak_rss postgres peak_rss_after_growth_kib
stop_server

echo "==> SQLite" >&2
sqlite_url="sqlite:$work/bench.db"
start_server "$sqlite_url"
matrix sqlite sqlite_ceiling
peak_rss sqlite peak_rss_kib
growth sqlite "$sqlite_url"
peak_rss sqlite peak_rss_after_growth_kib
stop_server

# The kill -9 soak at size: the release server SIGKILLed at seeded random
# moments and restarted while 32 clients retry their creates; then each
# database is counted (0 duplicates, 0 lost, every key settled).
if [ "$profile" = release ]; then
    echo "==> Kill -9 soak" >&2
    cargo build --quiet --release --workspace --bin soak
    for db in sqlite postgres; do
        soak_ok=1
        report="$("$bin/soak" --server-bin "$bin/tickets" --database "$db" --postgres-url "$pg_server" \
            --clients 32 --kills 10 --keys-per-client 200)" || soak_ok=0
        [ -n "$report" ] && record "$db" soak rest+mcp create 32 1 "$report" \
            "{\"violation\": $([ "$soak_ok" = 1 ] && echo false || echo true)}"
        if [ "$soak_ok" = 0 ]; then
            echo "the kill -9 soak failed on $db (results so far: $results)" >&2
            exit 1
        fi
    done
fi

echo "==> Report" >&2
venv="$root/target/bench-venv"
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import matplotlib" 2>/dev/null; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check matplotlib
fi
"$venv/bin/python" "$root/drivers/bench_report.py" "$results" "$out"
echo "results: $out" >&2
