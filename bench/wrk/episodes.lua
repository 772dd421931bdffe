-- POST /api/2/episodes/<user>.json: `size` play actions on episodes never seen before
-- (AntennaPod's batch), with a gpodder session cookie:
--   wrk <url> -s episodes.lua -- <sessionid> <run nonce (int)> <batch size>
local counter = 0
local threads = 0

setup = function(thread)
  threads = threads + 1
  thread:set("thread_no", threads)
end

init = function(args)
  nonce = tonumber(args[2])
  size = tonumber(args[3]) or 30
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
  wrk.headers["Cookie"] = "sessionid=" .. args[1]
end

request = function()
  counter = counter + 1
  local parts = {}
  for i = 1, size do
    parts[i] = string.format(
      '{"podcast":"https://bench.example/%x/feed.xml",' ..
      '"episode":"https://media.bench.example/%x/%d/%d/%d.mp3",' ..
      '"guid":"g-%x-%d-%d-%d","action":"play","timestamp":"2026-01-01T00:00:00",' ..
      '"started":0,"position":%d,"total":3600,"device":"bench-device"}',
      nonce, nonce, thread_no, counter, i, nonce, thread_no, counter, i, 60 + i)
  end
  return wrk.format(nil, nil, nil, '[' .. table.concat(parts, ",") .. ']')
end
