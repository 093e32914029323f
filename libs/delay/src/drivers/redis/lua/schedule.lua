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

Returns {status, envelope, now, running}
  status  1 created, 2 replaced, 3 kept (envelope is the existing one; running 1 if its handler runs)
         -1 due time too far in the past, -2 beyond the horizon (envelope is the due time)
         -3 the key has an open batch (from collect)
Time is the Redis server's (TIME), never the caller's.
]]
--@include clock
--@include encoding
--@include token
local now = serverNow()
local key = ARGV[1]

local dueAt
if ARGV[2] == 'delay' then dueAt = now + tonumber(ARGV[3]) else dueAt = tonumber(ARGV[3]) end
if dueAt < 0 or dueAt < now - tonumber(ARGV[6]) then return {-1, tostring(dueAt), now} end
if dueAt > now + tonumber(ARGV[7]) then return {-2, tostring(dueAt), now} end

local existing = redis.call('HGET', KEYS[2], key)
if existing and string.match(existing, '^[^|]*|[^|]*|[^|]*|#') then return {-3, '', now, 0} end
if existing and ARGV[5] == 'keep' then
  if redis.call('ZSCORE', KEYS[3], key) then return {3, existing, now, 1} end
  return {3, existing, now, 0}
end

local token = mintToken(KEYS[4])
local envelope = token .. '|1|' .. b36(dueAt) .. '|' .. ARGV[4]
redis.call('HSET', KEYS[2], key, envelope)
redis.call('ZADD', KEYS[1], dueAt, key)
-- A run of the previous arming may still be going: it loses its lease and its ack will not match.
redis.call('ZREM', KEYS[3], key)

local head = redis.call('ZRANGE', KEYS[1], 0, 0)
if head[1] == key then redis.call('PUBLISH', ARGV[8], string.format('%d', dueAt)) end

if existing then return {2, envelope, now, 0} end
return {1, envelope, now, 0}
