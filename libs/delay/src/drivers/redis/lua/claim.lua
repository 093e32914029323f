--[[
claim: takes up to LIMIT due actions of a topic under a lease.

First, leases that expired (their instance crashed or stalled) go back to
due now, as a new attempt with a new token, so a late ack from the stalled
run changes nothing. Then the earliest due actions move from due to active.

KEYS[1] due ZSET
KEYS[2] env HASH
KEYS[3] active ZSET
KEYS[4] seq STRING
ARGV[1] limit: how many to claim at most
ARGV[2] lease, ms

Returns {now, next, key1, envelope1, key2, envelope2, ...}
  next: when this topic next needs a look (earliest due time or lease
  expiry left), -1 if nothing is pending.
]]
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local limit = tonumber(ARGV[1])
local leaseUntil = now + tonumber(ARGV[2])

local expired = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now, 'LIMIT', 0, 100)
for _, key in ipairs(expired) do
  redis.call('ZREM', KEYS[3], key)
  local envelope = redis.call('HGET', KEYS[2], key)
  if envelope then
    local _, attempt, dueAt, payload = string.match(envelope, '^([^|]*)|([^|]*)|([^|]*)|(.*)$')
    local token = redis.call('INCR', KEYS[4])
    redis.call('HSET', KEYS[2], key, token .. '|' .. (tonumber(attempt) + 1) .. '|' .. dueAt .. '|' .. payload)
    redis.call('ZADD', KEYS[1], now, key)
  end
end

local result = {now, -1}
if limit > 0 then
  local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, limit)
  for _, key in ipairs(due) do
    redis.call('ZREM', KEYS[1], key)
    local envelope = redis.call('HGET', KEYS[2], key)
    if envelope then
      redis.call('ZADD', KEYS[3], leaseUntil, key)
      result[#result + 1] = key
      result[#result + 1] = envelope
    end
  end
end

local nextDue = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
local nextLease = redis.call('ZRANGE', KEYS[3], 0, 0, 'WITHSCORES')
local nextAt = -1
if nextDue[2] then nextAt = tonumber(nextDue[2]) end
if nextLease[2] and (nextAt < 0 or tonumber(nextLease[2]) < nextAt) then nextAt = tonumber(nextLease[2]) end
result[2] = nextAt
return result
