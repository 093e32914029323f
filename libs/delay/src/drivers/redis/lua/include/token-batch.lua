-- Many tokens in one script (schedule-many): the counter is read once and
-- written once (a separate include: a script that needs one token does not
-- pay for defining these), the tokens in between are consecutive past both the clock
-- and the last token minted. Call next() for each, then save().
-- Needs the clock and encoding includes before it.
local function tokenMinter(seqKey, micros)
  local last = tonumber(redis.call('GET', seqKey) or '0')
  if last < micros - 1 then last = micros - 1 end
  local minted = false
  -- The tokens are consecutive, so each one's base-36 form is the previous
  -- one with its last digit stepped: one string operation instead of a full
  -- encoding (which costs more than the rest of an entry's Lua work). Only a
  -- carry (last digit 'z') encodes in full.
  local encoded = nil
  return {
    next = function()
      last = last + 1
      minted = true
      local digit = encoded and string.byte(encoded, -1)
      if digit and digit ~= 122 then
        if digit == 57 then digit = 97 else digit = digit + 1 end
        encoded = string.sub(encoded, 1, -2) .. string.char(digit)
      else
        encoded = b36(last)
      end
      return encoded
    end,
    save = function()
      if minted then redis.call('SET', seqKey, string.format('%.0f', last)) end
    end,
  }
end
