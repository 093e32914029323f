-- Calls `command` on `key` with `args`, 1,000 at a time (Lua's unpack passes a
-- bounded number of values); returns the replies of a command that answers
-- with a list (HMGET), joined in order. One command for many members costs
-- far less than one per member: most of a redis.call from Lua is its fixed
-- cost, whatever the member's own work. `args` holds whole pairs (score and
-- member, field and value) or single members: 1,000 never splits a pair.
local function callInChunks(command, key, args)
  local replies = {}
  for first = 1, #args, 1000 do
    local reply = redis.call(command, key, unpack(args, first, math.min(first + 999, #args)))
    if type(reply) == 'table' then
      for n = 1, #reply do replies[#replies + 1] = reply[n] end
    end
  end
  return replies
end
