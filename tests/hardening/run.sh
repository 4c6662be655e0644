#!/usr/bin/env bash
# Hardening: the classes of defect the robustness and MCP reviews found,
# held in place against a real `tickets serve`.
#
# 1. schemathesis.sh: the OpenAPI document against the REST door, every
#    check, over SQLite and PostgreSQL (a truthful document; no 5xx).
# 2. mcp_fuzz.py: hostile and careless clients against /mcp, over SQLite
#    and PostgreSQL (JSON-RPC errors with the right status and code, tool
#    arguments refused by name, refusals that leave the key unused, no 5xx).
# Both check the server's log for panics.
#
# Usage: tests/hardening/run.sh     (from anywhere; builds the binary once)
# Output of each part: target/hardening/ (kept after the run).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cd "$root"
# shellcheck source=tests/hardening/lib.sh
source "$here/lib.sh"
trap server_stop EXIT

echo "==> building tickets"
cargo build --quiet --bin tickets
export TICKETS_BIN="$root/target/debug/tickets"
hardening_venv_ready

status=0
started=$SECONDS
bash "$here/schemathesis.sh" sqlite postgres || status=1
echo "==> schemathesis: $((SECONDS - started)) s"

for backend in sqlite postgres; do
    started=$SECONDS
    echo "==> MCP fuzz on $backend"
    server_start "$backend" "mcp-fuzz-$backend"
    python3 "$here/mcp_fuzz.py" --url "$SERVER_URL" --token "$SERVER_TOKEN" \
        --server-log "$SERVER_LOG" | tee "$hardening_out/mcp-fuzz-$backend/fuzz.out" || status=1
    server_stop
    echo "==> MCP fuzz on $backend: $((SECONDS - started)) s"
done

if [ "$status" -ne 0 ]; then
    echo "hardening: FAILED (details above; logs in $hardening_out/)"
fi
exit "$status"
