/**
 * The instants a recurrence is computed over: from the year 100 to the end of 9999, well inside what
 * Date, Intl and croner handle. Earlier instants count as the start of the range; from the end on
 * there is no further occurrence.
 */
export const MIN_INSTANT_MS = Date.UTC(100, 0, 2);
export const MAX_INSTANT_MS = Date.UTC(9999, 11, 30);

/** Refuses what is not an instant, and raises an instant before the range to its start. */
export function clampInstant(instantMs: number): number {
  if (typeof instantMs !== 'number' || !Number.isFinite(instantMs)) {
    throw new RangeError(`Expected an instant in epoch milliseconds, got ${String(instantMs)}`);
  }
  return Math.max(instantMs, MIN_INSTANT_MS);
}
