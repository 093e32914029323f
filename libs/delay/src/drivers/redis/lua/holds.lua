--[[
holds: whether one shard of a topic holds any action, pending or dead.

KEYS[1] env HASH
KEYS[2] dead-index ZSET
ARGV[1] (none)

Returns 1 if it holds something, 0 if both are empty.
]]
if redis.call('EXISTS', KEYS[1]) == 1 or redis.call('EXISTS', KEYS[2]) == 1 then return 1 end
return 0
