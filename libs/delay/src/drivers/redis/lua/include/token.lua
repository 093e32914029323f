-- Arming tokens. A token must never repeat for a topic, even after Redis
-- lost data (restart without persistence) or a replica that missed the last
-- writes took over: an outcome carrying an old token must never match an
-- arming made after it. So a token is the server's time in microseconds,
-- pushed one past the last token minted when the clock has not moved on.
-- After a loss the counter key is gone or behind, but time has moved on.
-- `micros` is the script's own reading of TIME (serverTime()), if it has one.
-- Needs the clock and encoding includes before it.
local function mintToken(seqKey, micros)
  if micros == nil then
    local _
    _, micros = serverTime()
  end
  -- One call in the common case (the clock moved on): write the time and read
  -- back what was there; only a clock that did not move needs a second SET.
  local token = micros
  local last = tonumber(redis.call('SET', seqKey, string.format('%.0f', token), 'GET') or '0')
  if last >= token then
    token = last + 1
    redis.call('SET', seqKey, string.format('%.0f', token))
  end
  return b36(token)
end

-- A token may carry the trace context (a W3C traceparent) of the request
-- that armed the action, after a '~': the handler's span is then a child of
-- that request's. A new token for the same arming (retry, lease expiry,
-- release, reschedule) keeps it; acks compare the whole field.
local function traceOf(token)
  return string.match(token, '~.*$') or ''
end

local function withTrace(token, trace)
  if trace == nil or trace == '' then return token end
  return token .. '~' .. trace
end

-- The token's number (what sealed batch ids are made of), without its trace.
local function tokenNumber(token)
  return tonumber(string.match(token, '^[^~]*'), 36)
end
