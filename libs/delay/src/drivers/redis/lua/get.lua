--[[
get: one action with its state.

KEYS[1] env HASH
KEYS[2] active ZSET
KEYS[3] paused STRING (exists while the topic is paused)
ARGV[1] key
ARGV[2] items key prefix

Returns {envelope, running, items, paused} (running and paused 1 or 0; items '' unless a batch),
or nil if there is no such action.
]]
local envelope = redis.call('HGET', KEYS[1], ARGV[1])
if not envelope then return nil end
local items = redis.call('GET', ARGV[2] .. ARGV[1]) or ''
local paused = redis.call('EXISTS', KEYS[3])
if redis.call('ZSCORE', KEYS[2], ARGV[1]) then return {envelope, 1, items, paused} end
return {envelope, 0, items, paused}
