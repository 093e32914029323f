-- Many tokens in one script (schedule-many, claim, the series steps): the
-- counter is read once and written once (a separate include: a script that
-- needs one token does not pay for defining these), the tokens in between are
-- consecutive past both the clock and the last token minted.
-- Needs the clock and encoding includes before it.

-- The tokens after `last`, one per call of the function returned. They are
-- consecutive, so each one's base-36 form is the previous one with its last
-- digit stepped: one string operation instead of a full encoding (which costs
-- more than the rest of an entry's Lua work). Only a carry (last digit 'z')
-- encodes in full.
local function tokensAfter(last)
  local encoded = nil
  return function()
    last = last + 1
    local digit = encoded and string.byte(encoded, -1)
    if digit and digit ~= 122 then
      if digit == 57 then digit = 97 else digit = digit + 1 end
      encoded = string.sub(encoded, 1, -2) .. string.char(digit)
    else
      encoded = b36(last)
    end
    return encoded
  end
end

-- Call next() for each token, then save().
local function tokenMinter(seqKey, micros)
  local last = tonumber(redis.call('GET', seqKey) or '0')
  if last < micros - 1 then last = micros - 1 end
  local step = tokensAfter(last)
  local minted = 0
  return {
    next = function()
      minted = minted + 1
      return step()
    end,
    save = function()
      if minted > 0 then redis.call('SET', seqKey, string.format('%.0f', last + minted)) end
    end,
  }
end

-- Up to `count` tokens, reserved together when the first is asked for: the
-- counter moves past all of them before any is used, so a script stopped
-- half way by an error leaves no token it wrote ahead of the counter. Tokens
-- reserved and not used are never used. Returns the function that gives the
-- next one.
local function tokenRange(seqKey, micros, count)
  local step = nil
  return function()
    if not step then
      local last = tonumber(redis.call('GET', seqKey) or '0')
      if last < micros - 1 then last = micros - 1 end
      redis.call('SET', seqKey, string.format('%.0f', last + count))
      step = tokensAfter(last)
    end
    return step()
  end
end
