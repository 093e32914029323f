--[[
advance-series: the one atomic step of a recurring series (see the
advanceSeries contract in delay-driver.interface.ts). The series' tick is
the ordinary action under the series key; its occurrences are actions of the
same topic under the series key, U+001E and an identity. All live in the
same shard (the shard hash of an occurrence key is that of its series key).

KEYS[1] due ZSET
KEYS[2] env HASH
KEYS[3] active ZSET
KEYS[4] seq STRING    the last arming token minted (include/token.lua)
KEYS[5] series HASH   field = series key, value = keys of its occurrences that
                      may still be waiting or running, joined by "\31"; no
                      field while there is none (most of the time)
KEYS[6] ticks ZSET    the series' ticks, scored by due time: a tick waits
                      here, never in due (include/tick.lua), and claim.lua
                      takes it without a handler slot
KEYS[7] runs HASH     the last run of each series (include/series-run.lua):
                      an occurrence refused by the overlap policy is recorded
                      as 'skipped', its occurrence key followed by "\31" and
                      the blocker: state, due time (ms), attempt, key, each
                      after a "\31"
KEYS[8] declared HASH field = series key, value = until when (ms) a running
                      instance declares it in code (declare.lua)
KEYS[9] schedules ZSET the series keys, all scored 0, ranged by key for
                      listings (list-series.lua), once a listing built it:
                      while it exists, a key is added when its tick is
                      armed and removed with its series

ARGV[1] series key
ARGV[2] 'token', 'payload' or 'absent': what must hold for anything to change
ARGV[3] the tick's token field (acks compare the whole field), or its payload
ARGV[4] overlap: 'skip', 'bufferOne', 'allow' or 'cancelPrevious'
ARGV[5] next: 'keep', 'remove', 'delay' or 'at'
ARGV[6] the delay or the absolute due time of the tick, ms
ARGV[7] the tick's payload
ARGV[8] wake channel
ARGV[9] how many occurrences follow, then per occurrence 4 values:
        key, 'delay' or 'at', ms, payload ('' for none)
then    the orphan grace, ms (0: no check). With one, a series no instance
        declares any more (its mark in `declared` has passed) is removed instead
        of advanced; a series without a mark gets one, that far ahead.
then    whileAlive ('bufferOne'): '' for none, else 'delay' or 'at', the ms
        and the payload of the tick's arming to make instead when a previous
        occurrence is still waiting or running (then nothing is created), and
        how many keys follow, reported skipped in that case.

With 'skip' or 'bufferOne', occurrences are refused while a previous one is
waiting or running ('bufferOne' never lets two be alive); with whileAlive,
'bufferOne' holds them back instead (the tick's new payload says which).

Returns {0} when the condition did not hold (nothing changed), {2} when the
series was removed as an orphan, else {1, created, skipped, cancelled,
nextDueAt, blocker key, blocker state, blocker due time, blocker attempt,
key...}: the counts, the re-armed tick's due time (-1 when not re-armed), the
previous occurrence that made the policy refuse ('' and zeros when none did:
the first running one, else the latest waiting), then the keys of the
created, skipped and cancelled occurrences in that order. A series created ('absent') starts with no last run in `runs`.
Time is the Redis server's (TIME).
]]
--@include clock
--@include encoding
--@include token-batch
--@include chunks
--@include cached-store
--@include series-run
--@include series-step
local now, micros = serverTime()
local call = seriesCall(KEYS, micros, {ARGV})
local reply = seriesStep(KEYS, ARGV, now, call)
finishSeriesCall(KEYS, call)
return reply
