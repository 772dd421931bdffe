-- GET wrk.path with an optional bearer token: wrk <url> -s get.lua -- [token]
init = function(args)
  if args[1] and args[1] ~= "" then
    wrk.headers["Authorization"] = "Bearer " .. args[1]
  end
end
