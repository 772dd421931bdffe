-- The side-by-side bench's Open Podcast API write, request for request: a sync batch
-- of 30 subscribes to feeds never seen before, each with a random UUIDv4 action_id,
-- every connection under one Client-ID.
--   wrk <url> -s opa_writes.lua -- <token> <tag>
local nthreads = 0
setup = function(thread)
  nthreads = nthreads + 1
  thread:set("tid", nthreads)
end
local counter, token, tag = 0, "", "t"
init = function(args)
  token = args[1] or ""
  tag = args[2] or "t"
  math.randomseed(os.time() * 1000 + tid)
end
local function hex(n)
  local s = {}
  for i = 1, n do s[i] = string.format("%x", math.random(0, 15)) end
  return table.concat(s)
end
local function uuid4()
  return hex(8) .. "-" .. hex(4) .. "-4" .. hex(3) .. "-" ..
    string.format("%x", math.random(8, 11)) .. hex(3) .. "-" .. hex(12)
end
request = function()
  counter = counter + 1
  local parts = {}
  for i = 1, 30 do
    parts[i] = string.format(
      '{"action_id":"%s","occurred_at":"2024-01-01T00:00:00Z","type":"subscription",' ..
      '"action":"subscribe","data":{"feed_url":"https://bench.example.com/%s/%d/%d/%d.xml"}}',
      uuid4(), tag, tid, counter, i)
  end
  local body = '{"requests":[' .. table.concat(parts, ",") .. ']}'
  local h = { ["Content-Type"] = "application/json", ["Authorization"] = "Bearer " .. token,
              ["Client-ID"] = "0b5e5c1a-6a6b-4c3d-9e2f-1a2b3c4d5e6f" }
  return wrk.format("POST", nil, h, body)
end
