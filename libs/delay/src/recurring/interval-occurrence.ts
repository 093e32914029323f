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

  atOrBefore(instantMs: number): number | null {
    const at = Math.min(clampInstant(instantMs), MAX_INSTANT_MS);
    if (at < this.anchorMs) return null;
    let latest = this.anchorMs + Math.floor((at - this.anchorMs) / this.everyMs) * this.everyMs;
    while (latest > at) latest -= this.everyMs;
    return latest;
  }

  countBetween(lowMs: number, highMs: number): number {
    // Occurrences n with low < anchor + n × every <= high, n >= 0.
    const high = this.atOrBefore(highMs);
    if (high === null || high <= lowMs) return 0;
    const first = this.after(lowMs) as number;
    return Math.round((high - first) / this.everyMs) + 1;
  }
}
