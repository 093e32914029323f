--[[
redrive: puts a dead action back, due now, attempt 1. A single action
replaces one pending for the same key; a batch comes back as the closed
unit it was, under its own id.

KEYS[1] due ZSET
KEYS[2] env HASH
KEYS[3] active ZSET
KEYS[4] seq STRING   the last arming token minted (include/token.lua)
KEYS[5] dead HASH
KEYS[6] dead-index ZSET
ARGV[1] member (the key, or a dead batch's id)
ARGV[2] wake channel
ARGV[3] items key prefix

Returns 1 if re-driven, 0 if there was no such dead action, -3 if it is a
single action and its key has an open batch (nothing changes).
]]
--@include clock
--@include encoding
--@include token
local now = serverNow()
local key = ARGV[1]
local record = redis.call('HGET', KEYS[5], key)
if not record then return 0 end
local errorLength, rest = string.match(record, '^[^|]*|[^|]*|[^|]*|([^|]*)|(.*)$')
local payload = string.sub(rest, tonumber(errorLength) + 1)
if string.sub(payload, 1, 1) ~= '#' then
  local pending = redis.call('HGET', KEYS[2], key)
  if pending and string.match(pending, '^[^|]*|[^|]*|[^|]*|#') then return -3 end
end
redis.call('HDEL', KEYS[5], key)
redis.call('ZREM', KEYS[6], key)
local token = mintToken(KEYS[4])
if string.sub(payload, 1, 1) == '#' then
  local items = string.sub(payload, 2)
  local size = 0
  local at = 1
  while at <= string.len(items) do
    local colon = string.find(items, ':', at, true)
    at = colon + 1 + tonumber(string.sub(items, at, colon - 1))
    size = size + 1
  end
  redis.call('SET', ARGV[3] .. key, items)
  payload = '#' .. size .. '|' .. string.format('%d', now)
end
redis.call('HSET', KEYS[2], key, token .. '|1|' .. b36(now) .. '|' .. payload)
redis.call('ZREM', KEYS[3], key)
redis.call('ZADD', KEYS[1], now, key)
redis.call('PUBLISH', ARGV[2], string.format('%d', now))
return 1
