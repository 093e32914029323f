--[[
resume: removes a topic's paused mark and wakes every consumer of the
topic, so what fell due meanwhile is claimed now, earliest first (claims
take the due ZSET in score order).

KEYS[1] paused STRING
ARGV[1] wake channel

Returns 1 if the topic was paused, 0 if it was not.
]]
--@include clock
if redis.call('DEL', KEYS[1]) == 0 then return 0 end
-- "Look now": consumers asleep on a paused claim have no timer armed.
redis.call('PUBLISH', ARGV[1], string.format('%d', serverNow()))
return 1
