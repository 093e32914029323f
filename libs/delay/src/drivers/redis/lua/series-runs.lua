--[[
series-runs: the last run of each of the given recurring series.

KEYS[1] runs HASH  (include/series-run.lua)
ARGV[1], ARGV[2], ...: series keys

Returns one value per key, false where none is recorded.
]]
return redis.call('HMGET', KEYS[1], unpack(ARGV))
