import { DueTimeOutOfRangeError } from '../errors/due-time-out-of-range.error';
import { DueSpec } from '../interfaces/delay-driver.interface';

/** Every driver's horizon: a century is "years" with room to spare and far from Date's limits. */
export const DEFAULT_HORIZON_MS = 100 * 365 * 86_400_000;

/**
 * Resolves a due spec against `now` on the driver's own clock. An absolute
 * time a little in the past is due at once; further back than `maxPastMs`
 * it is most likely a bug (seconds given as milliseconds) and is refused.
 */
export function resolveDueAt(due: DueSpec, now: number, maxPastMs: number, horizonMs: number): number {
  const dueAt = 'delayMs' in due ? now + due.delayMs : due.atMs;
  if (dueAt < now - maxPastMs || dueAt < 0) {
    throw new DueTimeOutOfRangeError(dueAt, `more than ${maxPastMs} ms in the past (option maxPast)`);
  }
  if (dueAt > now + horizonMs) {
    throw new DueTimeOutOfRangeError(dueAt, `beyond the driver's horizon of ${horizonMs} ms from now`);
  }
  return dueAt;
}
