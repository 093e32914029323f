--[[
claim: takes up to LIMIT due actions of a topic under a lease.

First, leases that expired (their instance crashed or stalled) go back to
due now, as a new attempt with a new token, so a late ack from the stalled
run changes nothing. Then the earliest due actions move from due to active.
An open batch (envelope payload "#count|openedAt", filed under its bare key)
is closed as it is claimed: re-filed under key .. "\31" .. token (zero-padded,
as collect does), so items collected from now on open the next batch.

KEYS[1] due ZSET
KEYS[2] env HASH
KEYS[3] active ZSET
KEYS[4] seq STRING   the last arming token minted (include/token.lua)
KEYS[5] claim record LIST: member, token pairs this claim took (its id is
        chosen by the caller, so a claim whose reply was lost can be asked
        again: it then hands back what it took, still leased, same attempt)
KEYS[6] the record of this instance's previous claim, whose reply arrived:
        no longer needed, deleted (a record otherwise expires with its lease)
KEYS[7] paused STRING: while it exists nothing new is claimed and next is
        -1 (a resume publishes a wake); a lost reply is still handed back
KEYS[8] ticks ZSET: recurring ticks (include/tick.lua), scored by due time,
        never in due; up to ARGV[4] due ones are taken besides the limit: a
        tick is library work that takes no handler slot, so long handlers
        cannot hold a schedule back (an expired tick's lease puts it back here)
ARGV[1] limit: how many to claim at most
ARGV[2] lease, ms
ARGV[3] items key prefix (a batch's items live at prefix .. member, same hash tag)
ARGV[4] how many due ticks to take besides the limit

A batch sealed by collect (maxItems) leaves the key's index of sealed
batches once claimed: cancel(key) no longer reaches a batch that started.

Returns {now, next, nextTick, member1, envelope1, items1, member2, ...}
  next: when this topic next needs a look (earliest due time, tick or
  lease expiry left), -1 if nothing is pending; nextTick: the earliest tick left,
  -1 if none. itemsN is '' for a single action, "\30" for a tick taken
  besides the limit.
]]
--@include clock
--@include encoding
--@include token
--@include token-batch
--@include chunks
--@include tick
local now, micros = serverTime()
local limit = tonumber(ARGV[1])
local leaseUntil = now + tonumber(ARGV[2])
local itemsPrefix = ARGV[3]

-- Writes go out together, one command each for all the members (chunks.lua).
local leases = {}
local record = {}

local hasTicks = redis.call('EXISTS', KEYS[8]) == 1
local expired = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now, 'LIMIT', 0, 100)
if #expired > 0 then
  callInChunks('ZREM', KEYS[3], expired)
  local envelopes = callInChunks('HMGET', KEYS[2], expired)
  local mint = tokenRange(KEYS[4], micros, #expired)
  local rearmed, dueAgain, ticksAgain = {}, {}, {}
  for n, member in ipairs(expired) do
    local envelope = envelopes[n]
    if envelope then
      local old, attempt, dueAt, payload = string.match(envelope, '^([^|]*)|([^|]*)|([^|]*)|(.*)$')
      rearmed[#rearmed + 1] = member
      rearmed[#rearmed + 1] = mint() .. traceOf(old) .. '|' .. (tonumber(attempt) + 1) .. '|' .. dueAt .. '|' .. payload
      local waiting = dueAgain
      if isTick(envelope) then waiting = ticksAgain end
      waiting[#waiting + 1] = now
      waiting[#waiting + 1] = member
    end
  end
  if #rearmed > 0 then callInChunks('HSET', KEYS[2], rearmed) end
  if #dueAgain > 0 then callInChunks('ZADD', KEYS[1], dueAgain) end
  if #ticksAgain > 0 then
    callInChunks('ZADD', KEYS[8], ticksAgain)
    hasTicks = true
  end
end

redis.call('DEL', KEYS[6])
local paused = redis.call('EXISTS', KEYS[7]) == 1

local result = {now, -1, -1}
local function hand(member, envelope, tick)
  local items = ''
  if tick then items = '\30'
  elseif string.match(envelope, '^[^|]*|[^|]*|[^|]*|#') then items = redis.call('GET', itemsPrefix .. member) or '' end
  leases[#leases + 1] = leaseUntil
  leases[#leases + 1] = member
  result[#result + 1] = member
  result[#result + 1] = envelope
  result[#result + 1] = items
end

if redis.call('EXISTS', KEYS[5]) == 1 then
  -- The same claim again: its reply was lost. Hand back what it took and still holds.
  local taken = redis.call('LRANGE', KEYS[5], 0, -1)
  -- Its leases are renewed below: the record lives as long, in case this reply is lost too.
  redis.call('PEXPIRE', KEYS[5], tonumber(ARGV[2]))
  for i = 1, #taken, 2 do
    local member = taken[i]
    local envelope = redis.call('HGET', KEYS[2], member)
    if envelope and redis.call('ZSCORE', KEYS[3], member) and string.match(envelope, '^([^|]*)|') == taken[i + 1] then
      hand(member, envelope)
    end
  end
elseif not paused then
  local due = {}
  if limit > 0 then due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, limit) end
  if #due > 0 then
    callInChunks('ZREM', KEYS[1], due)
    local envelopes = callInChunks('HMGET', KEYS[2], due)
    for n, member in ipairs(due) do
      local envelope = envelopes[n]
      if envelope then
        local token, _, _, payload = string.match(envelope, '^([^|]*)|([^|]*)|([^|]*)|(.*)$')
        if string.sub(payload, 1, 1) == '#' then
          local sep = string.find(member, '\31', 1, true)
          if sep then
            redis.call('SREM', itemsPrefix .. '\31' .. string.sub(member, 1, sep - 1), member)
          else
            local sealed = member .. '\31' .. string.format('%016d', tokenNumber(token))
            redis.call('HDEL', KEYS[2], member)
            redis.call('HSET', KEYS[2], sealed, envelope)
            redis.call('RENAME', itemsPrefix .. member, itemsPrefix .. sealed)
            member = sealed
          end
        end
        hand(member, envelope)
        record[#record + 1] = member
        record[#record + 1] = token
      end
    end
  end
  if hasTicks then
    local ticks = redis.call('ZRANGEBYSCORE', KEYS[8], '-inf', now, 'LIMIT', 0, tonumber(ARGV[4]))
    if #ticks > 0 then
      callInChunks('ZREM', KEYS[8], ticks)
      -- Read after the due ones were sealed: a key in both sets sees what its turn alone would.
      local envelopes = callInChunks('HMGET', KEYS[2], ticks)
      for n, member in ipairs(ticks) do
        local envelope = envelopes[n]
        -- Only a tick still: an action scheduled by hand over a tick's key leaves its entry here.
        if envelope and isTick(envelope) then
          hand(member, envelope, true)
          record[#record + 1] = member
          record[#record + 1] = string.match(envelope, '^([^|]*)|')
        end
      end
    end
  end
  if #record > 0 then callInChunks('RPUSH', KEYS[5], record) end
  if #result > 3 then redis.call('PEXPIRE', KEYS[5], tonumber(ARGV[2])) end
end
if #leases > 0 then callInChunks('ZADD', KEYS[3], leases) end

local nextDue = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
local nextLease = redis.call('ZRANGE', KEYS[3], 0, 0, 'WITHSCORES')
local nextAt = -1
if nextDue[2] then nextAt = tonumber(nextDue[2]) end
if nextLease[2] and (nextAt < 0 or tonumber(nextLease[2]) < nextAt) then nextAt = tonumber(nextLease[2]) end
if hasTicks and not paused then
  local nextTick = redis.call('ZRANGE', KEYS[8], 0, 0, 'WITHSCORES')
  if nextTick[2] then
    result[3] = tonumber(nextTick[2])
    if nextAt < 0 or result[3] < nextAt then nextAt = result[3] end
  end
end
if paused then nextAt = -1 end
result[2] = nextAt
return result
