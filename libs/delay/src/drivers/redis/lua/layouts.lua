--[[
layouts: an instance says which shard count it uses for a topic, and reads
which counts are in use (see redis-topic-layouts.ts).

KEYS[1] layouts HASH   field = shard count, value = when an instance using it last said so (ms)
KEYS[2] env HASH of the one-shard layout
KEYS[3] dead-index ZSET of the one-shard layout
KEYS[4] paused STRING of the one-shard layout
ARGV[1] the caller's shard count, announced as in use; 0 only reads (an instance that has not armed or consumed the topic)

Returns {now, oneShardHolds, count1, seen1, count2, seen2, ...}: every count
in the registry (the caller's included) with when it was last announced;
oneShardHolds is 1 if the one-shard layout has pending or dead actions or a
pause mark (it may have been written by a version that kept no registry).
]]
--@include clock
local now = serverNow()
if ARGV[1] ~= '0' then redis.call('HSET', KEYS[1], ARGV[1], now) end
local result = {now, 0}
if redis.call('EXISTS', KEYS[2], KEYS[3], KEYS[4]) > 0 then result[2] = 1 end
local entries = redis.call('HGETALL', KEYS[1])
for n = 1, #entries, 2 do
  result[#result + 1] = tonumber(entries[n])
  result[#result + 1] = tonumber(entries[n + 1])
end
return result
