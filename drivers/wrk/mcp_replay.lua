-- MCP replay: one primed `operation_id`, the byte-identical `tools/call`
-- of `create_ticket` every time, so every answer is the first one replayed.
-- The caller primes the key with the same BODY first.
--
-- Usage: wrk -s mcp_replay.lua URL -- TOKEN BODY
--
-- No request() function: wrk builds the request once per thread and sends
-- those same bytes every time. response() checks that each result says
-- `replayed` (a failed call can come back as HTTP 200).

local common = dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "common.lua")

setup = common.setup

function init(args)
  local token, body = common.args(args, { "TOKEN", "BODY" })
  common.bearer(token)
  wrk.method = "POST"
  wrk.path = "/mcp"
  wrk.headers["Content-Type"] = "application/json"
  wrk.headers["Accept"] = "application/json, text/event-stream"
  wrk.headers["MCP-Protocol-Version"] = "2025-06-18"
  wrk.body = body
end

response = common.expect_in_body('"status":"replayed"')

done = common.done
