-- A hash or a sorted set as the steps of one script call see it. A read
-- comes from what the call wrote, else from what it read before (prefetch
-- reads many fields with one HMGET or ZMSCORE), else from Redis; absent is
-- false. Writes are only kept, the last one per field, until flush() sends
-- them all, one command per kind (HSET and HDEL, or ZADD and ZREM): most of
-- a redis.call from Lua is its fixed cost, whatever the field's own work.
-- Nothing else may touch the key between the first read and flush().
-- Needs the chunks include before it.
local function cachedStore(key, sorted)
  local known, written, order = {}, {}, {}
  local store = {}

  function store.get(field)
    local value = written[field]
    if value ~= nil then return value end
    value = known[field]
    if value == nil then
      if sorted then value = redis.call('ZSCORE', key, field) else value = redis.call('HGET', key, field) end
      known[field] = value
    end
    return value
  end

  function store.prefetch(fields)
    local wanted, seen = {}, {}
    for _, field in ipairs(fields) do
      if written[field] == nil and known[field] == nil and not seen[field] then
        seen[field] = true
        wanted[#wanted + 1] = field
      end
    end
    if #wanted == 0 then return end
    local command = 'HMGET'
    if sorted then command = 'ZMSCORE' end
    local values = callInChunks(command, key, wanted)
    for n, field in ipairs(wanted) do known[field] = values[n] end
  end

  -- value: the hash field's value, or the member's score; false removes it.
  function store.set(field, value)
    if written[field] == nil then order[#order + 1] = field end
    written[field] = value
  end

  function store.remove(field)
    store.set(field, false)
  end

  function store.flush()
    local sets, removes = {}, {}
    for _, field in ipairs(order) do
      local value = written[field]
      known[field] = value
      if value == false then
        removes[#removes + 1] = field
      elseif sorted then
        sets[#sets + 1] = value
        sets[#sets + 1] = field
      else
        sets[#sets + 1] = field
        sets[#sets + 1] = value
      end
    end
    if #removes > 0 then
      if sorted then callInChunks('ZREM', key, removes) else callInChunks('HDEL', key, removes) end
    end
    if #sets > 0 then
      if sorted then callInChunks('ZADD', key, sets) else callInChunks('HSET', key, sets) end
    end
    written, order = {}, {}
  end

  return store
end
