--[[
epoch: reads the dataset's epoch, setting it when there is none. An epoch
that vanished or changed since an instance last read it means Redis came
back without its data.

KEYS[1] epoch STRING
ARGV[1] a fresh random epoch, used only if there is none

Returns {found, epoch}: found 1 if the epoch was there, 0 if this call set it.
]]
local current = redis.call('GET', KEYS[1])
if current then return {1, current} end
redis.call('SET', KEYS[1], ARGV[1])
return {0, ARGV[1]}
