import type { NextOccurrence } from './next-occurrence';
import type { StoredMissedPolicy } from './series-state';

/** An occurrence counts as missed once its tick runs later than this after it (or a later one is due too). */
export const MISSED_GRACE_MS = 60_000;
/** The most occurrences one catch-up fires (missed 'all' or 'within'): the latest ones. */
export const MAX_CATCH_UP = 1000;
/**
 * The most due occurrences a tick counts one by one beyond those it fires (cron only: an interval's
 * are counted by arithmetic). Past it, the count of the older ones is an estimate (see countDue).
 */
export const MAX_COUNTED = 1000;

export interface TickPlan {
  /** Scheduled instants to fire now, ascending. */
  readonly fire: readonly number[];
  /** How many due instants were missed by policy (estimated when `missedExact` is false). */
  readonly missed: number;
  /** False when more than MAX_COUNTED cron occurrences were due and `missed` is extrapolated. */
  readonly missedExact: boolean;
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
 *
 * Its cost is bounded by what it fires, whatever the gap: the latest due
 * occurrence is found backward from now (atOrBefore), the ones fired besides
 * it by walking back from there, and the count of the missed by arithmetic
 * (intervals) or by walking back at most MAX_COUNTED more (cron).
 */
export function planTick(recurrence: NextOccurrence, missed: StoredMissedPolicy, from: number, now: number): TickPlan {
  const latest = now > from ? recurrence.atOrBefore(now) : null;
  if (latest === null || latest <= from) return { fire: [], missed: 0, missedExact: true, last: from, next: recurrence.after(from) };
  const next = recurrence.after(latest);
  let fire: number[];
  switch (missed.kind) {
    case 'skip':
      fire = now - latest <= MISSED_GRACE_MS ? [latest] : [];
      break;
    case 'once':
      fire = [latest];
      break;
    case 'all':
      fire = walkBack(recurrence, latest, from, () => true);
      break;
    case 'within':
      // The missed ones at most `within` old, exactly (never widened to the grace); the latest on time is no missed one.
      fire = walkBack(recurrence, latest, from, (instant) => now - instant <= missed.withinMs || (instant === latest && now - latest <= MISSED_GRACE_MS));
      break;
  }
  const due = countDue(recurrence, from, latest, fire);
  return { fire, missed: Math.max(0, due.count - fire.length), missedExact: due.exact, last: latest, next };
}

/** The due instants from `latest` backward, down to `from` (exclusive), at most MAX_CATCH_UP, while `keep` holds; ascending. */
function walkBack(recurrence: NextOccurrence, latest: number, from: number, keep: (instant: number) => boolean): number[] {
  const instants: number[] = [];
  for (let t: number | null = latest; t !== null && t > from && instants.length < MAX_CATCH_UP && keep(t); t = recurrence.atOrBefore(t - 1)) instants.push(t);
  return instants.reverse();
}

/**
 * How many occurrences are in (from, latest]. Exact for an interval (arithmetic) and for a cron with
 * at most MAX_COUNTED due besides those fired (walked back). Past that, the walked ones are counted and
 * the rest of the gap, (from, earliest walked), is estimated at the walked ones' mean spacing: exact for
 * evenly spaced schedules away from offset changes, off by the occurrences an offset change adds or
 * removes, and a rough figure for schedules whose spacing varies (working hours only).
 */
function countDue(recurrence: NextOccurrence, from: number, latest: number, fire: readonly number[]): { count: number; exact: boolean } {
  if (recurrence.countBetween) return { count: recurrence.countBetween(from, latest), exact: true };
  // The fired ones are the latest due (all of them when the walk reached `from`); count on below them.
  let earliest = fire.length > 0 ? fire[0] : latest;
  let count = fire.length > 0 ? fire.length : 1;
  for (let walked = 0; walked < MAX_COUNTED; walked++) {
    const before = recurrence.atOrBefore(earliest - 1);
    if (before === null || before <= from) return { count, exact: true };
    earliest = before;
    count++;
  }
  const spacing = (latest - earliest) / (count - 1);
  return { count: count + Math.max(0, Math.floor((earliest - from - 1) / spacing)), exact: false };
}
