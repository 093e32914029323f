-- The one atomic step of a recurring series, as advance-series.lua documents
-- it: K its nine keys and A its arguments, laid out as that script's KEYS and
-- ARGV; now the script's reading of TIME; call what the steps of one script
-- call share (seriesCall). Returns that script's reply. Needs the clock,
-- encoding, token-batch, chunks, cached-store and series-run includes before it.

-- What the steps of one script call share: their tokens, reserved together
-- (tokenRange, at most one per occurrence and one for the tick of each step);
-- the keys they read and write, as cached stores (cached-store.lua: the
-- fields the steps name read with one command per key before the first step,
-- the writes sent once they are all made); whether the listing index exists;
-- and the wakes to publish then. `steps` holds each step's ARGV. End the call
-- with finishSeriesCall.
local function seriesCall(K, micros, steps)
  local tokens = 0
  local keys, tokenKeys, occurrences, graced = {}, {}, {}, {}
  for _, A in ipairs(steps) do
    local count = tonumber(A[9])
    tokens = tokens + count + 1
    keys[#keys + 1] = A[1]
    if A[2] == 'token' then tokenKeys[#tokenKeys + 1] = A[1] end
    for n = 0, count - 1 do occurrences[#occurrences + 1] = A[10 + n * 4] end
    if tonumber(A[10 + count * 4] or '0') > 0 then graced[#graced + 1] = A[1] end
  end
  local call = {
    mint = tokenRange(K[4], micros, tokens),
    indexed = nil,
    wakes = {},
    due = cachedStore(K[1], true),
    env = cachedStore(K[2], false),
    active = cachedStore(K[3], true),
    series = cachedStore(K[5], false),
    ticks = cachedStore(K[6], true),
    runs = cachedStore(K[7], false),
    declared = cachedStore(K[8], false),
  }
  call.series.prefetch(keys)
  -- The previous occurrences each series lists: read with the rest.
  local listed = {}
  for _, key in ipairs(keys) do
    local members = call.series.get(key)
    if members then
      for member in string.gmatch(members, '[^\31]+') do listed[#listed + 1] = member end
    end
  end
  for _, member in ipairs(occurrences) do keys[#keys + 1] = member end
  for _, member in ipairs(listed) do keys[#keys + 1] = member end
  call.env.prefetch(keys)
  for _, member in ipairs(listed) do tokenKeys[#tokenKeys + 1] = member end
  call.active.prefetch(tokenKeys)
  call.declared.prefetch(graced)
  return call
end

-- The wake of one channel: the ticks armed by the call (key -> true), and the
-- earliest due time of an occurrence it created.
local function wakeOf(call, channel)
  local wake = call.wakes[channel]
  if not wake then
    wake = { ticks = {}, anyTick = false, earliest = nil }
    call.wakes[channel] = wake
  end
  return wake
end

-- Sends the writes of the call's steps, then at most one message per channel
-- for them all: the earliest of the first tick, if the call armed it
-- (consumers whose slots are all busy sleep until a slot frees or a wake, and
-- a tick needs no slot), and the earliest occurrence created, if nothing was
-- due before it.
local function finishSeriesCall(K, call)
  for _, store in ipairs({call.env, call.due, call.active, call.series, call.ticks, call.runs, call.declared}) do store.flush() end
  for channel, wake in pairs(call.wakes) do
    local at = nil
    if wake.anyTick then
      local first = redis.call('ZRANGE', K[6], 0, 0, 'WITHSCORES')
      if first[1] and wake.ticks[first[1]] then at = tonumber(first[2]) end
    end
    if wake.earliest then
      local first = redis.call('ZRANGE', K[1], 0, 0, 'WITHSCORES')
      if first[2] and tonumber(first[2]) >= wake.earliest and (not at or wake.earliest < at) then at = wake.earliest end
    end
    if at then redis.call('PUBLISH', channel, string.format('%d', at)) end
  end
end

local function seriesStep(K, A, now, call)
  local key = A[1]

  local envelope = call.env.get(key)
  if A[2] == 'absent' then
    if envelope then return {0} end
    call.runs.remove(key)
  else
    if not envelope then return {0} end
    local token, payload = string.match(envelope, '^([^|]*)|[^|]*|[^|]*|(.*)$')
    if A[2] == 'token' then
      if token ~= A[3] or not call.active.get(key) then return {0} end
    elseif payload ~= A[3] then
      return {0}
    end
  end

  local function removeSeries()
    call.env.remove(key)
    call.due.remove(key)
    call.active.remove(key)
    call.series.remove(key)
    call.ticks.remove(key)
    call.runs.remove(key)
    call.declared.remove(key)
    redis.call('ZREM', K[9], key)
    -- The last schedule gone: no index left behind (a listing builds it again from ticks and active).
    if redis.call('ZCARD', K[9]) <= 1 then
      redis.call('DEL', K[9])
      call.indexed = false
    end
  end

  local count = tonumber(A[9])
  local grace = tonumber(A[10 + count * 4] or '0')
  if grace > 0 then
    local mark = tonumber(call.declared.get(key) or '')
    if not mark then
      call.declared.set(key, string.format('%d', now + grace))
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
  local listed = call.series.get(key)
  if listed and listed ~= '' then
    for member in string.gmatch(listed, '[^\31]+') do
      local held = call.env.get(member)
      if held then
        alive[#alive + 1] = member
        local state = call.active.get(member) and 'running' or 'waiting'
        if blocker == '' or blockerState == 'waiting' then
          local _, attempt, dueAt = string.match(held, '^([^|]*)|([^|]*)|([^|]*)|')
          blocker, blockerState, blockerDue, blockerAttempt = member, state, tonumber(dueAt, 36), tonumber(attempt)
        end
      end
    end
  end

  local overlap = A[4]
  local refused = count > 0 and #alive > 0 and (overlap == 'skip' or overlap == 'bufferOne')
  local whileAt = 11 + count * 4
  local held = refused and overlap == 'bufferOne' and (A[whileAt] or '') ~= ''
  local cancelled = {}
  if count > 0 and overlap == 'cancelPrevious' then
    for _, member in ipairs(alive) do
      call.env.remove(member)
      call.due.remove(member)
      call.active.remove(member)
      cancelled[#cancelled + 1] = member
    end
    alive = {}
  end

  local earliest = nil
  local created, skipped = {}, {}
  if held then
    -- Held back: nothing created; the ones the caller gave are skipped.
    for n = 1, tonumber(A[whileAt + 3]) do skipped[#skipped + 1] = A[whileAt + 3 + n] end
    count = 0
  end
  for n = 0, count - 1 do
    local base = 10 + n * 4
    local member = A[base]
    if refused or call.env.get(member) then
      skipped[#skipped + 1] = member
    else
      local dueAt = dueOf(A[base + 1], A[base + 2])
      call.env.set(member, call.mint() .. '|1|' .. b36(dueAt) .. '|' .. A[base + 3])
      call.due.set(member, dueAt)
      if not earliest or dueAt < earliest then earliest = dueAt end
      created[#created + 1] = member
      alive[#alive + 1] = member
    end
  end
  if refused and #skipped > 0 then
    local entry = {}
    seriesRunEntry(entry, skipped[#skipped] .. '\31' .. blockerState .. '\31' .. string.format('%d', blockerDue) .. '\31' .. blockerAttempt .. '\31' .. blocker, 'skipped', '', 0, now)
    if #entry > 0 then call.runs.set(entry[1], entry[2]) end
  end

  local nextKind, nextMs, nextPayload = A[5], A[6], A[7]
  if held then nextKind, nextMs, nextPayload = A[whileAt], A[whileAt + 1], A[whileAt + 2] end
  local nextDueAt = -1
  if nextKind == 'remove' then
    removeSeries()
  else
    if nextKind ~= 'keep' then
      local dueAt = dueOf(nextKind, nextMs)
      nextDueAt = dueAt
      call.env.set(key, call.mint() .. '|1|' .. b36(dueAt) .. '|' .. nextPayload)
      -- A run of the tick still going loses its lease; its ack will not match the new token.
      call.active.remove(key)
      call.ticks.set(key, dueAt)
      -- Kept only once a listing of this shard built it: a topic never listed stores no index.
      if call.indexed == nil then call.indexed = redis.call('EXISTS', K[9]) == 1 end
      if call.indexed then redis.call('ZADD', K[9], 0, key) end
      local wake = wakeOf(call, A[8])
      wake.ticks[key] = true
      wake.anyTick = true
    end
    -- Only while occurrences may be live: a schedule between them costs no field.
    if #alive > 0 then
      call.series.set(key, table.concat(alive, '\31'))
    elseif listed then
      call.series.remove(key)
    end
  end

  if earliest then
    local wake = wakeOf(call, A[8])
    if not wake.earliest or earliest < wake.earliest then wake.earliest = earliest end
  end

  if not refused then blocker, blockerState, blockerDue, blockerAttempt = '', '', 0, 0 end
  local result = {1, #created, #skipped, #cancelled, nextDueAt, blocker, blockerState, blockerDue, blockerAttempt}
  for _, member in ipairs(created) do result[#result + 1] = member end
  for _, member in ipairs(skipped) do result[#result + 1] = member end
  for _, member in ipairs(cancelled) do result[#result + 1] = member end
  return result
end
