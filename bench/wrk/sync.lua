-- POST a sync batch of `size` subscribes to feeds never seen before, each with a
-- fresh UUIDv4-shaped action_id:
--   wrk <url> -s sync.lua -- <token or ""> <run nonce (int)> <batch size>
local counter = 0
local threads = 0

setup = function(thread)
  threads = threads + 1
  thread:set("thread_no", threads)
end

init = function(args)
  token = args[1]
  nonce = tonumber(args[2])
  size = tonumber(args[3]) or 30
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
  if token and token ~= "" then
    wrk.headers["Authorization"] = "Bearer " .. token
  end
  wrk.headers["Client-ID"] = string.format("%08x-%04x-4000-8000-000000000000", nonce, thread_no)
end

request = function()
  counter = counter + 1
  local parts = {}
  for i = 1, size do
    parts[i] = string.format(
      '{"action_id":"%08x-%04x-4%03x-8%03x-%012x","type":"subscription",' ..
      '"action":"subscribe","occurred_at":"2026-01-01T00:00:00Z",' ..
      '"data":{"feed_url":"https://bench.example/%x/%d/%d/%d/feed.xml"}}',
      nonce, thread_no, i, i, counter, nonce, thread_no, counter, i)
  end
  return wrk.format(nil, nil, nil, '{"requests":[' .. table.concat(parts, ",") .. ']}')
end
