#!/usr/bin/env bash
# OAuth against a real authorization server: `oauth2-mock-server` (npm,
# pinned, installed by this script under target/oauth-server) started here,
# a `tickets` server in resource-server mode trusting it, then
#   - oauth_cases.py: every case of issue 18 on both doors (valid, expired,
#     another audience, an untrusted issuer, an unknown kid then a rotated
#     key, a missing scope, a tenant claim missing or unknown, static tokens,
#     garbage, alg none, HS256, oversized, a JWKS that is slow or down);
#   - mcp_sdk_oauth.py: the official Python MCP SDK signs in on its own
#     (authorization code + PKCE with a scope step-up, and client
#     credentials) and calls create_ticket and get_operation_status;
#   - without OAuth: the SDK's OAuth client, pointed at a server with no
#     identity provider, fails saying to send a static token.
#
# Usage: tests/oauth/run.sh   (needs node >= 20.19 and npm; the Python venv
# is tests/interop's, made here if missing)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cd "$root"

MOCK_VERSION="${OAUTH_MOCK_SERVER_VERSION:-8.2.3}"   # the last release for node 20
MCP_SDK_VERSION="${MCP_SDK_VERSION:-2.3.0}"
prefix="$root/target/oauth-server"
venv="$root/target/interop-venv"
work="$(mktemp -d)"
idp_pid=""
server_pid=""
plain_pid=""
cleanup() {
    for pid in $server_pid $plain_pid $idp_pid; do
        kill "$pid" 2>/dev/null && { wait "$pid" 2>/dev/null || true; }
    done
    rm -rf "$work"
}
trap cleanup EXIT
free_port() { "$venv/bin/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_ready() {
    for _ in $(seq 1 100); do
        curl -fsS "$1/readyz" >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    echo "no answer from $1/readyz after 10 s"
    return 1
}

echo "==> oauth2-mock-server@$MOCK_VERSION under target/"
entry="$prefix/node_modules/oauth2-mock-server/dist/index.mjs"
installed="$(node -p "require('$prefix/node_modules/oauth2-mock-server/package.json').version" 2>/dev/null || true)"
if [ "$installed" != "$MOCK_VERSION" ]; then
    rm -rf "$prefix"
    mkdir -p "$prefix"
    npm install --prefix "$prefix" --no-audit --no-fund --no-save --loglevel=error \
        "oauth2-mock-server@$MOCK_VERSION" >/dev/null
fi

echo "==> Python venv with mcp==$MCP_SDK_VERSION"
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import mcp, sys; from importlib.metadata import version; sys.exit(version('mcp') != '$MCP_SDK_VERSION')" 2>/dev/null; then
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check "mcp==$MCP_SDK_VERSION"
fi

echo "==> building tickets"
cargo build --quiet --bin tickets
tickets="$root/target/debug/tickets"

echo "==> the authorization servers"
OAUTH_MOCK_SERVER_ENTRY="$entry" node "$here/auth_server.mjs" >"$work/idp.out" 2>"$work/idp.log" &
idp_pid=$!
for _ in $(seq 1 100); do
    [ -s "$work/idp.out" ] && break
    sleep 0.1
done
[ -s "$work/idp.out" ] || { cat "$work/idp.log"; exit 1; }
field() { "$venv/bin/python" -c "import json,sys; print(json.load(open('$work/idp.out'))['$1'])"; }
TRUSTED="$(field trusted)"
UNTRUSTED="$(field untrusted)"
SLOW="$(field slow)"
CONTROL_URL="$(field control)"
DOWN="http://127.0.0.1:$(free_port)"    # nothing listens there
export TRUSTED UNTRUSTED SLOW DOWN CONTROL_URL
echo "trusted $TRUSTED, untrusted $UNTRUSTED, slow $SLOW, down $DOWN"

export DATABASE_URL="sqlite:$work/tickets.db"
"$tickets" tenant create acme >/dev/null 2>&1
ACME_TOKEN="$("$tickets" token issue acme 2>/dev/null)"
ACME_READ_TOKEN="$("$tickets" token issue acme --scope tickets:read 2>/dev/null)"
"$tickets" oauth map --issuer "$TRUSTED" --subject ci-bot --tenant acme
export ACME_TOKEN ACME_READ_TOKEN

port="$(free_port)"
export BASE_URL="http://127.0.0.1:$port"
export AUDIENCE="$BASE_URL/mcp"
export COOLDOWN_SECS=1
OAUTH_ISSUERS="$TRUSTED,$SLOW,$DOWN" OAUTH_AUDIENCE="$AUDIENCE" OAUTH_TENANT_CLAIM=org_id \
    OAUTH_JWKS_TIMEOUT_MS=500 OAUTH_JWKS_COOLDOWN_MS=1000 \
    "$tickets" serve --listen "127.0.0.1:$port" 2>"$work/server.log" &
server_pid=$!
wait_ready "$BASE_URL" || { cat "$work/server.log"; exit 1; }

status=0
: >"$work/checks.log"
echo "==> every case against oauth2-mock-server, on both doors"
"$venv/bin/python" "$here/oauth_cases.py" 2>&1 | tee -a "$work/checks.log" || status=1
echo "==> the Python MCP SDK signs in on its own (authorization code + PKCE with step-up; client credentials)"
"$venv/bin/python" "$here/mcp_sdk_oauth.py" 2>&1 | tee -a "$work/checks.log" || status=1

echo "==> without OAuth: the SDK's sign-in fails saying to send a static token"
plain_port="$(free_port)"
PLAIN_URL="http://127.0.0.1:$plain_port"
"$tickets" serve --listen "127.0.0.1:$plain_port" 2>"$work/plain.log" &
plain_pid=$!
wait_ready "$PLAIN_URL"
if BASE_URL="$PLAIN_URL" "$venv/bin/python" - <<'EOF' 2>&1 | tee -a "$work/checks.log"
import asyncio, os, sys
import httpx2
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientMetadata

class Nothing:
    async def get_tokens(self): return None
    async def set_tokens(self, t): pass
    async def get_client_info(self): return None
    async def set_client_info(self, c): pass

async def main():
    url = os.environ["BASE_URL"] + "/mcp"
    async def never(*_): raise AssertionError("sent to a sign-in page")
    provider = OAuthClientProvider(url, OAuthClientMetadata(redirect_uris=["http://127.0.0.1:9/cb"]), Nothing(), never, never)
    try:
        async with httpx2.AsyncClient(auth=provider) as http:
            async with Client(streamable_http_client(url, http_client=http), mode="2026-07-28", cache=None) as c:
                await c.list_tools()
    except BaseException as e:  # the SDK wraps it in an exception group
        said = repr(e)
        while hasattr(e, "exceptions") and e.exceptions:
            e = e.exceptions[0]
        said += " " + str(e)
        if "static API token" in said and "sent to a sign-in page" not in said:
            print("PASS the SDK's OAuth client stops before any sign-in page, saying: send a static API token")
            return 0
        print(f"FAIL unexpected error: {said}")
        return 1
    print("FAIL connected without credentials")
    return 1

sys.exit(asyncio.run(main()))
EOF
then :; else status=1; fi

echo "==> the servers' logs: no panic"
for log in "$work/server.log" "$work/plain.log"; do
    if grep -i panic "$log"; then
        echo "FAIL: a panic in $(basename "$log")" | tee -a "$work/checks.log"
        status=1
    fi
done
if [ "$status" -ne 0 ]; then
    echo "--- server log ---"
    tail -n 60 "$work/server.log"
    echo "--- authorization server log ---"
    tail -n 30 "$work/idp.log"
    echo "--- the server without OAuth: log ---"
    tail -n 30 "$work/plain.log"
    # Last, so that a shortened CI log still ends with what failed.
    echo "--- the checks that failed ---"
    grep -E '^FAIL' "$work/checks.log" || echo "(no FAIL line: see the output above)"
fi
exit "$status"
