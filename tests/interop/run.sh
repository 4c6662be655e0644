#!/usr/bin/env bash
# Interop: drive a real `tickets` server with clients nobody here wrote:
# curl for the REST door, and the official Python `mcp` SDK (from PyPI, in a
# venv this script makes) for the MCP door over Streamable HTTP (2026-07-28
# and the initialize-based revisions) and over stdio; the README's host
# configurations started as they say; server.json against the MCP registry's
# schema (jsonschema, in the same venv).
#
# Usage: tests/interop/run.sh            (from anywhere; builds what it needs)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cd "$root"

MCP_SDK_VERSION="${MCP_SDK_VERSION:-2.3.0}"
venv="$root/target/interop-venv"
work="$(mktemp -d)"
server_pid=""
remote_pid=""
slow_pid=""
defaults_pid=""
sim_pid=""
window_pid=""
cleanup() {
    # A process stopped by the signal reports 143: that is not a failure of
    # the run, and must not become its exit status.
    for pid in $server_pid $remote_pid $slow_pid $defaults_pid $sim_pid $window_pid; do
        kill "$pid" 2>/dev/null && { wait "$pid" 2>/dev/null || true; }
    done
    rm -rf "$work"
}
trap cleanup EXIT
# Waits (up to 10 s) for the server at $1 to answer /readyz.
wait_ready() {
    for _ in $(seq 1 100); do
        curl -fsS "$1/readyz" >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    echo "no answer from $1/readyz after 10 s"
    return 1
}

echo "==> building tickets and double-fire"
cargo build --quiet --bin tickets --bin double-fire --bin provider-sim
tickets="$root/target/debug/tickets"

echo "==> Python venv with mcp==$MCP_SDK_VERSION"
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import mcp, jsonschema, sys; from importlib.metadata import version; sys.exit(version('mcp') != '$MCP_SDK_VERSION')" 2>/dev/null; then
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check "mcp==$MCP_SDK_VERSION" jsonschema
fi

export DATABASE_URL="sqlite:$work/tickets.db"
"$tickets" tenant create acme >/dev/null 2>&1
"$tickets" tenant create globex >/dev/null 2>&1
ACME_TOKEN="$("$tickets" token issue acme 2>/dev/null)"
GLOBEX_TOKEN="$("$tickets" token issue globex 2>/dev/null)"
export ACME_TOKEN GLOBEX_TOKEN

port="$("$venv/bin/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
export BASE_URL="http://127.0.0.1:$port"
"$tickets" serve --listen "127.0.0.1:$port" 2>"$work/server.log" &
server_pid=$!
for _ in $(seq 1 100); do
    curl -fsS "$BASE_URL/healthz" >/dev/null 2>&1 && break
    sleep 0.1
done
curl -fsS "$BASE_URL/readyz" >/dev/null || { cat "$work/server.log"; exit 1; }

status=0
echo "==> REST door with curl"
bash "$here/rest_curl.sh" || status=1
echo "==> MCP door with the Python SDK (HTTP and stdio)"
TICKETS_BIN="$tickets" "$venv/bin/python" "$here/mcp_sdk.py" || status=1
echo "==> the README's MCP host configurations, started as each says (the Python SDK's stdio and HTTP clients; a database and server of their own)"
TICKETS_BIN="$tickets" "$venv/bin/python" "$here/host_configs.py" || status=1
echo "==> server.json against the MCP registry's schema (vendored), the workspace version and mcp-stdio's settings"
TICKETS_BIN="$tickets" "$venv/bin/python" "$here/server_json.py" || status=1
echo "==> the double-fire binary against the same server (checks 1-7; 8 and 9 need a fault build and two instances, 24 a short replay window)"
"$root/target/debug/double-fire" --url "$BASE_URL" --token "$ACME_TOKEN" --other-token "$GLOBEX_TOKEN" || status=1

# Check 24 waits out the replay window in real time, so it gets a server of
# its own (and a database of its own, with its own tenant) whose keys replay
# for 3 s; the other checks stay on the server above, where a slow step can
# never outlast a window.
echo "==> check 24 against a server with --replay-window-secs 3: expired, one ticket"
window_db="sqlite:$work/window.db"
DATABASE_URL="$window_db" "$tickets" tenant create acme >/dev/null 2>&1
WINDOW_TOKEN="$(DATABASE_URL="$window_db" "$tickets" token issue acme 2>/dev/null)"
window_port="$("$venv/bin/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
WINDOW_URL="http://127.0.0.1:$window_port"
DATABASE_URL="$window_db" "$tickets" serve --listen "127.0.0.1:$window_port" \
    --replay-window-secs 3 2>"$work/window.log" &
window_pid=$!
wait_ready "$WINDOW_URL"
"$root/target/debug/double-fire" --url "$WINDOW_URL" --token "$WINDOW_TOKEN" --only 24 || status=1
echo "==> check 24 sabotaged (--fresh-key-retries): it must fail, with a second ticket"
if "$root/target/debug/double-fire" --url "$WINDOW_URL" --token "$WINDOW_TOKEN" --only 24 \
    --fresh-key-retries >"$work/window-sabotage.out"; then
    cat "$work/window-sabotage.out"
    echo "FAIL: the sabotaged check 24 passed"
    status=1
else
    cat "$work/window-sabotage.out"
    if [ "$(grep -c '^FAIL 24 .*expected 1 effect(s), found 2' "$work/window-sabotage.out")" -ne 2 ]; then
        echo "FAIL: the sabotaged check 24 did not fail with a second ticket through both doors"
        status=1
    fi
fi

echo "==> the remote ticket backend: the provider simulator and a second server"
"$root/target/debug/provider-sim" --listen 127.0.0.1:0 --keys ignore >"$work/sim.out" 2>"$work/sim.log" &
sim_pid=$!
for _ in $(seq 1 100); do
    grep -q "listening on" "$work/sim.out" 2>/dev/null && break
    sleep 0.1
done
export SIM_URL="$(sed -n 's/.*listening on \(http:[^ ]*\).*/\1/p' "$work/sim.out")"
remote_port="$("$venv/bin/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
REMOTE_URL="http://127.0.0.1:$remote_port"
TICKET_BACKEND=remote PROVIDER_URL="$SIM_URL" PROVIDER_TIMEOUT_MS=500 \
    PROVIDER_MAX_INFLIGHT_MS=1500 RECONCILE_EVERY_MS=200 \
    "$tickets" serve --listen "127.0.0.1:$remote_port" 2>"$work/remote.log" &
remote_pid=$!
wait_ready "$REMOTE_URL"
# The same backend, with a request timeout shorter than a slow provider's
# answer: the MCP SDK must be able to read the timeout error.
slow_port="$("$venv/bin/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
export SLOW_URL="http://127.0.0.1:$slow_port"
TICKET_BACKEND=remote PROVIDER_URL="$SIM_URL" PROVIDER_TIMEOUT_MS=5000 REQUEST_TIMEOUT_SECS=1 \
    RECONCILE_EVERY_MS=200 \
    "$tickets" serve --listen "127.0.0.1:$slow_port" 2>"$work/slow.log" &
slow_pid=$!
wait_ready "$SLOW_URL"
echo "==> REST door over the remote backend with curl"
BASE_URL="$REMOTE_URL" bash "$here/rest_remote_curl.sh" || status=1
echo "==> MCP door over the remote backend with the Python SDK"
BASE_URL="$REMOTE_URL" "$venv/bin/python" "$here/mcp_sdk_remote.py" || status=1
echo "==> MCP tasks over the remote backend with the Python SDK (and, on the slow server, a write slower than the bound)"
BASE_URL="$REMOTE_URL" "$venv/bin/python" "$here/mcp_sdk_tasks.py" || status=1
echo "==> the double-fire binary with the provider's faults (checks 10-15; 16 needs a provider that honours keys, 17 a restartable fault build)"
"$root/target/debug/double-fire" --url "$REMOTE_URL" --token "$ACME_TOKEN" --other-token "$GLOBEX_TOKEN" \
    --provider-url "$SIM_URL" --provider-hang-ms 1000 --settle-within-secs 10 || status=1
echo "==> the same checks with every setting at its default, as the README starts it (create_ticket: about 90 s; the driver reads the server's defaults)"
defaults_port="$("$venv/bin/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
DEFAULTS_URL="http://127.0.0.1:$defaults_port"
# A database of its own: the other remote servers reconcile with shorter
# bounds, and must not judge effects this one still has in flight.
defaults_db="sqlite:$work/defaults.db"
DATABASE_URL="$defaults_db" "$tickets" tenant create acme >/dev/null 2>&1
DATABASE_URL="$defaults_db" "$tickets" tenant create globex >/dev/null 2>&1
DEFAULTS_ACME="$(DATABASE_URL="$defaults_db" "$tickets" token issue acme 2>/dev/null)"
DEFAULTS_GLOBEX="$(DATABASE_URL="$defaults_db" "$tickets" token issue globex 2>/dev/null)"
DATABASE_URL="$defaults_db" TICKET_BACKEND=remote PROVIDER_URL="$SIM_URL" \
    "$tickets" serve --listen "127.0.0.1:$defaults_port" 2>"$work/defaults.log" &
defaults_pid=$!
wait_ready "$DEFAULTS_URL"
"$root/target/debug/double-fire" --url "$DEFAULTS_URL" --token "$DEFAULTS_ACME" \
    --other-token "$DEFAULTS_GLOBEX" --provider-url "$SIM_URL" --action create_ticket || status=1

echo "==> the servers' logs: no panic"
for log in "$work/server.log" "$work/remote.log" "$work/slow.log" "$work/defaults.log" "$work/window.log"; do
    if grep -i panic "$log"; then
        echo "FAIL: a panic in $(basename "$log")"
        status=1
    fi
done

if [ "$status" -ne 0 ]; then
    echo "--- server log ---"
    tail -n 50 "$work/server.log"
    echo "--- remote server log ---"
    tail -n 50 "$work/remote.log"
fi
exit "$status"
