--[[
release: hands unfinished runs back at shutdown, due now, same attempt, with
a new token so the abandoned run's late ack changes nothing.

KEYS[1] due ZSET
KEYS[2] env HASH
KEYS[3] active ZSET
KEYS[4] seq STRING   the last arming token minted (include/token.lua)
KEYS[5] ticks ZSET   recurring ticks, which wait here instead of due (include/tick.lua)
ARGV[1] wake channel
ARGV[2], ARGV[3], ...: key, token pairs

Returns how many runs were handed back.
]]
--@include clock
--@include encoding
--@include token
--@include tick
local now = serverNow()
local released = 0
for i = 2, #ARGV, 2 do
  local key = ARGV[i]
  local envelope = redis.call('HGET', KEYS[2], key)
  if envelope then
    local token, attempt, dueAt, payload = string.match(envelope, '^([^|]*)|([^|]*)|([^|]*)|(.*)$')
    if token == ARGV[i + 1] then
      local fresh = mintToken(KEYS[4]) .. traceOf(token)
      redis.call('HSET', KEYS[2], key, fresh .. '|' .. attempt .. '|' .. dueAt .. '|' .. payload)
      redis.call('ZREM', KEYS[3], key)
      redis.call('ZADD', waitingSetOf(envelope, KEYS[1], KEYS[5]), now, key)
      released = released + 1
    end
  end
end
if released > 0 then redis.call('PUBLISH', ARGV[1], string.format('%d', now)) end
return released
