-- Envelopes keep tokens and due times in base 36: 8 characters for a due
-- time in ms instead of 13, which keeps a typical envelope inside a smaller
-- allocation class (see BENCHMARKS.md, memory per action). Lua 5.1 has no
-- base-36 format, and this runs on every arming, so it is written for
-- speed: the digits are worked out into locals and made into one string by
-- one string.char. No table, and no string per digit.

-- The eight base-36 digits of n (0 <= n < 36^8) as bytes, most significant
-- first, leading zeros included. '0'..'9' are bytes 48..57, 'a'..'z' 97..122.
local function b36digits8(n)
  local d8 = n % 36 n = (n - d8) / 36 d8 = d8 + (d8 > 9 and 87 or 48)
  local d7 = n % 36 n = (n - d7) / 36 d7 = d7 + (d7 > 9 and 87 or 48)
  local d6 = n % 36 n = (n - d6) / 36 d6 = d6 + (d6 > 9 and 87 or 48)
  local d5 = n % 36 n = (n - d5) / 36 d5 = d5 + (d5 > 9 and 87 or 48)
  local d4 = n % 36 n = (n - d4) / 36 d4 = d4 + (d4 > 9 and 87 or 48)
  local d3 = n % 36 n = (n - d3) / 36 d3 = d3 + (d3 > 9 and 87 or 48)
  local d2 = n % 36 n = (n - d2) / 36 d2 = d2 + (d2 > 9 and 87 or 48)
  local d1 = n % 36 n = (n - d1) / 36 d1 = d1 + (d1 > 9 and 87 or 48)
  return d1, d2, d3, d4, d5, d6, d7, d8
end

local function b36(n)
  if n < 0 then error('nestjs-delay: a time before 1970 cannot be stored') end
  n = math.floor(n)
  if n >= 4738381338321616896 then error('nestjs-delay: a number too large to encode') end
  -- Exactly 8 digits (36^7 to 36^8): every due time in ms from 1972 to 2059,
  -- encoded on every arming, without a search for leading zeros.
  if n >= 78364164096 and n < 2821109907456 then return string.char(b36digits8(n)) end
  -- Up to twelve digits (36^12 > 2^53, so every integer a double holds
  -- exactly fits): four above the low eight, then the leading zeros cut off.
  local low = n % 2821109907456
  n = (n - low) / 2821109907456
  local h4 = n % 36 n = (n - h4) / 36 h4 = h4 + (h4 > 9 and 87 or 48)
  local h3 = n % 36 n = (n - h3) / 36 h3 = h3 + (h3 > 9 and 87 or 48)
  local h2 = n % 36 n = (n - h2) / 36 h2 = h2 + (h2 > 9 and 87 or 48)
  local h1 = n % 36 n = (n - h1) / 36 h1 = h1 + (h1 > 9 and 87 or 48)
  local s = string.char(h1, h2, h3, h4, b36digits8(low))
  local first = string.find(s, '[^0]')
  if first == nil then return '0' end
  if first == 1 then return s end
  return string.sub(s, first)
end
