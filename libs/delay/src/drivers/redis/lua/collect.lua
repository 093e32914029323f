--[[
collect: appends an item to the key's open batch, opening one if there is none.

The batch's envelope is "token|attempt|dueAt|#count|openedAt"; its items are
a STRING of netstrings ("<bytes>:<json>" repeated) at ARGV[8] .. key, a key
in the same hash tag (so the same cluster slot) as KEYS. A full batch is
closed at once: it is re-filed under key .. "\31" .. token (the token
zero-padded, so closed batches of a key due in the same ms sort, and are
claimed, in the order they closed), due now, and the next item opens a new
batch under the key. A closed batch that has not started is listed in the
SET itemsPrefix .. '\31' .. key, so cancel(key) reaches it.

KEYS[1] due ZSET
KEYS[2] env HASH
KEYS[3] active ZSET
KEYS[4] seq STRING   the last arming token minted (include/token.lua)
ARGV[1] key
ARGV[2] item JSON
ARGV[3] window, ms
ARGV[4] max wait, ms, or -1 for none
ARGV[5] '1' to slide the window with each item
ARGV[6] max items
ARGV[7] wake channel
ARGV[8] items key prefix
ARGV[9] trace context of the request that opens a batch ('' for none)
ARGV[10] most bytes an open batch may hold as stored (its items string), or -1 for
        no cap; an item that would take it past is refused and nothing changes
        (the item that opens a batch is always taken)

Returns {status, size, dueAt, now}
  status 1 opened, 2 joined, 3 flushed (this item filled it), -3 the key has a single action pending,
  -4 refused by the byte cap: size is the batch's item count, and dueAt the bytes it would have held
]]
--@include clock
--@include encoding
--@include token
local now = serverNow()
local key = ARGV[1]
local window = tonumber(ARGV[3])
local maxWait = tonumber(ARGV[4])
local itemsPrefix = ARGV[8]

local existing = redis.call('HGET', KEYS[2], key)
local token, attempt, dueAt, size, openedAt, status
if existing then
  local meta
  token, attempt, dueAt, meta = string.match(existing, '^([^|]*)|([^|]*)|([^|]*)|(.*)$')
  if string.sub(meta, 1, 1) ~= '#' then return {-3, 0, 0, now} end
  local count, opened = string.match(meta, '^#([^|]*)|(.*)$')
  local maxBytes = tonumber(ARGV[10])
  if maxBytes >= 0 then
    local itemLength = string.len(ARGV[2])
    local bytes = redis.call('STRLEN', itemsPrefix .. key) + itemLength + string.len(string.format('%d', itemLength)) + 1
    if bytes > maxBytes then return {-4, tonumber(count), bytes, now} end
  end
  size = tonumber(count) + 1
  openedAt = tonumber(opened)
  dueAt = tonumber(dueAt, 36)
  if ARGV[5] == '1' then
    dueAt = now + window
    if maxWait >= 0 and openedAt + maxWait < dueAt then dueAt = openedAt + maxWait end
  end
  status = 2
else
  token = withTrace(mintToken(KEYS[4]), ARGV[9])
  attempt = '1'
  size = 1
  openedAt = now
  dueAt = now + window
  if maxWait >= 0 and now + maxWait < dueAt then dueAt = now + maxWait end
  status = 1
end

redis.call('APPEND', itemsPrefix .. key, string.len(ARGV[2]) .. ':' .. ARGV[2])

local member = key
if size >= tonumber(ARGV[6]) then
  -- Full: close it under its own id, so the key is free for the next batch.
  member = key .. '\31' .. string.format('%016d', tokenNumber(token))
  redis.call('HDEL', KEYS[2], key)
  redis.call('ZREM', KEYS[1], key)
  redis.call('RENAME', itemsPrefix .. key, itemsPrefix .. member)
  -- Indexed under its key until it starts, so cancel(key) reaches it.
  redis.call('SADD', itemsPrefix .. '\31' .. key, member)
  dueAt = now
  status = 3
end

redis.call('HSET', KEYS[2], member, token .. '|' .. attempt .. '|' .. b36(dueAt) .. '|#' .. size .. '|' .. string.format('%d', openedAt))
redis.call('ZADD', KEYS[1], dueAt, member)
local head = redis.call('ZRANGE', KEYS[1], 0, 0)
if head[1] == member then redis.call('PUBLISH', ARGV[7], string.format('%d', dueAt)) end
return {status, size, dueAt, now}
