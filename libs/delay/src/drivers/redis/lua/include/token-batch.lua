-- Many tokens in one script (schedule-many): the counter is read once and
-- written once (a separate include: a script that needs one token does not
-- pay for defining these), the tokens in between are consecutive past both the clock
-- and the last token minted. Call next() for each, then save().
-- Needs the clock and encoding includes before it.
local function tokenMinter(seqKey, micros)
  local last = tonumber(redis.call('GET', seqKey) or '0')
  if last < micros - 1 then last = micros - 1 end
  local minted = false
  return {
    next = function()
      last = last + 1
      minted = true
      return b36(last)
    end,
    save = function()
      if minted then redis.call('SET', seqKey, string.format('%.0f', last)) end
    end,
  }
end
