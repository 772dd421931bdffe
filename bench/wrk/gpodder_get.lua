-- GET wrk.path with a gpodder session cookie: wrk <url> -s gpodder_get.lua -- <sessionid>
init = function(args)
  wrk.headers["Cookie"] = "sessionid=" .. args[1]
end
