/**
 * The next-time computation of a compiled recurrence. Pure and deterministic: the same spec and the
 * same instant give the same answer on every machine, whatever its own time zone.
 */
export interface NextOccurrence {
  /**
   * The first occurrence strictly after `instantMs` (epoch milliseconds), or null when the schedule
   * has no further occurrence (a cron on a date that never comes again, or past the year 9999).
   * Calling it again with the result walks the occurrences in strictly increasing order.
   */
  after(instantMs: number): number | null;
  /**
   * The last occurrence at or before `instantMs`, or null when there is none (before an interval's
   * anchor, before the year 100). Costs about what `after` costs, whatever the distance to it: a tick
   * that is days behind finds the latest due occurrence without walking the ones before it.
   */
  atOrBefore(instantMs: number): number | null;
  /**
   * How many occurrences are in (lowMs, highMs], when that is arithmetic (intervals); absent when
   * counting would mean walking them (cron).
   */
  countBetween?(lowMs: number, highMs: number): number;
}
