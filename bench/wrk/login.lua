-- POST /auth/login with fixed credentials: wrk <url> -s login.lua -- user password
init = function(args)
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
  wrk.body = string.format('{"username":"%s","password":"%s"}', args[1], args[2])
end
