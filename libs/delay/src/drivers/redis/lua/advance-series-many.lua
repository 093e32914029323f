--[[
advance-series-many: the steps of many recurring series of one shard in one
call (the ticks one claim took, advanced in the same tick of the driver):
each step exactly as advance-series.lua makes it alone, in order, so one
round trip and one script call carry them all.

KEYS[1] due ZSET
KEYS[2] env HASH
KEYS[3] active ZSET
KEYS[4] seq STRING
KEYS[5] series HASH
KEYS[6] ticks ZSET
KEYS[7] runs HASH
KEYS[8] declared HASH
KEYS[9] schedules ZSET
        (the keys of advance-series.lua, of the shard all the steps' series live in)

ARGV[1] how many steps follow, then per step: how many arguments it has,
        then those arguments, laid out as advance-series.lua's ARGV

Returns one reply per step, in order, each as advance-series.lua returns it.
Time is the Redis server's (TIME), read once for all the steps; their tokens
are reserved together, and at most one wake is published for them all.
]]
--@include clock
--@include encoding
--@include token-batch
--@include chunks
--@include cached-store
--@include series-run
--@include series-step
local now, micros = serverTime()
local steps = {}
local at = 2
for n = 1, tonumber(ARGV[1]) do
  local size = tonumber(ARGV[at])
  local args = {}
  for i = 1, size do args[i] = ARGV[at + i] end
  at = at + size + 1
  steps[n] = args
end
local call = seriesCall(KEYS, micros, steps)
local replies = {}
for n, args in ipairs(steps) do replies[n] = seriesStep(KEYS, args, now, call) end
finishSeriesCall(KEYS, call)
return replies
