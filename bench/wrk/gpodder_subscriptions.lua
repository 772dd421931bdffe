-- POST /api/2/subscriptions/<user>/<device>.json: `size` feeds never seen before in
-- "add" (a gpodder subscription push), with a gpodder session cookie:
--   wrk <url> -s gpodder_subscriptions.lua -- <sessionid> <run nonce (int)> <batch size>
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
    parts[i] = string.format('"https://bench.example/%x/%d/%d/%d/feed.xml"',
      nonce, thread_no, counter, i)
  end
  return wrk.format(nil, nil, nil, '{"add":[' .. table.concat(parts, ",") .. '],"remove":[]}')
end
