--[[
pause: marks a topic paused. The claim script claims nothing while the
mark exists, so every instance stops starting handlers of the topic at its
next claim; runs already going on finish and are acked as usual.

KEYS[1] paused STRING (same hash tag as the topic's other keys); its value is when it was paused, ms
ARGV[1] (none: pausing needs no wake-up, the next claim of each instance sees the mark)

Returns 1 if the topic was not paused before, 0 if it already was.
]]
--@include clock
if redis.call('SET', KEYS[1], string.format('%d', serverNow()), 'NX') then return 1 end
return 0
