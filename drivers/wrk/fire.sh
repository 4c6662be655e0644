# Sourced by drivers/bench.sh and drivers/profile.sh: runs one workload of
# the service under wrk, the lean C client the issue compares against, so
# that the two shared cores go to the server and the database rather than
# to our own Rust client.
#
# Expects $base (the server's URL) and $token (a bearer token) to be set.
# The Lua scripts beside this file build the requests; this file installs
# wrk, primes a replay key, and reads the one JSON line a script's done()
# prints.

wrk_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

# wrk comes from Debian (package `wrk`, 4.1); the package lists are only
# refreshed when the first install fails, since that is slow.
wrk_install() {
    command -v wrk >/dev/null && return 0
    echo "installing wrk" >&2
    apt-get install -y -qq wrk >/dev/null 2>&1 \
        || { apt-get update -qq >/dev/null && apt-get install -y -qq wrk >/dev/null; }
    command -v wrk >/dev/null || { echo "could not install wrk" >&2; return 1; }
}

# The one request a replay run sends, byte for byte: the body the key is
# primed with is the body every replay sends.
wrk_replay_body() { # door project key
    case "$1" in
        rest) printf '{"project_id":"%s","title":"wrk replay"}' "$2" ;;
        mcp) printf '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"create_ticket","arguments":{"project_id":"%s","title":"wrk replay","operation_id":"%s"}}}' "$2" "$3" ;;
    esac
}

# Sends the replay request once, so that the run measures replays only;
# fails unless that first attempt created the ticket.
wrk_prime() { # door key body
    local answer
    case "$1" in
        rest)
            answer="$(curl -sS -w '\n%{http_code}' -X POST "$base/v1/tickets" \
                -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
                -H "Idempotency-Key: $2" --data-binary "$3")"
            [ "${answer##*$'\n'}" = 201 ] && return 0 ;;
        mcp)
            answer="$(curl -sS -X POST "$base/mcp" \
                -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
                -H 'Accept: application/json, text/event-stream' -H 'MCP-Protocol-Version: 2025-06-18' \
                --data-binary "$3")"
            [[ "$answer" == *'"status":"created"'* ]] && return 0 ;;
    esac
    echo "could not prime the replay key $2 over $1: $answer" >&2
    return 1
}

# Fires one workload and prints the script's JSON line. `tag` (a slug,
# unique per run) is the project of every ticket the run makes and the
# prefix of every key: create keys are `tag-<thread>-<n>`, the replay key
# is `tag-primed`. wrk runs min(2, c) threads, one per core at most, with
# c connections shared between them.
wrk_run() { # door workload concurrency seconds tag
    local door="$1" workload="$2" c="$3" secs="$4" tag="$5" line key body
    local -a args
    case "$workload" in
        create) args=("$tag" "$tag") ;;
        replay)
            key="$tag-primed"
            body="$(wrk_replay_body "$door" "$tag" "$key")"
            wrk_prime "$door" "$key" "$body" || return 1
            if [ "$door" = rest ]; then args=("$key" "$body"); else args=("$body"); fi ;;
        *) echo "unknown workload $workload" >&2; return 1 ;;
    esac
    # A request slower than wrk's default 2 s timeout would be counted as a
    # socket error and left out of the latency; the server's own bounds
    # (lock wait 5 s) decide instead.
    line="$(wrk -t "$(( c < 2 ? c : 2 ))" -c "$c" -d "${secs}s" --timeout 10s \
        -s "$wrk_dir/${door}_${workload}.lua" "$base" -- "$token" "${args[@]}" | grep '^{' | tail -n 1)"
    if [ -z "$line" ]; then
        echo "wrk printed no report ($door $workload c=$c)" >&2
        return 1
    fi
    printf '%s\n' "$line"
}
