--[[
list: a page of a topic's pending actions, running ones first (by due time),
then waiting ones by due time then key.

KEYS[1] due ZSET
KEYS[2] env HASH
KEYS[3] active ZSET
KEYS[4] paused STRING (exists while the topic is paused)
ARGV[1] offset
ARGV[2] limit
ARGV[3] items key prefix

Returns {paused, member1, envelope1, active1, items1, member2, ...}; paused is
1 while the topic is paused; activeN is 1 for
a running action; itemsN is '' unless the member is a batch.
]]
local offset = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local result = {}

local running = redis.call('ZRANGE', KEYS[3], 0, -1)
local rows = {}
for _, key in ipairs(running) do
  local envelope = redis.call('HGET', KEYS[2], key)
  if envelope then
    local dueAt = tonumber(string.match(envelope, '^[^|]*|[^|]*|([^|]*)|'), 36)
    rows[#rows + 1] = {key, envelope, dueAt}
  end
end
table.sort(rows, function(a, b)
  if a[3] ~= b[3] then return a[3] < b[3] end
  return a[1] < b[1]
end)
for i = offset + 1, math.min(#rows, offset + limit) do
  result[#result + 1] = rows[i][1]
  result[#result + 1] = rows[i][2]
  result[#result + 1] = 1
  result[#result + 1] = redis.call('GET', ARGV[3] .. rows[i][1]) or ''
end

local taken = #result / 4
if taken < limit then
  local start = math.max(0, offset - #rows)
  local waiting = redis.call('ZRANGE', KEYS[1], start, start + (limit - taken) - 1)
  for _, key in ipairs(waiting) do
    result[#result + 1] = key
    result[#result + 1] = redis.call('HGET', KEYS[2], key)
    result[#result + 1] = 0
    result[#result + 1] = redis.call('GET', ARGV[3] .. key) or ''
  end
end
table.insert(result, 1, redis.call('EXISTS', KEYS[4]))
return result
