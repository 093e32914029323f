--[[
get: one action with its state.

KEYS[1] env HASH
KEYS[2] active ZSET
ARGV[1] key

Returns {envelope, running} (running 1 or 0), or nil if there is no such action.
]]
local envelope = redis.call('HGET', KEYS[1], ARGV[1])
if not envelope then return nil end
if redis.call('ZSCORE', KEYS[2], ARGV[1]) then return {envelope, 1} end
return {envelope, 0}
