import type { NextOccurrence } from './next-occurrence';
import type { StoredMissedPolicy } from './series-state';

/** An occurrence counts as missed once its tick runs later than this after it (or a later one is due too). */
export const MISSED_GRACE_MS = 60_000;
/** The most occurrences one catch-up fires (missed 'all' or 'within'): the latest ones. */
export const MAX_CATCH_UP = 1000;
/** The most next-time steps one tick walks; past it, the walk starts again a day before now and the older ones count as missed. */
const MAX_WALK = 20_000;
const FALLBACK_WINDOW_MS = 86_400_000;

export interface TickPlan {
  /** Scheduled instants to fire now, ascending. */
  readonly fire: readonly number[];
  /** How many due instants were missed by policy (at least this many when the walk was cut short). */
  readonly missed: number;
  /** The new `last`: the latest instant reached, or `from` when none was due. */
  readonly last: number;
  /** When the tick is next due; null when the recurrence has no further occurrence. */
  readonly next: number | null;
}

/**
 * What one tick does, from its state and the driver's time alone: the
 * occurrences due in (from, now], which of them fire under the missed-run
 * policy, and the next tick. Deterministic, so a tick run twice (a crash
 * before the advance was applied, a lost reply) plans the same thing.
 */
export function planTick(recurrence: NextOccurrence, missed: StoredMissedPolicy, from: number, now: number): TickPlan {
  let due: number[] = [];
  let total = 0;
  let walked = 0;
  let t = recurrence.after(from);
  while (t !== null && t <= now) {
    if (++walked > MAX_WALK) {
      // A very long gap of a very frequent schedule: count what was walked as missed and look at the last day only.
      const restart = Math.max(t, now - FALLBACK_WINDOW_MS);
      due = [];
      t = recurrence.after(restart - 1);
      walked = -Infinity;
      continue;
    }
    total++;
    due.push(t);
    if (due.length > MAX_CATCH_UP * 2) due = due.slice(-MAX_CATCH_UP);
    t = recurrence.after(t);
  }
  if (due.length > MAX_CATCH_UP) due = due.slice(-MAX_CATCH_UP);
  const next = t;
  if (due.length === 0) return { fire: [], missed: 0, last: from, next };
  const latest = due[due.length - 1];
  const latestOnTime = now - latest <= MISSED_GRACE_MS;
  let fire: number[];
  switch (missed.kind) {
    case 'skip':
      fire = latestOnTime ? [latest] : [];
      break;
    case 'once':
      fire = [latest];
      break;
    case 'all':
      fire = due;
      break;
    case 'within':
      // The missed ones at most `within` old, exactly (never widened to the grace); the latest on time is no missed one.
      fire = due.filter((instant) => now - instant <= missed.withinMs || (instant === latest && latestOnTime));
      break;
  }
  return { fire, missed: Math.max(0, total - fire.length), last: latest, next };
}
