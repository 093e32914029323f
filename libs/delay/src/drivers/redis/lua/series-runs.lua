--[[
series-runs: the last run of each of the given recurring series.

KEYS[1] runs HASH  (include/series-run.lua)
ARGV[1] a series key, and as many more as asked for in ARGV[2], ARGV[3], ...

Returns one value per key, false where none is recorded.
]]
return redis.call('HMGET', KEYS[1], unpack(ARGV))
