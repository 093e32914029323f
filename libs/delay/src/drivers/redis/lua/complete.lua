--[[
complete: acks a successful run. Only the arming that ran is removed: if the
action was re-armed, rescheduled or cancelled meanwhile, the token differs
and nothing changes.

KEYS[1] env HASH
KEYS[2] active ZSET
ARGV[1] member (the key, or a closed batch's id)
ARGV[2] token of the run
ARGV[3] items key prefix (a batch's items are deleted with it)

Returns 1 if acked, 0 if the token no longer matches.
]]
local envelope = redis.call('HGET', KEYS[1], ARGV[1])
if not envelope then return 0 end
local token = string.match(envelope, '^([^|]*)|')
if token ~= ARGV[2] then return 0 end
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('DEL', ARGV[3] .. ARGV[1])
return 1
