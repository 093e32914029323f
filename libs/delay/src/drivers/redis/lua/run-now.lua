--[[
run-now: makes a waiting action (or open batch) due now, keeping its token,
attempt and payload. A running action is left alone: it is in the active
ZSET, not in due.

KEYS[1] due ZSET
KEYS[2] env HASH
KEYS[3] ticks ZSET   recurring ticks, which wait here instead of due (include/tick.lua)
ARGV[1] key
ARGV[2] wake channel

Returns 1 if the action is now due, 0 if the key has no waiting action.
]]
--@include clock
--@include encoding
--@include tick
local now = serverNow()
local key = ARGV[1]
local envelope = redis.call('HGET', KEYS[2], key)
if not envelope then return 0 end
local waiting = waitingSetOf(envelope, KEYS[1], KEYS[3])
local score = redis.call('ZSCORE', waiting, key)
if not score then return 0 end
if tonumber(score) <= now then return 1 end
local token, attempt, _, payload = string.match(envelope, '^([^|]*)|([^|]*)|([^|]*)|(.*)$')
redis.call('HSET', KEYS[2], key, token .. '|' .. attempt .. '|' .. b36(now) .. '|' .. payload)
redis.call('ZADD', waiting, now, key)
local head = redis.call('ZRANGE', waiting, 0, 0)
if head[1] == key then redis.call('PUBLISH', ARGV[2], string.format('%d', now)) end
return 1
