#!/usr/bin/env bash
# The effect benchmark (drivers/bench/src/effect_bench/): every fault point against
# blind retry, the provider's native key, this service with a naive client,
# and this service with tickets-client, on this service's database, on
# providers that honour or ignore keys, and on a real Redmine; then blind
# retry through this service with its likely-duplicate guard off, warn and
# confirm; effects counted where they are made.
#
# Usage: drivers/effect_bench.sh           full run (about 8 minutes on 2 cores):
#                                          docs/effect-benchmark/results.json,
#                                          docs/effect-benchmark/heatmap.png and the
#                                          results section of docs/effect-benchmark.md
#        drivers/effect_bench.sh --smoke   a few cells (two of them the guard's), one
#                                          intent each, SQLite only, no Redmine (under a
#                                          minute): target/effect-bench/smoke/
#        Further arguments go to effect-bench (e.g. --seed 5, --intents 3,
#        --only-strategy blind --only-guard confirm, --only-backend redmine).
# Needs PostgreSQL for the full run's two-instance row (TEST_POSTGRES_URL).
# When the redmine backend runs (the full run, or --only-backend redmine), a
# fresh Redmine is started with tests/redmine/redmine.py serve (its first use
# on a machine installs Debian's packages, about a minute) and stopped at the
# end, by its pid, also on failure.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

smoke=false
if [ "${1:-}" = "--smoke" ]; then
    shift
    smoke=true
    out="target/effect-bench/smoke"
    args=(--smoke --out "$out" --work-dir "$out/work")
else
    out="docs/effect-benchmark"
    args=(--out "$out" --doc docs/effect-benchmark.md --work-dir target/effect-bench/work)
fi
mkdir -p "$out" target/effect-bench

# Whether effect-bench will run redmine cells: never in the smoke run; else
# when no --only-backend narrows the run, or one names redmine; and not when
# the caller brought a Redmine of its own (--redmine-url).
wants_redmine() {
    "$smoke" && return 1
    local only=() arg previous=""
    for arg in "$@"; do
        case "$arg" in
            --redmine-url|--redmine-url=*) return 1 ;;
            --only-backend=*) only+=("${arg#--only-backend=}") ;;
        esac
        [ "$previous" = "--only-backend" ] && only+=("$arg")
        previous="$arg"
    done
    [ "${#only[@]}" -eq 0 ] && return 0
    for arg in "${only[@]}"; do
        [ "$arg" = "redmine" ] && return 0
    done
    return 1
}

redmine_pid=""
stop_redmine() {
    if [ -n "$redmine_pid" ] && kill -0 "$redmine_pid" 2>/dev/null; then
        # redmine.py stops its Redmine on TERM (its process group, by pid).
        kill -TERM "$redmine_pid" 2>/dev/null || true
        wait "$redmine_pid" 2>/dev/null || true
    fi
    redmine_pid=""
}
trap stop_redmine EXIT
trap 'exit 130' INT TERM

redmine_args=()
if wants_redmine "$@"; then
    # Started before the build, which it overlaps (Redmine takes 5 to 10 s
    # to boot); its settings are the one JSON line it prints (the first use
    # prints apt-get's output before it).
    redmine_out="target/effect-bench/redmine.out"
    : > "$redmine_out"
    python3 tests/redmine/redmine.py serve --run-dir target/effect-bench/redmine \
        > "$redmine_out" 2> target/effect-bench/redmine.log &
    redmine_pid=$!
fi

cargo build --quiet --workspace --bin tickets --bin effect-bench

if [ -n "$redmine_pid" ]; then
    settings=""
    for _ in $(seq 600); do
        settings="$(grep -m1 '^{"url"' "$redmine_out" || true)"
        [ -n "$settings" ] && break
        if ! kill -0 "$redmine_pid" 2>/dev/null; then
            echo "effect_bench.sh: Redmine did not start; see target/effect-bench/redmine.log" >&2
            exit 1
        fi
        sleep 0.5
    done
    if [ -z "$settings" ]; then
        echo "effect_bench.sh: Redmine printed no settings within 5 minutes" >&2
        exit 1
    fi
    # Our server and the simple adapter act as the non-administrator
    # `developer` (Redmine's permissions and workflow apply; the custom
    # field is then named by id); the count reads as the administrator.
    read -r rm_url rm_admin_key rm_key rm_project rm_field < <(python3 -c '
import json, sys
s = json.loads(sys.argv[1])
print(s["url"], s["api_key"], s["developer"]["api_key"], s["project_identifier"], s["custom_field_id"])
' "$settings")
    redmine_args=(--redmine-url "$rm_url" --redmine-api-key "$rm_key"
        --redmine-truth-api-key "$rm_admin_key" --redmine-project "$rm_project"
        --redmine-reference-field "$rm_field")
fi

status=0
target/debug/effect-bench "${args[@]}" "${redmine_args[@]}" "$@" > "target/effect-bench/last-table.md" || status=$?
stop_redmine

venv="$root/target/bench-venv"
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import matplotlib" 2>/dev/null; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check matplotlib
fi
if [ -f "$out/results.json" ]; then
    "$venv/bin/python" drivers/effect_bench_report.py "$out/results.json" "$out/heatmap.png"
fi
exit "$status"
