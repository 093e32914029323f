-- Envelopes keep tokens and due times in base 36: 8 characters for a due
-- time in ms instead of 13, which keeps a typical envelope inside a smaller
-- allocation class (see BENCHMARKS.md, memory per action). The digits are
-- gathered as bytes and made into one string at the end: concatenating
-- digit by digit allocates a string per digit, on every schedule.
local function b36(n)
  if n < 0 then error('nestjs-delay: a time before 1970 cannot be stored') end
  n = math.floor(n)
  local bytes = {}
  local count = 0
  repeat
    local d = n % 36
    count = count + 1
    -- '0'..'9' are bytes 48..57, 'a'..'z' 97..122.
    if d < 10 then bytes[count] = 48 + d else bytes[count] = 87 + d end
    n = (n - d) / 36
  until n == 0
  for i = 1, math.floor(count / 2) do
    bytes[i], bytes[count + 1 - i] = bytes[count + 1 - i], bytes[i]
  end
  return string.char(unpack(bytes, 1, count))
end
