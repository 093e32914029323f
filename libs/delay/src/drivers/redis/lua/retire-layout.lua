--[[
retire-layout: forgets a shard count of a topic that no instance has
announced for `staleAfter` ms. The caller checked that its shards are
empty; an instance that announced the count again since keeps it.

KEYS[1] layouts HASH (see layouts.lua)
ARGV[1] the shard count to forget
ARGV[2] staleAfter, ms

Returns 1 if the count was forgotten, 0 if it was announced again meanwhile.
]]
--@include clock
local seen = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0')
if serverNow() - seen <= tonumber(ARGV[2]) then return 0 end
redis.call('HDEL', KEYS[1], ARGV[1])
return 1
