--[[
topic-summary: one topic's counts, read in one step so they agree.

KEYS[1] env HASH        every pending action, waiting or running
KEYS[2] active ZSET     the running ones
KEYS[3] dead-index ZSET
KEYS[4] paused STRING
KEYS[5] due ZSET
KEYS[6] ticks ZSET      recurring ticks, which wait here instead of due (include/tick.lua)
ARGV[1] (none)

Returns {pending, running, dead, paused (1 or 0), now, earliest due time or -1}
]]
--@include clock
local earliest = redis.call('ZRANGE', KEYS[5], 0, 0, 'WITHSCORES')
local tick = redis.call('ZRANGE', KEYS[6], 0, 0, 'WITHSCORES')
if tick[2] and (not earliest[2] or tonumber(tick[2]) < tonumber(earliest[2])) then earliest = tick end
return {
  redis.call('HLEN', KEYS[1]),
  redis.call('ZCARD', KEYS[2]),
  redis.call('ZCARD', KEYS[3]),
  redis.call('EXISTS', KEYS[4]),
  serverNow(),
  earliest[2] and tonumber(earliest[2]) or -1,
}
