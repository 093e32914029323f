--[[
retry: puts a failed run back, due after the backoff, as the next attempt,
under a new token: if this call is replayed (its reply was lost and the
caller tried again), the replay finds the token changed and does nothing.

KEYS[1] due ZSET
KEYS[2] env HASH
KEYS[3] active ZSET
KEYS[4] seq STRING   the last arming token minted (include/token.lua)
KEYS[5] runs HASH    the last run of each recurring schedule (include/series-run.lua)
KEYS[6] ticks ZSET   recurring ticks, which wait here instead of due (include/tick.lua)
ARGV[1] key
ARGV[2] token of the run
ARGV[3] backoff, ms
ARGV[4] wake channel
ARGV[5] when the run started (ms), '' unless the key is a recurring occurrence's

Returns 1 if re-queued, 0 if the token no longer matches.
]]
--@include clock
--@include encoding
--@include token
--@include series-run
--@include tick
local now = serverNow()
local key = ARGV[1]
local envelope = redis.call('HGET', KEYS[2], key)
if not envelope then return 0 end
local token, attempt, _, payload = string.match(envelope, '^([^|]*)|([^|]*)|([^|]*)|(.*)$')
if token ~= ARGV[2] then return 0 end
local dueAt = now + tonumber(ARGV[3])
local fresh = mintToken(KEYS[4]) .. traceOf(token)
redis.call('HSET', KEYS[2], key, fresh .. '|' .. (tonumber(attempt) + 1) .. '|' .. b36(dueAt) .. '|' .. payload)
redis.call('ZREM', KEYS[3], key)
local waiting = waitingSetOf(envelope, KEYS[1], KEYS[6])
redis.call('ZADD', waiting, dueAt, key)
local head = redis.call('ZRANGE', waiting, 0, 0)
if head[1] == key then redis.call('PUBLISH', ARGV[4], string.format('%d', dueAt)) end
if (ARGV[5] or '') ~= '' then recordSeriesRun(KEYS[5], key, 'retrying', ARGV[5], attempt, now) end
return 1
