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
}
