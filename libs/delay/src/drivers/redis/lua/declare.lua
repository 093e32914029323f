--[[
declare: marks recurring series as declared in code by a running instance,
until a time; a mark only moves later. advance-series.lua removes a series
whose mark has passed (orphan policy 'remove').

KEYS[1] declared HASH  field = series key, value = until when (ms)
ARGV[1] how long from now, ms
ARGV[2], ARGV[3], ...: series keys

Returns how many marks moved.
]]
--@include clock
local untilMs = serverNow() + tonumber(ARGV[1])
local moved = 0
for i = 2, #ARGV do
  local mark = tonumber(redis.call('HGET', KEYS[1], ARGV[i]) or '0')
  if mark < untilMs then
    redis.call('HSET', KEYS[1], ARGV[i], string.format('%d', untilMs))
    moved = moved + 1
  end
end
return moved
