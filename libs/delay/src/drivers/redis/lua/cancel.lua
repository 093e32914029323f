--[[
cancel: removes (topic, key), waiting or running. A running handler's ack
will then find no envelope and change nothing; it is never retried.

KEYS[1] due ZSET
KEYS[2] env HASH
KEYS[3] active ZSET
ARGV[1] key
ARGV[2] items key prefix (an open batch's items are deleted with it)

Returns 1 if an action was removed, 0 if there was none.
]]
if redis.call('HDEL', KEYS[2], ARGV[1]) == 0 then return 0 end
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('DEL', ARGV[2] .. ARGV[1])
return 1
