-- The one atomic step of a recurring series, as advance-series.lua documents
-- it: K its nine keys and A its arguments, laid out as that script's KEYS and
-- ARGV; now the script's reading of TIME; call what the steps of one script
-- call share (seriesCall). Returns that script's reply. Needs the clock,
-- encoding, token-batch and series-run includes before it.

-- What the steps of one script call share: their tokens, reserved together
-- (tokenRange, at most one per occurrence and one for the tick of each step),
-- whether the listing index exists, and the wakes to publish once the steps
-- are made (publishSeriesWakes). `steps` holds each step's ARGV.
local function seriesCall(K, micros, steps)
  local tokens = 0
  for _, A in ipairs(steps) do tokens = tokens + tonumber(A[9]) + 1 end
  return { mint = tokenRange(K[4], micros, tokens), indexed = nil, wakes = {} }
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

-- At most one message per channel for all the steps of a call: the earliest
-- of the first tick, if the call armed it (consumers whose slots are all busy
-- sleep until a slot frees or a wake, and a tick needs no slot), and the
-- earliest occurrence created, if nothing was due before it.
local function publishSeriesWakes(K, call)
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

  local envelope = redis.call('HGET', K[2], key)
  if A[2] == 'absent' then
    if envelope then return {0} end
    redis.call('HDEL', K[7], key)
  else
    if not envelope then return {0} end
    local token, payload = string.match(envelope, '^([^|]*)|[^|]*|[^|]*|(.*)$')
    if A[2] == 'token' then
      if token ~= A[3] or not redis.call('ZSCORE', K[3], key) then return {0} end
    elseif payload ~= A[3] then
      return {0}
    end
  end

  local function removeSeries()
    redis.call('HDEL', K[2], key)
    redis.call('ZREM', K[1], key)
    redis.call('ZREM', K[3], key)
    redis.call('HDEL', K[5], key)
    redis.call('ZREM', K[6], key)
    redis.call('HDEL', K[7], key)
    redis.call('HDEL', K[8], key)
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
    local mark = tonumber(redis.call('HGET', K[8], key) or '')
    if not mark then
      redis.call('HSET', K[8], key, string.format('%d', now + grace))
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
  local listed = redis.call('HGET', K[5], key)
  if listed and listed ~= '' then
    for member in string.gmatch(listed, '[^\31]+') do
      local held = redis.call('HGET', K[2], member)
      if held then
        alive[#alive + 1] = member
        local state = redis.call('ZSCORE', K[3], member) and 'running' or 'waiting'
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
      redis.call('HDEL', K[2], member)
      redis.call('ZREM', K[1], member)
      redis.call('ZREM', K[3], member)
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
    local dueAt = nil
    if not refused then
      dueAt = dueOf(A[base + 1], A[base + 2])
      -- Written only if the key is free: a key already armed is skipped (its token stays unused).
      if redis.call('HSETNX', K[2], member, call.mint() .. '|1|' .. b36(dueAt) .. '|' .. A[base + 3]) == 0 then dueAt = nil end
    end
    if not dueAt then
      skipped[#skipped + 1] = member
    else
      redis.call('ZADD', K[1], dueAt, member)
      if not earliest or dueAt < earliest then earliest = dueAt end
      created[#created + 1] = member
      alive[#alive + 1] = member
    end
  end
  if refused and #skipped > 0 then
    recordSeriesRun(K[7], skipped[#skipped] .. '\31' .. blockerState .. '\31' .. string.format('%d', blockerDue) .. '\31' .. blockerAttempt .. '\31' .. blocker, 'skipped', '', 0, now)
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
      redis.call('HSET', K[2], key, call.mint() .. '|1|' .. b36(dueAt) .. '|' .. nextPayload)
      -- A run of the tick still going loses its lease; its ack will not match the new token.
      redis.call('ZREM', K[3], key)
      redis.call('ZADD', K[6], dueAt, key)
      -- Kept only once a listing of this shard built it: a topic never listed stores no index.
      if call.indexed == nil then call.indexed = redis.call('EXISTS', K[9]) == 1 end
      if call.indexed then redis.call('ZADD', K[9], 0, key) end
      local wake = wakeOf(call, A[8])
      wake.ticks[key] = true
      wake.anyTick = true
    end
    -- Only while occurrences may be live: a schedule between them costs no field.
    if #alive > 0 then
      redis.call('HSET', K[5], key, table.concat(alive, '\31'))
    elseif listed then
      redis.call('HDEL', K[5], key)
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
