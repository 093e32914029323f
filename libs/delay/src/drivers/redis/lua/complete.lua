--[[
complete: acks successful runs, many in one call. Only the arming that ran
is removed: if an action was re-armed, rescheduled or cancelled meanwhile,
its token differs and nothing changes for it.

KEYS[1] env HASH
KEYS[2] active ZSET
ARGV[1] items key prefix (a batch's items are deleted with it)
ARGV[2], ARGV[3], ...: member (the key, or a closed batch's id), token of the run; pairs

Returns how many runs were acked.
]]
local acked = 0
for i = 2, #ARGV, 2 do
  local member = ARGV[i]
  local envelope = redis.call('HGET', KEYS[1], member)
  if envelope then
    local token, payload = string.match(envelope, '^([^|]*)|[^|]*|[^|]*|(.*)$')
    if token == ARGV[i + 1] then
      redis.call('HDEL', KEYS[1], member)
      redis.call('ZREM', KEYS[2], member)
      if string.sub(payload, 1, 1) == '#' then redis.call('DEL', ARGV[1] .. member) end
      acked = acked + 1
    end
  end
end
return acked
