--[[
list: a page of a topic's pending actions, running ones first (by due time),
then waiting ones by due time then key.

KEYS[1] due ZSET
KEYS[2] env HASH
KEYS[3] active ZSET
KEYS[4] paused STRING (exists while the topic is paused)
KEYS[5] ticks ZSET   recurring ticks, which wait here instead of due (include/tick.lua)
ARGV[1] offset
ARGV[2] limit
ARGV[3] items key prefix
ARGV[4] most items of a batch to return: a listing of large batches must not
        read them whole (the envelope says how many a batch holds)

Returns {paused, member1, envelope1, active1, items1, member2, ...}; paused is
1 while the topic is paused; activeN is 1 for
a running action; itemsN is '' unless the member is a batch, else its first
ARGV[4] items as stored (netstrings).
]]
local offset = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local maxItems = tonumber(ARGV[4])
local result = {}

-- The first maxItems netstrings ("<bytes>:<json>") of a batch's items, read a header at a time.
local function firstItems(member)
  local itemsKey = ARGV[3] .. member
  local stop = 0
  for _ = 1, maxItems do
    local digits = string.match(redis.call('GETRANGE', itemsKey, stop, stop + 20), '^(%d+):')
    if not digits then break end
    stop = stop + string.len(digits) + 1 + tonumber(digits)
  end
  if stop == 0 then return '' end
  return redis.call('GETRANGE', itemsKey, 0, stop - 1)
end

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
  result[#result + 1] = firstItems(rows[i][1])
end

local taken = #result / 4
if taken < limit then
  local start = math.max(0, offset - #rows)
  local want = limit - taken
  local waiting
  -- Ticks wait in a set of their own. With one of the two sets empty (a
  -- recurring topic between occurrences, a topic without schedules), the page is a range of the other.
  local dueEmpty = redis.call('EXISTS', KEYS[1]) == 0
  if redis.call('EXISTS', KEYS[5]) == 0 or dueEmpty then
    waiting = redis.call('ZRANGE', dueEmpty and KEYS[5] or KEYS[1], start, start + want - 1)
  else
    -- Both hold actions: the first start + want of each, merged in the
    -- order one set would give (due time, then key bytes).
    local due = redis.call('ZRANGE', KEYS[1], 0, start + want - 1, 'WITHSCORES')
    local ticks = redis.call('ZRANGE', KEYS[5], 0, start + want - 1, 'WITHSCORES')
    waiting = {}
    local i, j, rank = 1, 1, 0
    while #waiting < want and (i <= #due or j <= #ticks) do
      local takeDue
      if i > #due then takeDue = false
      elseif j > #ticks then takeDue = true
      else
        local a, b = tonumber(due[i + 1]), tonumber(ticks[j + 1])
        takeDue = a < b or (a == b and due[i] < ticks[j])
      end
      local key
      if takeDue then key = due[i] i = i + 2 else key = ticks[j] j = j + 2 end
      if rank >= start then waiting[#waiting + 1] = key end
      rank = rank + 1
    end
  end
  for _, key in ipairs(waiting) do
    result[#result + 1] = key
    result[#result + 1] = redis.call('HGET', KEYS[2], key)
    result[#result + 1] = 0
    result[#result + 1] = firstItems(key)
  end
end
table.insert(result, 1, redis.call('EXISTS', KEYS[4]))
return result
