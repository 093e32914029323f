--[[
bury: moves a run that used up its attempts to the dead set.

KEYS[1] env HASH
KEYS[2] active ZSET
KEYS[3] dead HASH     field = member, value = "attempts|dueAt|diedAt|errorLength|" .. error .. payload
                      (for a batch, payload is "#" .. its items string)
KEYS[4] dead-index ZSET  member = member, score = died at (ms)
KEYS[5] runs HASH     the last run of each recurring schedule (include/series-run.lua)
ARGV[1] member (the key, or a closed batch's id)
ARGV[2] token of the run
ARGV[3] error message
ARGV[4] items key prefix
ARGV[5] when the run started (ms), '' unless the member is a recurring occurrence's

Returns 1 if buried, 0 if the token no longer matches.
]]
--@include clock
--@include series-run
local now = serverNow()
local key = ARGV[1]
local envelope = redis.call('HGET', KEYS[1], key)
if not envelope then return 0 end
local token, attempt, dueAt, payload = string.match(envelope, '^([^|]*)|([^|]*)|([^|]*)|(.*)$')
if token ~= ARGV[2] then return 0 end
redis.call('HDEL', KEYS[1], key)
redis.call('ZREM', KEYS[2], key)
if string.sub(payload, 1, 1) == '#' then
  payload = '#' .. (redis.call('GET', ARGV[4] .. key) or '')
  redis.call('DEL', ARGV[4] .. key)
end
local diedAt = string.format('%d', now)
redis.call('HSET', KEYS[3], key, attempt .. '|' .. string.format('%d', tonumber(dueAt, 36)) .. '|' .. diedAt .. '|' .. string.len(ARGV[3]) .. '|' .. ARGV[3] .. payload)
redis.call('ZADD', KEYS[4], now, key)
if (ARGV[5] or '') ~= '' then recordSeriesRun(KEYS[5], key, 'dead', ARGV[5], attempt, now) end
return 1
