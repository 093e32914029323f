--[[
schedule-many: arms many actions of one topic in one call. In 'write' mode
all or nothing: each entry behaves exactly as schedule.lua, and if any is
refused, nothing at all is written. In 'each' mode the entries are separate
schedule calls the driver gathered from one tick (many callers, one round
trip): each entry behaves exactly as schedule.lua would alone, in order, and
a refused entry refuses only itself.

KEYS[1] due ZSET
KEYS[2] env HASH
KEYS[3] active ZSET
KEYS[4] seq STRING   the last arming token minted (include/token.lua)
ARGV[1] max past, ms
ARGV[2] horizon, ms
ARGV[3] wake channel
ARGV[4] trace context of the request (carried in each new token after a '~'), or ''
        ('each' mode: unused, each entry carries its own)
ARGV[5] 'write'; 'check': only check every entry and write nothing (a
        topic spread over shards checks each shard's group before writing
        any); or 'each'
ARGV[6..] five per entry: key, 'delay' or 'at', value (ms), payload JSON or '',
        'replace' or 'keep'; in 'each' mode six, the sixth the entry's trace context or ''

Returns {now, status1, status2, ..., statusN, then the extras, in entry order}
  status 1 created, 2 replaced, 3 kept and waiting, 4 kept and running;
  in 'each' mode also -1 too far in the past, -2 beyond the horizon (both
  with the due time as an extra), -3 its key has an open batch (from collect).
  Extras: the existing envelope of each kept entry, the due time of each
  entry refused for it. The caller has the payloads and computes each due
  time from `now` (attempt 1), so new envelopes are not sent back.
  In 'write' and 'check' mode, {now, code, index, dueAt} when entry `index`
  (1-based) is refused and nothing was written, code as above.
  In 'check' mode: {now, 0} when every entry would be accepted, else as above.

Cost: the calls are per call, not per entry (one HMGET reads every key's
arming, one HSET and one ZADD write them all), since a redis.call costs
about as much as the work of an entry; only a kept entry makes one of its
own (ZSCORE).
]]
--@include clock
--@include encoding
--@include token-batch
--@include chunks
local now, micros = serverTime()
local maxPast = tonumber(ARGV[1])
local horizon = tonumber(ARGV[2])
local each = ARGV[5] == 'each'
local stride = 5
if each then stride = 6 end
local entries = (#ARGV - 5) / stride

local dues = {}
local keys = {}
for n = 1, entries do
  local base = 5 + (n - 1) * stride
  if ARGV[base + 2] == 'delay' then dues[n] = now + tonumber(ARGV[base + 3]) else dues[n] = tonumber(ARGV[base + 3]) end
  keys[n] = ARGV[base + 1]
end
local found = callInChunks('HMGET', KEYS[2], keys)
-- Refusals in entry order, as if each entry were checked alone: the first
-- refuses the whole call, or in 'each' mode only its own entry.
local refusals, refusedDues = {}, {}
for n = 1, entries do
  local dueAt = dues[n]
  local existing = found[n]
  local code, detail = nil, ''
  if dueAt < 0 or dueAt < now - maxPast then
    code, detail = -1, tostring(dueAt)
  elseif dueAt > now + horizon then
    code, detail = -2, tostring(dueAt)
  elseif existing and string.match(existing, '^[^|]*|[^|]*|[^|]*|#') then
    code = -3
  end
  if code then
    if not each then return {now, code, n, detail} end
    refusals[n], refusedDues[n] = code, detail
  end
end
if ARGV[5] == 'check' then return {now, 0} end

-- What an earlier entry of this same call wrote: a key given twice sees its first arming, as two calls would.
local written = {}
local extras = {}
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
  local base = 5 + (n - 1) * stride
  local key = keys[n]
  local existing = written[key] or found[n]
  if each then
    traced = ARGV[base + 6]
    if traced ~= '' then traced = '~' .. traced end
  end
  if refusals[n] then
    result[n + 1] = refusals[n]
    if refusedDues[n] ~= '' then extras[#extras + 1] = refusedDues[n] end
  elseif existing and ARGV[base + 5] == 'keep' then
    -- Armed again earlier in this call: not running (that arming dropped the lease).
    if not written[key] and redis.call('ZSCORE', KEYS[3], key) then result[n + 1] = 4 else result[n + 1] = 3 end
    extras[#extras + 1] = existing
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
for n = 1, #extras do result[entries + 1 + n] = extras[n] end

if earliest ~= nil then
  local head = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  if head[2] and tonumber(head[2]) >= earliest then redis.call('PUBLISH', ARGV[3], string.format('%d', earliest)) end
end
return result
