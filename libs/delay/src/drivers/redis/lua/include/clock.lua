-- Every time comes from the Redis server, never from a caller, so clock
-- skew between instances cannot matter. serverTime() reads TIME once and
-- gives both milliseconds (due times, leases) and microseconds (tokens, see
-- include/token.lua), so a script that needs both calls TIME only once.
local function serverTime()
  local time = redis.call('TIME')
  local seconds, micros = tonumber(time[1]), tonumber(time[2])
  return seconds * 1000 + math.floor(micros / 1000), seconds * 1000000 + micros
end
-- Milliseconds since the epoch.
local function serverNow()
  local ms = serverTime()
  return ms
end
