-- MCP create: every request a new intended ticket, a JSON-RPC `tools/call`
-- of `create_ticket` on `POST /mcp` with a fresh `operation_id` (the run's
-- prefix, the thread, a counter) and a fresh title, the arguments shaped
-- like the load tool's. The door is stateless and answers plain JSON: no
-- session, no initialize handshake.
--
-- Usage: wrk -s mcp_create.lua URL -- TOKEN PROJECT KEY_PREFIX
--
-- A failed call can come back as HTTP 200 (a JSON-RPC error, or a tool
-- result with another status), so response() checks that the result says
-- `created`.

local common = dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "common.lua")

local project, prefix
local n = 0

setup = common.setup

function init(args)
  local token
  token, project, prefix = common.args(args, { "TOKEN", "PROJECT", "KEY_PREFIX" })
  common.bearer(token)
  wrk.method = "POST"
  wrk.path = "/mcp"
  wrk.headers["Content-Type"] = "application/json"
  wrk.headers["Accept"] = "application/json, text/event-stream"
  wrk.headers["MCP-Protocol-Version"] = "2025-06-18"
end

function request()
  n = n + 1
  local tag = thread_no .. "-" .. n
  return wrk.format(nil, nil, nil, string.format(
    '{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"create_ticket",'
      .. '"arguments":{"project_id":"%s","title":"wrk %s","operation_id":"%s-%s"}}}',
    n, project, tag, prefix, tag))
end

-- The structured result's status; the ticket's own `status` is `open`, and
-- the text content carries the same JSON escaped, so only the tool
-- result's field matches.
response = common.expect_in_body('"status":"created"')

done = common.done
