-- A recurring schedule's tick is the action whose payload starts with the
-- series state's mark '@' (recurring/series-state.ts); no JSON payload and no
-- batch ('#') starts so. A tick waits in the topic's ticks ZSET, never in
-- due: claim.lua takes it without a handler slot. Scripts that put an action
-- back to wait pick the set by its envelope.
local function isTick(envelope)
  return string.match(envelope, '^[^|]*|[^|]*|[^|]*|@') ~= nil
end

local function waitingSetOf(envelope, dueKey, ticksKey)
  if isTick(envelope) then return ticksKey end
  return dueKey
end
