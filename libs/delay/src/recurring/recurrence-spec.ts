import type { Duration } from '../time/duration';

/**
 * What a fixed-time cron schedule does on a day whose clock skips its time (spring forward):
 * `'shift'` (default) fires once at the first instant after the gap, on the same local date;
 * `'skip'` does not fire that day.
 */
export type DstGapPolicy = 'shift' | 'skip';

/**
 * What a fixed-time cron schedule does on a day whose clock shows its time twice (fall back):
 * `'first'` (default) fires once, at the earlier of the two instants; `'last'` fires once, at the later.
 */
export type DstOverlapPolicy = 'first' | 'last';

/**
 * A schedule on the calendar and the wall clock of a time zone. `cron` has 5 fields
 * (minute hour day-of-month month day-of-week) or 6 with seconds first; ranges, steps, lists,
 * month and day names, `L`, `W`, `#` and the nicknames `@hourly`, `@daily`, `@weekly`, `@monthly`,
 * `@yearly` are understood. When both day-of-month and day-of-week are restricted, a day matching
 * either one matches (as in classic cron); prefix day-of-week with `+` to require both.
 *
 * A cron whose seconds, minutes and hours fields hold only numbers (single values, lists or ranges,
 * no `*` and no step) is a fixed-time schedule: each of its times fires once per local date, and
 * `dstGap` / `dstOverlap` choose how. Any other cron follows the wall clock as it runs: a time the
 * clock skips does not fire, a time the clock shows twice fires twice (an hourly schedule fires on
 * every real hour). `dstGap` and `dstOverlap` are refused on such a schedule.
 */
export interface CronRecurrence {
  cron: string;
  /** IANA time zone name; default `'UTC'` (never the machine's zone, so that a fleet agrees). */
  timeZone?: string;
  dstGap?: DstGapPolicy;
  dstOverlap?: DstOverlapPolicy;
}

/**
 * A schedule by elapsed time: `anchor + n × every` for n = 0, 1, 2, …, unaffected by time zones and
 * DST. `anchor` defaults to the Unix epoch, so '15m' fires at :00, :15, :30, :45 UTC on every machine.
 */
export interface IntervalRecurrence {
  every: Duration;
  anchor?: Date | number;
}

/** When a recurring action fires: a cron expression in a time zone, or a fixed interval. */
export type RecurrenceSpec = CronRecurrence | IntervalRecurrence;
