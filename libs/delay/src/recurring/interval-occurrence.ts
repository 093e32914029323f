import type { NextOccurrence } from './next-occurrence';
import { clampInstant, MAX_INSTANT_MS } from './instant-range';

/**
 * Occurrences at `anchor + n × every` for n = 0, 1, 2, …: elapsed time, with no calendar, time zone
 * or DST in it. Both numbers are whole milliseconds within the Date range, so the arithmetic is exact.
 */
export class IntervalOccurrence implements NextOccurrence {
  constructor(
    private readonly everyMs: number,
    private readonly anchorMs: number,
  ) {}

  after(instantMs: number): number | null {
    const after = clampInstant(instantMs);
    if (after < this.anchorMs) return this.anchorMs;
    let next = this.anchorMs + (Math.floor((after - this.anchorMs) / this.everyMs) + 1) * this.everyMs;
    while (next <= after) next += this.everyMs;
    return next > MAX_INSTANT_MS ? null : next;
  }
}
