--[[
cancel: removes (topic, key), waiting or running. A running handler's ack
will then find no envelope and change nothing; it is never retried.

KEYS[1] due ZSET
KEYS[2] env HASH
KEYS[3] active ZSET
KEYS[4] ticks ZSET   recurring ticks, which wait here instead of due (include/tick.lua)
ARGV[1] key
ARGV[2] items key prefix (an open batch's items are deleted with it)

A batch of the key already closed by maxItems but not yet started is removed
too (listed in the SET ARGV[2] .. '\31' .. key); one already running is not.

Returns 1 if an action was removed, 0 if there was none.
]]
local removed = 0
if redis.call('HDEL', KEYS[2], ARGV[1]) == 1 then
  redis.call('ZREM', KEYS[1], ARGV[1])
  redis.call('ZREM', KEYS[3], ARGV[1])
  redis.call('ZREM', KEYS[4], ARGV[1])
  redis.call('DEL', ARGV[2] .. ARGV[1])
  removed = 1
end
-- Batches of this key closed by maxItems that have not started yet go too.
local sealedIndex = ARGV[2] .. '\31' .. ARGV[1]
for _, member in ipairs(redis.call('SMEMBERS', sealedIndex)) do
  if not redis.call('ZSCORE', KEYS[3], member) and redis.call('HDEL', KEYS[2], member) == 1 then
    redis.call('ZREM', KEYS[1], member)
    redis.call('DEL', ARGV[2] .. member)
    removed = 1
  end
end
redis.call('DEL', sealedIndex)
return removed
