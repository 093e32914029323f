--[[
extend: renews the leases of runs still going in this instance.

KEYS[1] env HASH
KEYS[2] active ZSET
ARGV[1] lease, ms
ARGV[2], ARGV[3], ...: key, token pairs

Returns the keys whose lease was not renewed because their arming is gone
(cancelled, or re-armed under another token): the caller tells their runs.
]]
--@include clock
local now = serverNow()
local leaseUntil = now + tonumber(ARGV[1])
local lost = {}
for i = 2, #ARGV, 2 do
  local envelope = redis.call('HGET', KEYS[1], ARGV[i])
  if envelope and string.match(envelope, '^([^|]*)|') == ARGV[i + 1] then
    redis.call('ZADD', KEYS[2], 'XX', leaseUntil, ARGV[i])
  else
    lost[#lost + 1] = ARGV[i]
  end
end
return lost
