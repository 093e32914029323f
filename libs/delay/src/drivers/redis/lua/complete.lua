--[[
complete: acks successful runs, many in one call. Only the arming that ran
is removed: if an action was re-armed, rescheduled or cancelled meanwhile,
its token differs and nothing changes for it.

KEYS[1] env HASH
KEYS[2] active ZSET
KEYS[3] runs HASH   the last run of each recurring schedule (include/series-run.lua)
ARGV[1] items key prefix (a batch's items are deleted with it)
ARGV[2], ARGV[3], ...: member (the key, or a closed batch's id), token of the
        run, and when it started (ms, '' unless the member is an occurrence of a
        recurring schedule); triples

Returns how many runs were acked.
]]
--@include clock
--@include series-run
local acked = 0
local now = nil
for i = 2, #ARGV, 3 do
  local member = ARGV[i]
  local envelope = redis.call('HGET', KEYS[1], member)
  if envelope then
    local token, attempt, payload = string.match(envelope, '^([^|]*)|([^|]*)|[^|]*|(.*)$')
    if token == ARGV[i + 1] then
      redis.call('HDEL', KEYS[1], member)
      redis.call('ZREM', KEYS[2], member)
      if string.sub(payload, 1, 1) == '#' then redis.call('DEL', ARGV[1] .. member) end
      if ARGV[i + 2] ~= '' then
        now = now or serverNow()
        recordSeriesRun(KEYS[3], member, 'succeeded', ARGV[i + 2], attempt, now)
      end
      acked = acked + 1
    end
  end
end
return acked
