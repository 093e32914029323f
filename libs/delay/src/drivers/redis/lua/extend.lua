--[[
extend: renews the leases of runs still going in this instance.

KEYS[1] env HASH
KEYS[2] active ZSET
ARGV[1] lease, ms
ARGV[2], ARGV[3], ...: key, token pairs

Returns how many leases were renewed (a cancelled or re-armed run is not).
]]
--@include clock
local now = serverNow()
local leaseUntil = now + tonumber(ARGV[1])
local renewed = 0
for i = 2, #ARGV, 2 do
  local envelope = redis.call('HGET', KEYS[1], ARGV[i])
  if envelope and string.match(envelope, '^([^|]*)|') == ARGV[i + 1] then
    renewed = renewed + redis.call('ZADD', KEYS[2], 'XX', 'CH', leaseUntil, ARGV[i])
  end
end
return renewed
