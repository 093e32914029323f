-- Envelopes keep tokens and due times in base 36: 8 characters for a due
-- time in ms instead of 13, which keeps a typical envelope inside a smaller
-- allocation class (see BENCHMARKS.md, memory per action).
local function b36(n)
  if n < 0 then error('nestjs-delay: a time before 1970 cannot be stored') end
  local digits = '0123456789abcdefghijklmnopqrstuvwxyz'
  local text = ''
  n = math.floor(n)
  repeat
    local d = n % 36
    text = string.sub(digits, d + 1, d + 1) .. text
    n = math.floor(n / 36)
  until n == 0
  return text
end
