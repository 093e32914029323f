-- The last run of a recurring schedule, kept in one hash field per schedule
-- (the part of an occurrence key before U+001E): "outcome|startedAt|attempt|at|occurrence key",
-- startedAt empty for an occurrence that never started (skipped). Written by
-- the script that records the run's outcome anyway, so it costs no round trip.
local function recordSeriesRun(runsKey, member, outcome, startedAt, attempt, at)
  local cut = string.find(member, '\30', 1, true)
  if not cut then return end
  redis.call('HSET', runsKey, string.sub(member, 1, cut - 1), outcome .. '|' .. startedAt .. '|' .. attempt .. '|' .. string.format('%d', at) .. '|' .. member)
end
