-- REST replay: one primed key, the byte-identical request every time, so
-- every answer is the first one replayed (201, `Idempotent-Replayed:
-- true`). The caller primes the key with the same KEY and BODY first.
--
-- Usage: wrk -s rest_replay.lua URL -- TOKEN KEY BODY
--
-- No request() function: wrk then builds the request once per thread from
-- wrk.method/path/headers/body and sends those same bytes every time.

local common = dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "common.lua")

setup = common.setup

function init(args)
  local token, key, body = common.args(args, { "TOKEN", "KEY", "BODY" })
  common.bearer(token)
  wrk.method = "POST"
  wrk.path = "/v1/tickets"
  wrk.headers["Content-Type"] = "application/json"
  wrk.headers["Idempotency-Key"] = key
  wrk.body = body
end

done = common.done
