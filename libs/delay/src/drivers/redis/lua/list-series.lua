--[[
list-series: a page of one shard's recurring schedules by key, for a listing
that must see each schedule once however often their ticks are re-armed
(the ticks ZSET is ordered by due time, which moves at every step).

KEYS[1] env HASH
KEYS[2] active ZSET
KEYS[3] ticks ZSET
KEYS[4] schedules ZSET  every member scored 0, so ranged by key (byte order,
                        which is code point order): the keys of the shard's
                        ticks, and the member ''. The first listing builds it
                        from ticks and active; from then on advance-series.lua
                        adds a key when it arms its tick and removes it with
                        the series (and drops the set with the last one), so
                        a topic never listed stores no index
KEYS[5] paused STRING   exists while the topic is paused

ARGV[1] '' for the first page, else the key after which the page starts
ARGV[2] limit

Returns {paused, key, envelope, running, ...}: paused 1 or 0, then per tick
its key, its envelope and 1 if it is running (else 0), by key. A key whose
action is gone or is no tick (cancelled by hand) is dropped from the index.
]]
--@include tick
if not redis.call('ZSCORE', KEYS[4], '') then
  -- Built once per shard: the ticks waiting, and those running now.
  local function index(members)
    for n = 1, #members, 1000 do
      local args = {}
      for m = n, math.min(n + 999, #members) do
        args[#args + 1] = 0
        args[#args + 1] = members[m]
      end
      redis.call('ZADD', KEYS[4], unpack(args))
    end
  end
  index(redis.call('ZRANGE', KEYS[3], 0, -1))
  local running = {}
  for _, member in ipairs(redis.call('ZRANGE', KEYS[2], 0, -1)) do
    local envelope = redis.call('HGET', KEYS[1], member)
    if envelope and isTick(envelope) and not string.find(member, '\30', 1, true) then running[#running + 1] = member end
  end
  index(running)
  redis.call('ZADD', KEYS[4], 0, '')
end

local limit = tonumber(ARGV[2])
local result = {redis.call('EXISTS', KEYS[5])}
local found = 0
local from = '(' .. ARGV[1]
while found < limit do
  local keys = redis.call('ZRANGEBYLEX', KEYS[4], from, '+', 'LIMIT', 0, limit - found)
  if #keys == 0 then break end
  for _, key in ipairs(keys) do
    local envelope = redis.call('HGET', KEYS[1], key)
    if envelope and isTick(envelope) then
      result[#result + 1] = key
      result[#result + 1] = envelope
      result[#result + 1] = redis.call('ZSCORE', KEYS[2], key) and 1 or 0
      found = found + 1
    else
      redis.call('ZREM', KEYS[4], key)
    end
  end
  from = '(' .. keys[#keys]
end
return result
