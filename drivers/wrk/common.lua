-- What the four wrk scripts in this folder share: a number per wrk thread
-- (so the keys each thread makes differ from every other thread's), the
-- per-thread failure counters, and done()'s one JSON line that bench.sh
-- and profile.sh read.
--
-- wrk runs setup() and done() in its main Lua state and init(), request()
-- and response() in one Lua state per thread; the main state keeps each
-- thread it set up, so that done() can read the thread's counters with
-- thread:get().

local common = {}

local threads = {}

-- setup(): numbers the threads 1, 2, … (global `thread_no` in each).
function common.setup(thread)
  threads[#threads + 1] = thread
  thread:set("thread_no", #threads)
end

-- init(args) helper: the script arguments after `--` (wrk puts the URL at
-- index 0), refusing to run with one missing.
function common.args(args, names)
  local values = {}
  for i, name in ipairs(names) do
    local value = args[i]
    if value == nil or value == "" then
      error("missing script argument " .. i .. " (" .. name .. "); expected: -- "
        .. table.concat(names, " "))
    end
    values[i] = value
  end
  return unpack(values)
end

-- The headers every request sends, besides the door's own.
function common.bearer(token)
  wrk.headers["Authorization"] = "Bearer " .. token
end

-- A response() for the scripts that read the answer (MCP: a JSON-RPC
-- error or a tool result that is not `success` arrives with HTTP 200).
-- Counts, per thread, answers that are not 2xx (`non_2xx`) and 2xx
-- answers whose body lacks `success` (`failures`). A plain substring
-- search: it costs far less than decoding the JSON.
function common.expect_in_body(success)
  non_2xx, failures = 0, 0
  return function(status, _, body)
    if status < 200 or status > 299 then
      non_2xx = non_2xx + 1
    elseif not string.find(body, success, 1, true) then
      failures = failures + 1
    end
  end
end

local function sum(name)
  local total, seen = 0, false
  for _, thread in ipairs(threads) do
    local value = thread:get(name)
    if value ~= nil then
      total, seen = total + value, true
    end
  end
  return total, seen
end

local function ms(micros)
  return string.format("%.3f", micros / 1000)
end

-- done(): one JSON line on stdout. `non_2xx` is counted by response()
-- where a script has one; otherwise it is wrk's own count of answers with
-- a status of 400 or more (these routes send no 1xx or 3xx). `throughput`
-- counts only successful requests; `errors` adds every kind of failure.
function common.done(summary, latency)
  local seconds = summary.duration / 1e6
  local errors = summary.errors
  local non_2xx, counted = sum("non_2xx")
  if not counted then
    non_2xx = errors.status
  end
  local failures = sum("failures")
  local socket = errors.connect + errors.read + errors.write + errors.timeout
  local ok = summary.requests - non_2xx - failures
  io.write(string.format(
    '{"client":"wrk","seconds":%.3f,"requests":%d,"ok":%d,"requests_per_s":%.1f,"throughput":%.1f,'
      .. '"latency_ms":{"p50":%s,"p90":%s,"p99":%s,"max":%s},"non_2xx":%d,"failures":%d,'
      .. '"socket_errors":{"connect":%d,"read":%d,"write":%d,"timeout":%d},"errors":%d}\n',
    seconds, summary.requests, ok, summary.requests / seconds, ok / seconds,
    ms(latency:percentile(50)), ms(latency:percentile(90)), ms(latency:percentile(99)), ms(latency.max),
    non_2xx, failures, errors.connect, errors.read, errors.write, errors.timeout,
    non_2xx + failures + socket))
end

return common
