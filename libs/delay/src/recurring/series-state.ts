import type { OverlapPolicy } from '../interfaces/delay-driver.interface';
import type { NormalizedRecurrence } from './compile-recurrence';
import type { RecurrenceSpec } from './recurrence-spec';
import type { MissedRunPolicy } from './recurring-options';

/** The missed-run policy as stored: `withinMs` only for 'within'. */
export type StoredMissedPolicy = { readonly kind: 'skip' | 'once' | 'all' } | { readonly kind: 'within'; readonly withinMs: number };

/**
 * What a series' tick carries as its payload: everything the ticker needs,
 * so that any instance (whatever code it runs) computes the same next step
 * from the tick alone. Plain JSON; `v` is the format's version.
 */
export interface SeriesState {
  readonly v: 1;
  readonly spec: NormalizedRecurrence;
  readonly missed: StoredMissedPolicy;
  readonly overlap: OverlapPolicy;
  readonly jitterMs: number;
  /** The occurrences' payload as JSON text. */
  readonly payload?: string;
  /** The scheduled instant of the latest occurrence reached (fired or missed), or null before the first. */
  readonly last: number | null;
  /** The next tick counts from its own arming time (a new schedule, a changed recurrence): nothing before it fires. */
  readonly reset: boolean;
  readonly paused: boolean;
  /** Declared by @Recurring. */
  readonly declared: boolean;
  /** Of a declared schedule: 'keep' when it must not be removed once no instance declares it (absent: 'remove'). */
  readonly orphan?: 'keep';
}

/** The stored recurrence back in the form compileRecurrence and users read. */
export function recurrenceOf(spec: NormalizedRecurrence): RecurrenceSpec {
  if (spec.kind === 'interval') return { every: spec.everyMs, anchor: spec.anchorMs };
  return spec.fixedTime ? { cron: spec.cron, timeZone: spec.timeZone, dstGap: spec.dstGap, dstOverlap: spec.dstOverlap } : { cron: spec.cron, timeZone: spec.timeZone };
}

export function missedOf(policy: StoredMissedPolicy): MissedRunPolicy {
  return policy.kind === 'within' ? { within: policy.withinMs } : policy.kind;
}

export function encodeSeriesState(state: SeriesState): string {
  return JSON.stringify(state);
}

/** The state a tick carries; undefined when the payload is not one (an action this library did not arm). */
export function decodeSeriesState(payload: string | undefined): SeriesState | undefined {
  if (payload === undefined) return undefined;
  try {
    const state = JSON.parse(payload) as Partial<SeriesState> | null;
    if (typeof state !== 'object' || state === null || state.v !== 1 || typeof state.spec !== 'object') return undefined;
    return state as SeriesState;
  } catch {
    return undefined;
  }
}

/** Same recurrence (the next time must be computed again when it changed). */
export function sameSpec(a: NormalizedRecurrence, b: NormalizedRecurrence): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}
