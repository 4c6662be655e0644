#!/usr/bin/env bash
# The remote backend with curl: a lost provider answer is a 202 that points
# at the operation, reading it reconciles, the retry replays, and the
# provider simulator's own count says one ticket. Then an outage: 503, key
# kept. Needs BASE_URL (a server with TICKET_BACKEND=remote), SIM_URL (the
# provider simulator it uses) and ACME_TOKEN (remote.sh sets them).
set -uo pipefail
passed=0
failed=0
check() { # name, expected, actual
    if [ "$2" = "$3" ]; then
        passed=$((passed + 1)); echo "PASS $1"
    else
        failed=$((failed + 1)); echo "FAIL $1: expected [$2], got [$3]"
    fi
}
post() { # key, body -> writes headers to $hdr, body to $out
    curl -sS -o "$out" -D "$hdr" "$BASE_URL/v1/tickets" \
        -H "Authorization: Bearer $ACME_TOKEN" -H "Idempotency-Key: $1" \
        -H 'Content-Type: application/json' -d "$2"
}
header() { grep -i "^$1:" "$hdr" | head -n1 | cut -d' ' -f2- | tr -d '\r'; }
status() { head -n1 "$hdr" | cut -d' ' -f2; }
json() { python3 -c "import json,sys; d=json.load(open('$out')); print($1)"; }
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
out="$tmp/body"; hdr="$tmp/headers"
key="$(cat /proc/sys/kernel/random/uuid)"
title="curl remote $key"
body="{\"project_id\":\"ops\",\"title\":\"$title\"}"

curl -fsS -o /dev/null -X POST "$SIM_URL/_sim/faults" -H 'Content-Type: application/json' \
    -d "{\"title_contains\":\"$key\",\"fault\":{\"kind\":\"commit_then_drop\"}}"
post "$key" "$body"
check "a lost provider answer is 202" 202 "$(status)"
location="$(header location)"
check "202 points at the operation" "/v1/operations/create_ticket/$key" "$location"
check "202 says the outcome is unknown" unknown "$(json "d['state']")"
check "202 says never to use a new key" True "$(json "'Never use a new key' in d['next_step']")"

# A read reconciles it, unless the background reconciler is at it at that
# very moment: then the read answers `unknown` at once and is asked again,
# as any client would (bounded: 5 s).
for _ in $(seq 1 25); do
    curl -sS -o "$out" "$BASE_URL$location" -H "Authorization: Bearer $ACME_TOKEN"
    [ "$(json "d['state']")" = unknown ] || break
    sleep 0.2
done
check "reading the status reconciles it" succeeded "$(json "d['state']")"
check "the status shows the reconciliation" found "$(json "d['effect']['last_reconciliation']['result']")"
ref="$(json "d['effect']['external_reference']")"

post "$key" "$body"
check "the retry answers 201" 201 "$(status)"
check "the retry is a replay" true "$(header idempotent-replayed)"
curl -sS -o "$out" "$SIM_URL/_sim/counts"
check "the provider holds one ticket" 1 "$(json "sum(r['tickets'] for r in d['by_external_ref'] if r['external_ref'] == '$ref')")"

down="$(cat /proc/sys/kernel/random/uuid)"
curl -fsS -o /dev/null -X POST "$SIM_URL/_sim/outage" -H 'Content-Type: application/json' -d '{"ms": 700}'
post "$down" "{\"project_id\":\"ops\",\"title\":\"curl outage $down\"}"
check "an unreachable provider is 503" 503 "$(status)"
check "503 is provider-unavailable" /problems/provider-unavailable "$(json "d['type']")"
check "503 has Retry-After" 5 "$(header retry-after)"
sleep 1
post "$down" "{\"project_id\":\"ops\",\"title\":\"curl outage $down\"}"
check "the kept key creates once the provider is back" 201 "$(status)"

echo "curl (remote backend): $passed passed, $failed failed"
[ "$failed" -eq 0 ]
