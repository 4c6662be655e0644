-- REST create: every request a new intended ticket, `POST /v1/tickets`
-- with a fresh `Idempotency-Key` (the run's prefix, the thread, a counter)
-- and a fresh title, the body shaped like the load tool's.
--
-- Usage: wrk -s rest_create.lua URL -- TOKEN PROJECT KEY_PREFIX
-- PROJECT (a slug) and KEY_PREFIX scope the run, so that bench.sh can
-- check afterwards, in the database, that each key made one ticket.

local common = dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "common.lua")

local project, prefix
local n = 0

setup = common.setup

function init(args)
  local token
  token, project, prefix = common.args(args, { "TOKEN", "PROJECT", "KEY_PREFIX" })
  common.bearer(token)
  wrk.method = "POST"
  wrk.path = "/v1/tickets"
  wrk.headers["Content-Type"] = "application/json"
end

function request()
  n = n + 1
  local tag = thread_no .. "-" .. n
  wrk.headers["Idempotency-Key"] = prefix .. "-" .. tag
  return wrk.format(nil, nil, nil,
    string.format('{"project_id":"%s","title":"wrk %s"}', project, tag))
end

done = common.done
