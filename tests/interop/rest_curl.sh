#!/usr/bin/env bash
# The README's walkthrough, with curl, asserting each answer.
# Needs BASE_URL, ACME_TOKEN and GLOBEX_TOKEN (run.sh sets them).
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
post() { # token, key, body -> writes headers to $hdr, body to $out
    curl -sS -o "$out" -D "$hdr" "$BASE_URL/v1/tickets" \
        -H "Authorization: Bearer $1" -H "Idempotency-Key: $2" \
        -H 'Content-Type: application/json' -d "$3"
}
header() { grep -i "^$1:" "$hdr" | head -n1 | cut -d' ' -f2- | tr -d '\r'; }
status() { head -n1 "$hdr" | cut -d' ' -f2; }
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
out="$tmp/body"; hdr="$tmp/headers"
key="$(cat /proc/sys/kernel/random/uuid)"
body='{"project_id":"ops","title":"Disk full on db-1"}'

post "$ACME_TOKEN" "$key" "$body"
check "create answers 201" 201 "$(status)"
location="$(header location)"; first="$(cat "$out")"
check "create has a Location" "/v1/tickets/" "${location:0:12}"

post "$ACME_TOKEN" "$key" "$body"
check "retry answers 201" 201 "$(status)"
check "retry is marked replayed" true "$(header idempotent-replayed)"
check "retry has the same Location" "$location" "$(header location)"
check "retry body is byte-identical" "$first" "$(cat "$out")"

post "$ACME_TOKEN" "\"$key\"" "$body"
check "the quoted key is the same key" true "$(header idempotent-replayed)"

post "$ACME_TOKEN" "$key" '{"project_id":"ops","title":"Disk full on db-2"}'
check "changed body answers 422" 422 "$(status)"
check "conflict is a problem document" application/problem+json "$(header content-type)"

op="$(curl -sS -o "$out" -w '%{http_code}' "$BASE_URL/v1/operations/create_ticket/$key" -H "Authorization: Bearer $ACME_TOKEN")"
check "operation lookup answers 200" 200 "$op"
check "operation lookup names the ticket" "\"state\":\"succeeded\"" "$(grep -o '"state":"succeeded"' "$out")"

fresh="$(cat /proc/sys/kernel/random/uuid)"
op="$(curl -sS -o /dev/null -w '%{http_code}' "$BASE_URL/v1/operations/create_ticket/$fresh" -H "Authorization: Bearer $ACME_TOKEN")"
check "unknown key answers 404 (retry is safe)" 404 "$op"

post "$GLOBEX_TOKEN" "$key" "$body"
check "same key, other tenant: a new ticket" 201 "$(status)"
check "same key, other tenant: not a replay" "" "$(header idempotent-replayed)"

code="$(curl -sS -o /dev/null -w '%{http_code}' "$BASE_URL/v1/tickets" -H "Authorization: Bearer $ACME_TOKEN" -H 'Content-Type: application/json' -d "$body")"
check "no Idempotency-Key answers 400" 400 "$code"
code="$(curl -sS -o /dev/null -w '%{http_code}' "$BASE_URL/v1/tickets" -H "Idempotency-Key: $fresh" -H 'Content-Type: application/json' -d "$body")"
check "no token answers 401" 401 "$code"
code="$(curl -sS -o /dev/null -w '%{http_code}' "$BASE_URL/v1/tickets" -H "Authorization: Bearer $ACME_TOKEN" -H "Idempotency-Key: $fresh" -H 'Content-Type: text/plain' -d "$body")"
check "wrong content type answers 415" 415 "$code"

# The lifecycle: a conditional change, a move, a comment; each replayed.
ticket="$BASE_URL$location"
send() { # method, url, key, content type, body, [If-Match] -> $hdr, $out
    local extra=()
    [ -n "${6:-}" ] && extra=(-H "If-Match: $6")
    curl -sS -o "$out" -D "$hdr" -X "$1" "$2" \
        -H "Authorization: Bearer $ACME_TOKEN" -H "Idempotency-Key: $3" \
        -H "Content-Type: $4" "${extra[@]}" -d "$5"
}
change="$(cat /proc/sys/kernel/random/uuid)"
send PATCH "$ticket" "$change" application/merge-patch+json '{"assignee":"Ada"}' '"1"'
check "PATCH with If-Match answers 200" 200 "$(status)"
check "PATCH answers the new ETag" '"2"' "$(header etag)"
changed="$(cat "$out")"
send PATCH "$ticket" "$change" application/merge-patch+json '{"assignee":"Ada"}' '"1"'
check "PATCH retry answers 200" 200 "$(status)"
check "PATCH retry is marked replayed" true "$(header idempotent-replayed)"
check "PATCH retry has the first ETag" '"2"' "$(header etag)"
check "PATCH retry body is byte-identical" "$changed" "$(cat "$out")"
stale="$(cat /proc/sys/kernel/random/uuid)"
send PATCH "$ticket" "$stale" application/merge-patch+json '{"assignee":"Bob"}' '"1"'
check "a stale If-Match answers 412" 412 "$(status)"
check "412 is version-mismatch" '"type":"/problems/version-mismatch"' "$(grep -o '"type":"/problems/version-mismatch"' "$out")"
op="$(curl -sS -o /dev/null -w '%{http_code}' "$BASE_URL/v1/operations/update_ticket/$stale" -H "Authorization: Bearer $ACME_TOKEN")"
check "the stale change used no key" 404 "$op"

move="$(cat /proc/sys/kernel/random/uuid)"
send POST "$ticket/transitions" "$move" application/json '{"to":"closed"}'
check "an illegal move answers 409" 409 "$(status)"
check "409 is transition-not-allowed" '"type":"/problems/transition-not-allowed"' "$(grep -o '"type":"/problems/transition-not-allowed"' "$out")"
check "409 names the allowed moves" '"allowed_moves":["in_progress"]' "$(grep -o '"allowed_moves":\[[^]]*\]' "$out")"
check "transition-not-allowed has no Retry-After" "" "$(header retry-after)"
send POST "$ticket/transitions" "$move" application/json '{"to":"in_progress"}'
check "a legal move with the same key answers 200" 200 "$(status)"
check "the move answers the new ETag" '"3"' "$(header etag)"
moved="$(cat "$out")"
send POST "$ticket/transitions" "$move" application/json '{"to":"in_progress"}'
check "move retry is marked replayed" true "$(header idempotent-replayed)"
check "move retry body is byte-identical" "$moved" "$(cat "$out")"

note="$(cat /proc/sys/kernel/random/uuid)"
send POST "$ticket/comments" "$note" application/json '{"body":"Rotating logs."}'
check "a comment answers 201" 201 "$(status)"
comment_location="$(header location)"
check "the comment has a Location" "$location/comments/" "${comment_location:0:$((${#location} + 10))}"
commented="$(cat "$out")"
send POST "$ticket/comments" "$note" application/json '{"body":"Rotating logs."}'
check "comment retry answers 201" 201 "$(status)"
check "comment retry is marked replayed" true "$(header idempotent-replayed)"
check "comment retry has the same Location" "$comment_location" "$(header location)"
check "comment retry body is byte-identical" "$commented" "$(cat "$out")"
code="$(curl -sS -o "$out" -w '%{http_code}' "$BASE_URL$comment_location" -H "Authorization: Bearer $ACME_TOKEN")"
check "the comment's Location answers 200" 200 "$code"
check "the comment reads as it was answered" "$commented" "$(cat "$out")"
entries="$(curl -sS "$ticket/history" -H "Authorization: Bearer $ACME_TOKEN" | grep -o '"action":' | wc -l | tr -d ' ')"
check "history: create, change, move, comment (no replays)" 4 "$entries"

count="$(curl -sS "$BASE_URL/v1/tickets?limit=200" -H "Authorization: Bearer $ACME_TOKEN" | grep -o '"id":' | wc -l | tr -d ' ')"
check "acme has exactly one ticket" 1 "$count"
code="$(curl -sS -o "$out" -w '%{http_code}' --compressed "$BASE_URL/openapi.json")"
check "OpenAPI document is served" 200 "$code"

echo "curl: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
