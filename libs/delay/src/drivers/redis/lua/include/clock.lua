-- Every time comes from the Redis server, never from a caller, so clock
-- skew between instances cannot matter. Milliseconds since the epoch.
local function serverNow()
  local time = redis.call('TIME')
  return tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
end
