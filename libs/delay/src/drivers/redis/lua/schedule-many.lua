--[[
schedule-many: arms many actions of one topic in one call, all or nothing.
Each entry behaves exactly as schedule.lua; if any due time is out of range,
nothing at all is written.

KEYS[1] due ZSET
KEYS[2] env HASH
KEYS[3] active ZSET
KEYS[4] seq STRING   the last arming token minted (include/token.lua)
ARGV[1] max past, ms
ARGV[2] horizon, ms
ARGV[3] wake channel
ARGV[4] trace context of the request (carried in each new token after a '~'), or ''
ARGV[5] 'write', or 'check': only check every entry and write nothing (a
        topic spread over shards checks each shard's group before writing any)
ARGV[6..] five per entry: key, 'delay' or 'at', value (ms), payload JSON or '', 'replace' or 'keep'

Returns {now, status1, status2, ..., statusN, then one existing envelope per
kept entry, in entry order}
  status 1 created, 2 replaced, 3 kept and waiting, 4 kept and running.
  The caller has the payloads and computes each due time from `now`
  (attempt 1), so new envelopes are not sent back.
  Or {now, code, index, dueAt} when entry `index` (1-based) is refused and
  nothing was written: code -1 too far in the past, -2 beyond the horizon,
  -3 its key has an open batch (from collect).
  In 'check' mode: {now, 0} when every entry would be accepted, else as above.

Cost: the calls are per call, not per entry (one HMGET reads every key's
arming, one HSET and one ZADD write them all), since a redis.call costs
about as much as the work of an entry; only a kept entry makes one of its
own (ZSCORE).
]]
--@include clock
--@include encoding
--@include token-batch
local now, micros = serverTime()
local maxPast = tonumber(ARGV[1])
local horizon = tonumber(ARGV[2])
local entries = (#ARGV - 5) / 5

-- Calls `command` on `key` with `args`, 1,000 at a time (Lua's unpack passes a
-- bounded number of values); returns the replies of a command that answers
-- with a list (HMGET), joined in order.
local function callInChunks(command, key, args)
  local replies = {}
  for first = 1, #args, 1000 do
    local reply = redis.call(command, key, unpack(args, first, math.min(first + 999, #args)))
    if type(reply) == 'table' then
      for n = 1, #reply do replies[#replies + 1] = reply[n] end
    end
  end
  return replies
end

local dues = {}
local keys = {}
for n = 1, entries do
  local base = 5 + (n - 1) * 5
  if ARGV[base + 2] == 'delay' then dues[n] = now + tonumber(ARGV[base + 3]) else dues[n] = tonumber(ARGV[base + 3]) end
  keys[n] = ARGV[base + 1]
end
local found = callInChunks('HMGET', KEYS[2], keys)
-- Refusals in entry order, as if each entry were checked alone.
for n = 1, entries do
  local dueAt = dues[n]
  if dueAt < 0 or dueAt < now - maxPast then return {now, -1, n, tostring(dueAt)} end
  if dueAt > now + horizon then return {now, -2, n, tostring(dueAt)} end
  local existing = found[n]
  if existing and string.match(existing, '^[^|]*|[^|]*|[^|]*|#') then return {now, -3, n, ''} end
end
if ARGV[5] == 'check' then return {now, 0} end

-- What an earlier entry of this same call wrote: a key given twice sees its first arming, as two calls would.
local written = {}
local kept = {}
local result = {now}
local earliest = nil
local tokens = tokenMinter(KEYS[4], micros)
local traced = ''
if ARGV[4] ~= '' then traced = '~' .. ARGV[4] end
local envelopes = {}
local scores = {}
local leases = {}
-- Entries of one batch often share a due time (the same delay, from the same `now`): encoded once.
local lastDue, lastDueText = nil, nil
for n = 1, entries do
  local base = 5 + (n - 1) * 5
  local key = keys[n]
  local existing = written[key] or found[n]
  if existing and ARGV[base + 5] == 'keep' then
    -- Armed again earlier in this call: not running (that arming dropped the lease).
    if not written[key] and redis.call('ZSCORE', KEYS[3], key) then result[n + 1] = 4 else result[n + 1] = 3 end
    kept[#kept + 1] = existing
  else
    if dues[n] ~= lastDue then lastDue, lastDueText = dues[n], b36(dues[n]) end
    local envelope = tokens.next() .. traced .. '|1|' .. lastDueText .. '|' .. ARGV[base + 4]
    -- A key given twice is written twice in these lists: the later pair wins, as the later call would.
    envelopes[#envelopes + 1] = key
    envelopes[#envelopes + 1] = envelope
    scores[#scores + 1] = dues[n]
    scores[#scores + 1] = key
    -- A run of the previous arming may still be going: it loses its lease and its ack will not match.
    if existing then leases[#leases + 1] = key end
    written[key] = envelope
    if earliest == nil or dues[n] < earliest then earliest = dues[n] end
    if existing then result[n + 1] = 2 else result[n + 1] = 1 end
  end
end
if #envelopes > 0 then
  callInChunks('HSET', KEYS[2], envelopes)
  callInChunks('ZADD', KEYS[1], scores)
end
if #leases > 0 then callInChunks('ZREM', KEYS[3], leases) end
tokens.save()
for n = 1, #kept do result[entries + 1 + n] = kept[n] end

if earliest ~= nil then
  local head = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  if head[2] and tonumber(head[2]) >= earliest then redis.call('PUBLISH', ARGV[3], string.format('%d', earliest)) end
end
return result
