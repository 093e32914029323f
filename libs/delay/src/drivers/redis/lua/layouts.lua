--[[
layouts: an instance says which shard count it uses for a topic, and reads
which counts are in use (see redis-topic-layouts.ts).

KEYS[1] layouts HASH   field = shard count, value = when an instance using it last said so (ms)
KEYS[2] env HASH of the one-shard layout
KEYS[3] dead-index ZSET of the one-shard layout
ARGV[1] the caller's shard count

Returns {now, oneShardHolds, count1, seen1, count2, seen2, ...}: every count
in the registry (the caller's included) with when it was last announced;
oneShardHolds is 1 if the one-shard layout has pending or dead actions (it
may have been written by a version that kept no registry).
]]
--@include clock
local now = serverNow()
redis.call('HSET', KEYS[1], ARGV[1], now)
local result = {now, 0}
if redis.call('EXISTS', KEYS[2]) == 1 or redis.call('EXISTS', KEYS[3]) == 1 then result[2] = 1 end
local entries = redis.call('HGETALL', KEYS[1])
for n = 1, #entries, 2 do
  result[#result + 1] = tonumber(entries[n])
  result[#result + 1] = tonumber(entries[n + 1])
end
return result
