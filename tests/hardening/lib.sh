# Shared by the hardening scripts (sourced, not run): the pinned Python
# venv, a real `tickets serve` on a free port over SQLite or a fresh
# PostgreSQL database, and the panic check of its log.
#
# Expects: $root (the repository) set by the caller, `set -euo pipefail`.

HARDENING_SCHEMATHESIS_VERSION="${HARDENING_SCHEMATHESIS_VERSION:-4.32.5}"
hardening_venv="$root/target/hardening-venv"
hardening_out="$root/target/hardening"
PG_ADMIN_URL="${TEST_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/postgres}"

# One SQL statement as the admin user ("does not exist, skipping" notices
# are noise here; set for psql only, never for the server under test).
pg_admin() {
    PGOPTIONS=--client-min-messages=warning psql "$PG_ADMIN_URL" -qAtc "$1" >/dev/null
}

# The venv with schemathesis pinned; made once and reused while the pinned
# version is what it holds (like tests/interop/run.sh does for mcp).
hardening_venv_ready() {
    if [ -x "$hardening_venv/bin/python" ] && "$hardening_venv/bin/python" -c "import sys; from importlib.metadata import version; sys.exit(version('schemathesis') != '$HARDENING_SCHEMATHESIS_VERSION')" 2>/dev/null; then
        return 0
    fi
    echo "==> Python venv with schemathesis==$HARDENING_SCHEMATHESIS_VERSION"
    rm -rf "$hardening_venv"
    python3 -m venv "$hardening_venv"
    "$hardening_venv/bin/pip" install --quiet --disable-pip-version-check \
        "schemathesis==$HARDENING_SCHEMATHESIS_VERSION"
}

# The `tickets` binary: $TICKETS_BIN if the caller built it, else built here.
hardening_binary() {
    if [ -z "${TICKETS_BIN:-}" ]; then
        echo "==> building tickets"
        cargo build --quiet --bin tickets
        TICKETS_BIN="$root/target/debug/tickets"
    fi
    export TICKETS_BIN
}

hardening_free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# State of the one server a script runs at a time.
server_pid=""
server_db=""
SERVER_URL=""
SERVER_TOKEN=""
SERVER_LOG=""

# server_start BACKEND LABEL: a fresh database (a temp SQLite file, or a
# PostgreSQL database created here), one tenant and token, `tickets serve`
# on a free loopback port with its log in $hardening_out/LABEL/server.log.
# Sets SERVER_URL, SERVER_TOKEN, SERVER_LOG.
server_start() {
    local backend="$1" label="$2" dir port
    dir="$hardening_out/$label"
    rm -rf "$dir"
    mkdir -p "$dir"
    case "$backend" in
        sqlite)
            export DATABASE_URL="sqlite:$dir/tickets.db"
            ;;
        postgres)
            server_db="tickets_hardening_${label//[^a-z0-9]/_}_$$"
            pg_admin "DROP DATABASE IF EXISTS $server_db WITH (FORCE)"
            pg_admin "CREATE DATABASE $server_db"
            export DATABASE_URL="${PG_ADMIN_URL%/*}/$server_db"
            ;;
        *) echo "unknown backend $backend" >&2; return 2 ;;
    esac
    "$TICKETS_BIN" tenant create acme >/dev/null 2>"$dir/cli.log"
    SERVER_TOKEN="$("$TICKETS_BIN" token issue acme 2>>"$dir/cli.log")"
    port="$(hardening_free_port)"
    SERVER_URL="http://127.0.0.1:$port"
    SERVER_LOG="$dir/server.log"
    NO_COLOR=1 "$TICKETS_BIN" serve --listen "127.0.0.1:$port" 2>"$SERVER_LOG" &
    server_pid=$!
    for _ in $(seq 1 100); do
        curl -fsS "$SERVER_URL/readyz" >/dev/null 2>&1 && break
        sleep 0.1
    done
    if ! curl -fsS "$SERVER_URL/readyz" >/dev/null; then
        echo "the server did not become ready; its log:" >&2
        tail -n 50 "$SERVER_LOG" >&2
        return 1
    fi
    export SERVER_URL SERVER_TOKEN SERVER_LOG
}

# Stops the server (by its pid) and drops its PostgreSQL database.
server_stop() {
    if [ -n "$server_pid" ]; then
        # A process stopped by the signal reports 143: not a failure.
        kill "$server_pid" 2>/dev/null && { wait "$server_pid" 2>/dev/null || true; }
        server_pid=""
    fi
    if [ -n "$server_db" ]; then
        pg_admin "DROP DATABASE IF EXISTS $server_db WITH (FORCE)" 2>/dev/null || true
        server_db=""
    fi
}

# Fails (and shows the lines) if the log mentions a panic.
server_log_has_no_panic() {
    local log="$1"
    if grep -qi panic "$log"; then
        echo "FAIL: the server log $log mentions a panic:" >&2
        grep -i -m 20 -B 2 -A 8 panic "$log" >&2
        return 1
    fi
    echo "server log: no panic ($log)"
}
