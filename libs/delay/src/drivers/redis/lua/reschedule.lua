--[[
reschedule: moves an existing action to a new due time; payload and attempt are kept.

KEYS[1] due ZSET
KEYS[2] env HASH
KEYS[3] active ZSET
KEYS[4] seq STRING   the last arming token minted (include/token.lua)
KEYS[5] ticks ZSET   recurring ticks, which wait here instead of due (include/tick.lua)
ARGV[1] key
ARGV[2] 'delay' or 'at'
ARGV[3] the delay or the absolute due time, ms
ARGV[4] max past, ms
ARGV[5] horizon, ms
ARGV[6] wake channel

Returns {status, envelope, now}
  status 1 moved, 0 no such action, -1 too far in the past, -2 beyond the horizon,
         -3 the key has an open batch (from collect)
]]
--@include clock
--@include encoding
--@include token
--@include tick
local now = serverNow()
local key = ARGV[1]

local existing = redis.call('HGET', KEYS[2], key)
if not existing then return {0, '', now} end
if string.match(existing, '^[^|]*|[^|]*|[^|]*|#') then return {-3, '', now} end

local dueAt
if ARGV[2] == 'delay' then dueAt = now + tonumber(ARGV[3]) else dueAt = tonumber(ARGV[3]) end
if dueAt < 0 or dueAt < now - tonumber(ARGV[4]) then return {-1, tostring(dueAt), now} end
if dueAt > now + tonumber(ARGV[5]) then return {-2, tostring(dueAt), now} end

local old, attempt, _, payload = string.match(existing, '^([^|]*)|([^|]*)|([^|]*)|(.*)$')
local token = mintToken(KEYS[4]) .. traceOf(old)
local envelope = token .. '|' .. attempt .. '|' .. b36(dueAt) .. '|' .. payload
redis.call('HSET', KEYS[2], key, envelope)
local waiting = waitingSetOf(existing, KEYS[1], KEYS[5])
redis.call('ZADD', waiting, dueAt, key)
redis.call('ZREM', KEYS[3], key)

local head = redis.call('ZRANGE', waiting, 0, 0)
if head[1] == key then redis.call('PUBLISH', ARGV[6], string.format('%d', dueAt)) end
return {1, envelope, now}
