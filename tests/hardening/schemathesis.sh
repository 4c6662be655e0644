#!/usr/bin/env bash
# Schemathesis against a real `tickets serve`, over SQLite and then over a
# fresh PostgreSQL database: every check (`--checks all`), a fixed seed and
# a fixed example budget, so a run is reproducible and bounded. Any failure
# fails the script, and so does a panic in the server's log.
#
# What this holds in place: the OpenAPI document says the truth (every
# request it calls valid is accepted, every status a route answers is
# documented with its schema), and no input makes a 5xx.
#
# Usage: tests/hardening/schemathesis.sh [sqlite|postgres ...]
#   (default: both). Settings: TICKETS_BIN (built if unset),
#   ST_MAX_EXAMPLES, ST_SEED, ST_TIMEOUT_SECS, TEST_POSTGRES_URL.
# Output: target/hardening/schemathesis-BACKEND/ (server log, st output,
#   JUnit report), kept after the run.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cd "$root"
# shellcheck source=tests/hardening/lib.sh
source "$here/lib.sh"

# The budget: at most this many test cases per operation in each phase
# (examples, coverage, fuzzing, stateful). At 300 (17 operations): about
# 5,500 test cases and some 4.5 minutes per backend on 2 cores; CI runs 100.
ST_MAX_EXAMPLES="${ST_MAX_EXAMPLES:-300}"
ST_SEED="${ST_SEED:-20261130}"
# A run that goes past this (a hung server) is stopped and fails.
ST_TIMEOUT_SECS="${ST_TIMEOUT_SECS:-600}"
backends=("$@")
[ ${#backends[@]} -gt 0 ] || backends=(sqlite postgres)

trap server_stop EXIT
hardening_venv_ready
hardening_binary

status=0
for backend in "${backends[@]}"; do
    label="schemathesis-$backend"
    echo "==> schemathesis $HARDENING_SCHEMATHESIS_VERSION on $backend (seed $ST_SEED, $ST_MAX_EXAMPLES examples per operation)"
    server_start "$backend" "$label"
    dir="$hardening_out/$label"
    started=$SECONDS
    # --checks all, nothing excluded. The bearer token is given through the
    # document's security scheme (schemathesis.toml says why not -H). The
    # hooks file binds each valid Idempotency-Key to its body (a key names
    # one request; the file says why).
    # --generation-database none: nothing is remembered between runs, so
    #   the seed alone decides the cases (and nothing is written to the tree).
    # --workers 1: cases run in seed order (schemathesis's own generation,
    #   not the server, is what takes the time).
    set +e
    (
        cd "$dir"
        SCHEMATHESIS_HOOKS="$here/schemathesis_hooks.py" TICKETS_TOKEN="$SERVER_TOKEN" \
        timeout --kill-after=10 "$ST_TIMEOUT_SECS" \
        "$hardening_venv/bin/st" --config-file "$here/schemathesis.toml" \
            run "$SERVER_URL/openapi.json" \
            --checks all \
            --seed "$ST_SEED" \
            --max-examples "$ST_MAX_EXAMPLES" \
            --generation-database none \
            --workers 1 \
            --request-timeout 40 \
            --continue-on-failure \
            --no-color \
            --output-truncate false \
            --report junit --report-dir "$dir/report"
    ) >"$dir/st.out" 2>&1
    st_status=$?
    set -e
    echo "    took $((SECONDS - started)) s; st exit $st_status; output in $dir/st.out"
    server_stop
    if [ "$st_status" -ne 0 ]; then
        status=1
        echo "FAIL: schemathesis on $backend (exit $st_status):"
        # The failures and the summary; the whole output stays in st.out.
        sed -n '/^=* *FAILURES/,$p' "$dir/st.out" | head -n 400
        grep -q 'FAILURES' "$dir/st.out" || tail -n 80 "$dir/st.out"
    else
        tail -n 12 "$dir/st.out"
    fi
    server_log_has_no_panic "$SERVER_LOG" || status=1
done
exit "$status"
