--[[
advance-series: the one atomic step of a recurring series (see the
advanceSeries contract in delay-driver.interface.ts). The series' tick is
the ordinary action under the series key; its occurrences are actions of the
same topic under the series key, U+001E and an identity. All live in the
same shard (the shard hash of an occurrence key is that of its series key).

KEYS[1] due ZSET
KEYS[2] env HASH
KEYS[3] active ZSET
KEYS[4] seq STRING    the last arming token minted (include/token.lua)
KEYS[5] series HASH   field = series key, value = keys of its occurrences that
                      may still be waiting or running, joined by "\31"; no
                      field while there is none (most of the time)
KEYS[6] ticks ZSET    the series' ticks, scored by due time: a tick waits
                      here, never in due (include/tick.lua), and claim.lua
                      takes it without a handler slot
KEYS[7] runs HASH     the last run of each series (include/series-run.lua):
                      an occurrence refused by the overlap policy is recorded
                      as 'skipped', its occurrence key followed by "\31" and
                      the blocker: state, due time (ms), attempt, key, each
                      after a "\31"
KEYS[8] declared HASH field = series key, value = until when (ms) a running
                      instance declares it in code (declare.lua)
KEYS[9] schedules ZSET the series keys, all scored 0, ranged by key for
                      listings (list-series.lua), once a listing built it:
                      while it exists, a key is added when its tick is
                      armed and removed with its series

ARGV[1] series key
ARGV[2] 'token', 'payload' or 'absent': what must hold for anything to change
ARGV[3] the tick's token field (acks compare the whole field), or its payload
ARGV[4] overlap: 'skip', 'bufferOne', 'allow' or 'cancelPrevious'
ARGV[5] next: 'keep', 'remove', 'delay' or 'at'
ARGV[6] the delay or the absolute due time of the tick, ms
ARGV[7] the tick's payload
ARGV[8] wake channel
ARGV[9] how many occurrences follow, then per occurrence 4 values:
        key, 'delay' or 'at', ms, payload ('' for none)
then    the orphan grace, ms (0: no check). With one, a series no instance
        declares any more (its mark in `declared` has passed) is removed instead
        of advanced; a series without a mark gets one, that far ahead.
then    whileAlive ('bufferOne'): '' for none, else 'delay' or 'at', the ms
        and the payload of the tick's arming to make instead when a previous
        occurrence is still waiting or running (then nothing is created), and
        how many keys follow, reported skipped in that case.

With 'skip' or 'bufferOne', occurrences are refused while a previous one is
waiting or running ('bufferOne' never lets two be alive); with whileAlive,
'bufferOne' holds them back instead (the tick's new payload says which).

Returns {0} when the condition did not hold (nothing changed), {2} when the
series was removed as an orphan, else {1, created, skipped, cancelled,
nextDueAt, blocker key, blocker state, blocker due time, blocker attempt,
key...}: the counts, the re-armed tick's due time (-1 when not re-armed), the
previous occurrence that made the policy refuse ('' and zeros when none did:
the first running one, else the latest waiting), then the keys of the
created, skipped and cancelled occurrences in that order. A series created ('absent') starts with no last run in `runs`.
Time is the Redis server's (TIME).
]]
--@include clock
--@include encoding
--@include token
--@include series-run
local now, micros = serverTime()
local key = ARGV[1]

local envelope = redis.call('HGET', KEYS[2], key)
if ARGV[2] == 'absent' then
  if envelope then return {0} end
  redis.call('HDEL', KEYS[7], key)
else
  if not envelope then return {0} end
  local token, payload = string.match(envelope, '^([^|]*)|[^|]*|[^|]*|(.*)$')
  if ARGV[2] == 'token' then
    if token ~= ARGV[3] or not redis.call('ZSCORE', KEYS[3], key) then return {0} end
  elseif payload ~= ARGV[3] then
    return {0}
  end
end

local function removeSeries()
  redis.call('HDEL', KEYS[2], key)
  redis.call('ZREM', KEYS[1], key)
  redis.call('ZREM', KEYS[3], key)
  redis.call('HDEL', KEYS[5], key)
  redis.call('ZREM', KEYS[6], key)
  redis.call('HDEL', KEYS[7], key)
  redis.call('HDEL', KEYS[8], key)
  redis.call('ZREM', KEYS[9], key)
  -- The last schedule gone: no index left behind (a listing builds it again from ticks and active).
  if redis.call('ZCARD', KEYS[9]) <= 1 then redis.call('DEL', KEYS[9]) end
end

local count = tonumber(ARGV[9])
local grace = tonumber(ARGV[10 + count * 4] or '0')
if grace > 0 then
  local mark = tonumber(redis.call('HGET', KEYS[8], key) or '')
  if not mark then
    redis.call('HSET', KEYS[8], key, string.format('%d', now + grace))
  elseif mark < now then
    removeSeries()
    return {2}
  end
end

local function dueOf(kind, ms)
  if kind == 'delay' then return now + tonumber(ms) end
  return tonumber(ms)
end

-- The previous occurrences still waiting or running (a finished or cancelled one has no envelope).
local alive = {}
-- The one a refusal names: the first running, else the latest waiting.
local blocker, blockerState, blockerDue, blockerAttempt = '', '', 0, 0
local listed = redis.call('HGET', KEYS[5], key)
if listed and listed ~= '' then
  for member in string.gmatch(listed, '[^\31]+') do
    local held = redis.call('HGET', KEYS[2], member)
    if held then
      alive[#alive + 1] = member
      local state = redis.call('ZSCORE', KEYS[3], member) and 'running' or 'waiting'
      if blocker == '' or blockerState == 'waiting' then
        local _, attempt, dueAt = string.match(held, '^([^|]*)|([^|]*)|([^|]*)|')
        blocker, blockerState, blockerDue, blockerAttempt = member, state, tonumber(dueAt, 36), tonumber(attempt)
      end
    end
  end
end

local overlap = ARGV[4]
local refused = count > 0 and #alive > 0 and (overlap == 'skip' or overlap == 'bufferOne')
local whileAt = 11 + count * 4
local held = refused and overlap == 'bufferOne' and (ARGV[whileAt] or '') ~= ''
local cancelled = {}
if count > 0 and overlap == 'cancelPrevious' then
  for _, member in ipairs(alive) do
    redis.call('HDEL', KEYS[2], member)
    redis.call('ZREM', KEYS[1], member)
    redis.call('ZREM', KEYS[3], member)
    cancelled[#cancelled + 1] = member
  end
  alive = {}
end

local earliest = nil
local created, skipped = {}, {}
if held then
  -- Held back: nothing created; the ones the caller gave are skipped.
  for n = 1, tonumber(ARGV[whileAt + 3]) do skipped[#skipped + 1] = ARGV[whileAt + 3 + n] end
  count = 0
end
for n = 0, count - 1 do
  local base = 10 + n * 4
  local member = ARGV[base]
  if refused or redis.call('HEXISTS', KEYS[2], member) == 1 then
    skipped[#skipped + 1] = member
  else
    local dueAt = dueOf(ARGV[base + 1], ARGV[base + 2])
    redis.call('HSET', KEYS[2], member, mintToken(KEYS[4], micros) .. '|1|' .. b36(dueAt) .. '|' .. ARGV[base + 3])
    redis.call('ZADD', KEYS[1], dueAt, member)
    if not earliest or dueAt < earliest then earliest = dueAt end
    created[#created + 1] = member
    alive[#alive + 1] = member
  end
end
if refused and #skipped > 0 then
  recordSeriesRun(KEYS[7], skipped[#skipped] .. '\31' .. blockerState .. '\31' .. string.format('%d', blockerDue) .. '\31' .. blockerAttempt .. '\31' .. blocker, 'skipped', '', 0, now)
end

local nextKind, nextMs, nextPayload = ARGV[5], ARGV[6], ARGV[7]
if held then nextKind, nextMs, nextPayload = ARGV[whileAt], ARGV[whileAt + 1], ARGV[whileAt + 2] end
local nextDueAt = -1
if nextKind == 'remove' then
  removeSeries()
else
  if nextKind ~= 'keep' then
    local dueAt = dueOf(nextKind, nextMs)
    nextDueAt = dueAt
    redis.call('HSET', KEYS[2], key, mintToken(KEYS[4], micros) .. '|1|' .. b36(dueAt) .. '|' .. nextPayload)
    -- A run of the tick still going loses its lease; its ack will not match the new token.
    redis.call('ZREM', KEYS[3], key)
    redis.call('ZADD', KEYS[6], dueAt, key)
    -- Kept only once a listing of this shard built it: a topic never listed stores no index.
    if redis.call('EXISTS', KEYS[9]) == 1 then redis.call('ZADD', KEYS[9], 0, key) end
    -- Consumers whose slots are all busy sleep until a slot frees or a wake: a tick needs no slot, so tell them.
    local firstTick = redis.call('ZRANGE', KEYS[6], 0, 0)
    if firstTick[1] == key then redis.call('PUBLISH', ARGV[8], string.format('%d', dueAt)) end
  end
  -- Only while occurrences may be live: a schedule between them costs no field.
  if #alive > 0 then
    redis.call('HSET', KEYS[5], key, table.concat(alive, '\31'))
  elseif listed then
    redis.call('HDEL', KEYS[5], key)
  end
end

if earliest then
  local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  if first[2] and tonumber(first[2]) >= earliest then redis.call('PUBLISH', ARGV[8], string.format('%d', earliest)) end
end

if not refused then blocker, blockerState, blockerDue, blockerAttempt = '', '', 0, 0 end
local result = {1, #created, #skipped, #cancelled, nextDueAt, blocker, blockerState, blockerDue, blockerAttempt}
for _, member in ipairs(created) do result[#result + 1] = member end
for _, member in ipairs(skipped) do result[#result + 1] = member end
for _, member in ipairs(cancelled) do result[#result + 1] = member end
return result
