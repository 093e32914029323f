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
--@include chunks
--@include series-run
local members = {}
for i = 2, #ARGV, 3 do members[#members + 1] = ARGV[i] end
local envelopes = callInChunks('HMGET', KEYS[1], members)
-- Writes go out together, one command each for all the runs (chunks.lua).
local removed, batches, runs = {}, {}, {}
-- A member acked twice in one call: the second finds it gone, as a second call would.
local gone = {}
local acked = 0
local now = nil
for n, member in ipairs(members) do
  local envelope = envelopes[n]
  if envelope and not gone[member] then
    local token, attempt, payload = string.match(envelope, '^([^|]*)|([^|]*)|[^|]*|(.*)$')
    local base = 2 + (n - 1) * 3
    if token == ARGV[base + 1] then
      gone[member] = true
      removed[#removed + 1] = member
      if string.sub(payload, 1, 1) == '#' then batches[#batches + 1] = ARGV[1] .. member end
      if ARGV[base + 2] ~= '' then
        now = now or serverNow()
        seriesRunEntry(runs, member, 'succeeded', ARGV[base + 2], attempt, now)
      end
      acked = acked + 1
    end
  end
end
if #removed > 0 then
  callInChunks('HDEL', KEYS[1], removed)
  callInChunks('ZREM', KEYS[2], removed)
end
for first = 1, #batches, 1000 do redis.call('DEL', unpack(batches, first, math.min(first + 999, #batches))) end
if #runs > 0 then callInChunks('HSET', KEYS[3], runs) end
return acked
