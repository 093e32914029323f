--[[
schedule: arms (topic, key), or keeps an existing arming.

KEYS[1] due ZSET     member = key, score = due time (ms)
KEYS[2] env HASH     field = key, value = envelope "token|attempt|dueAt|payload" (token and dueAt in base 36)
KEYS[3] active ZSET  member = key, score = lease expiry (ms)
KEYS[4] seq STRING   the last arming token minted (include/token.lua)

ARGV[1] key
ARGV[2] 'delay' or 'at'
ARGV[3] the delay or the absolute due time, ms
ARGV[4] payload JSON, or '' for none
ARGV[5] 'replace' or 'keep'
ARGV[6] max past, ms: an absolute time older than now - this is refused
ARGV[7] horizon, ms: a due time later than now + this is refused
ARGV[8] wake channel: told the new due time when this arming is the topic's earliest
ARGV[9] trace context of the request (carried in the token after a '~'), or ''

Returns {status, now} when it armed: status 1 created, 2 replaced. The
caller has the payload and computes the due time from `now` (attempt 1), so
the new envelope is not sent back.
Returns {3, envelope, now, running} when it kept the existing arming
(running 1 if its handler runs), {-1 or -2, dueAt, now} when the due time is
too far in the past or beyond the horizon, {-3, '', now} when the key has an
open batch (from collect).
Time is the Redis server's (TIME), never the caller's.

Cost matters here (it is the call users make most): one TIME for both the
clock and the token, HSETNX so that creating (the common case) needs no read
of the hash first, the previous lease dropped only when there was a previous
arming, and ZRANK (an integer reply) for "is it the earliest".
]]
--@include clock
--@include encoding
--@include token
local now, micros = serverTime()
local key = ARGV[1]

local dueAt
if ARGV[2] == 'delay' then dueAt = now + tonumber(ARGV[3]) else dueAt = tonumber(ARGV[3]) end
if dueAt < 0 or dueAt < now - tonumber(ARGV[6]) then return {-1, tostring(dueAt), now} end
if dueAt > now + tonumber(ARGV[7]) then return {-2, tostring(dueAt), now} end

local status = 1
local envelope = withTrace(mintToken(KEYS[4], micros), ARGV[9]) .. '|1|' .. b36(dueAt) .. '|' .. ARGV[4]
if redis.call('HSETNX', KEYS[2], key, envelope) == 0 then
  -- Rare path: there is an arming already. (The token minted above is then
  -- wasted when nothing is written: tokens only need to be unique and rising.)
  local existing = redis.call('HGET', KEYS[2], key)
  if string.match(existing, '^[^|]*|[^|]*|[^|]*|#') then return {-3, '', now} end
  if ARGV[5] == 'keep' then
    if redis.call('ZSCORE', KEYS[3], key) then return {3, existing, now, 1} end
    return {3, existing, now, 0}
  end
  redis.call('HSET', KEYS[2], key, envelope)
  -- A run of the previous arming may still be going: it loses its lease and its ack will not match.
  redis.call('ZREM', KEYS[3], key)
  status = 2
end
redis.call('ZADD', KEYS[1], dueAt, key)
if redis.call('ZRANK', KEYS[1], key) == 0 then redis.call('PUBLISH', ARGV[8], string.format('%d', dueAt)) end
return {status, now}
