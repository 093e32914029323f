-- The one atomic step of a recurring series, as advance-series.lua documents
-- it: K its nine keys and A its arguments, laid out as that script's KEYS and
-- ARGV; now and micros the script's reading of TIME. Returns that script's
-- reply. Needs the clock, encoding, token and series-run includes before it.
local function seriesStep(K, A, now, micros)
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
    if redis.call('ZCARD', K[9]) <= 1 then redis.call('DEL', K[9]) end
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
    if refused or redis.call('HEXISTS', K[2], member) == 1 then
      skipped[#skipped + 1] = member
    else
      local dueAt = dueOf(A[base + 1], A[base + 2])
      redis.call('HSET', K[2], member, mintToken(K[4], micros) .. '|1|' .. b36(dueAt) .. '|' .. A[base + 3])
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
      redis.call('HSET', K[2], key, mintToken(K[4], micros) .. '|1|' .. b36(dueAt) .. '|' .. nextPayload)
      -- A run of the tick still going loses its lease; its ack will not match the new token.
      redis.call('ZREM', K[3], key)
      redis.call('ZADD', K[6], dueAt, key)
      -- Kept only once a listing of this shard built it: a topic never listed stores no index.
      if redis.call('EXISTS', K[9]) == 1 then redis.call('ZADD', K[9], 0, key) end
      -- Consumers whose slots are all busy sleep until a slot frees or a wake: a tick needs no slot, so tell them.
      local firstTick = redis.call('ZRANGE', K[6], 0, 0)
      if firstTick[1] == key then redis.call('PUBLISH', A[8], string.format('%d', dueAt)) end
    end
    -- Only while occurrences may be live: a schedule between them costs no field.
    if #alive > 0 then
      redis.call('HSET', K[5], key, table.concat(alive, '\31'))
    elseif listed then
      redis.call('HDEL', K[5], key)
    end
  end

  if earliest then
    local first = redis.call('ZRANGE', K[1], 0, 0, 'WITHSCORES')
    if first[2] and tonumber(first[2]) >= earliest then redis.call('PUBLISH', A[8], string.format('%d', earliest)) end
  end

  if not refused then blocker, blockerState, blockerDue, blockerAttempt = '', '', 0, 0 end
  local result = {1, #created, #skipped, #cancelled, nextDueAt, blocker, blockerState, blockerDue, blockerAttempt}
  for _, member in ipairs(created) do result[#result + 1] = member end
  for _, member in ipairs(skipped) do result[#result + 1] = member end
  for _, member in ipairs(cancelled) do result[#result + 1] = member end
  return result
end
