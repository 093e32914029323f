-- The last run of a recurring schedule, kept in one hash field per schedule
-- (the part of an occurrence key before U+001E): "outcome|startedAt|attempt|at|occurrence key",
-- startedAt empty for an occurrence that never started (skipped). Written by
-- the script that records the run's outcome anyway, so it costs no round trip.

-- Appends the field and value for `member`'s run to `entries` (to write many
-- with one HSET); nothing for a member that is no occurrence.
local function seriesRunEntry(entries, member, outcome, startedAt, attempt, at)
  local cut = string.find(member, '\30', 1, true)
  if not cut then return end
  entries[#entries + 1] = string.sub(member, 1, cut - 1)
  entries[#entries + 1] = outcome .. '|' .. startedAt .. '|' .. attempt .. '|' .. string.format('%d', at) .. '|' .. member
end

local function recordSeriesRun(runsKey, member, outcome, startedAt, attempt, at)
  local entry = {}
  seriesRunEntry(entry, member, outcome, startedAt, attempt, at)
  if #entry > 0 then redis.call('HSET', runsKey, entry[1], entry[2]) end
end
