--[[
holds: whether one shard of a topic holds any action, pending or dead, or
a pause mark (a paused count is never forgotten: the pause would be lost).

KEYS[1] env HASH
KEYS[2] dead-index ZSET
KEYS[3] paused STRING
ARGV[1] (none)

Returns 1 if it holds something, 0 if all three are absent.
]]
if redis.call('EXISTS', KEYS[1], KEYS[2], KEYS[3]) > 0 then return 1 end
return 0
