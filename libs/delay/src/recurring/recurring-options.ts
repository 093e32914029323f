import type { OverlapPolicy } from '../interfaces/delay-driver.interface';
import type { DelayHandlerOptions } from '../interfaces/delay-handler-options.interface';
import type { Duration } from '../time/duration';
import type { RecurrenceSpec } from './recurrence-spec';

export type { OverlapPolicy } from '../interfaces/delay-driver.interface';

/**
 * What a schedule does about occurrences whose time passed while nothing
 * could fire them (every instance down, the topic or the schedule paused).
 * An occurrence is missed once its tick runs more than a minute after it, or
 * after a later occurrence is also due.
 * - `'skip'`: missed occurrences do not run;
 * - `'once'` (default): they run as one, the latest of them;
 * - `'all'`: each runs (at most 1000 per catch-up, the latest);
 * - `{ within }`: those missed by at most `within` run, exactly (a `within` below the minute is not widened to it).
 * Under every policy the latest occurrence runs when its tick is less than a minute late: it is not missed.
 */
export type MissedRunPolicy = 'skip' | 'once' | 'all' | { readonly within: Duration };

/** How a schedule runs, besides when: missed runs, overlap, jitter and the payload its occurrences carry. */
export interface RecurringPolicies<TPayload = unknown> {
  /** Default `'once'`. */
  readonly missed?: MissedRunPolicy;
  /**
   * What a new occurrence does when a previous one of the same schedule is
   * still waiting or running: `'skip'` (default) does not create it,
   * `'bufferOne'` creates it only if none is waiting (one may queue behind a
   * running one), `'allow'` always creates it, `'cancelPrevious'` cancels the
   * previous ones first (a running handler is not interrupted; its outcome is
   * ignored).
   */
  readonly overlap?: OverlapPolicy;
  /** Each occurrence is delayed by the same pseudo-random amount in [0, jitter), derived from topic and key, so schedules set for the same minute spread out. Default 0. */
  readonly jitter?: Duration;
  /** Handed to the handler of every occurrence (JSON). */
  readonly payload?: TPayload;
}

/** A schedule as `upsertRecurring` takes it: when (cron or interval) and how. */
export type RecurringOptions<TPayload = unknown> = RecurrenceSpec & RecurringPolicies<TPayload>;

/**
 * What happens to a schedule declared by `@Recurring` once no running
 * instance declares it any more (the decorator was removed from the code):
 * - `'remove'` (default): once the last instance that declared it has been
 *   gone for the module's `recurringOrphanGrace`, its next tick removes it;
 * - `'keep'`: it goes on firing, on any instance that handles its topic,
 *   until `removeRecurring`.
 */
export type OrphanPolicy = 'remove' | 'keep';

/** `@Recurring(topic, options)`: the schedule, its key (default `'default'`), its orphan policy and the handler's options. */
export type RecurringDeclaration = RecurringOptions & DelayHandlerOptions & { readonly key?: string; readonly orphan?: OrphanPolicy };

/** Why an occurrence was not created (overlap 'skip') or is held back ('bufferOne'): the previous occurrence still waiting or running. */
export interface RecurringBlocker {
  /** The previous occurrence's key. */
  readonly occurrence: string;
  /** `'waiting'`: not started (due later, waiting for a slot, or taken back after its instance stopped, to run again). */
  readonly state: 'running' | 'waiting';
  /** When its current attempt fell due: a running one has run since then at most. */
  readonly dueAt: Date;
  /** Its current attempt: 2 or more when it is retried or was taken back from a stopped instance. */
  readonly attempt: number;
}

/** How the latest run of a schedule's occurrences ended. */
export interface RecurringRun {
  /** `'retrying'`: it failed and another attempt is scheduled; `'skipped'`: the overlap policy did not create it. */
  readonly outcome: 'succeeded' | 'retrying' | 'dead' | 'skipped';
  /** The occurrence's own key (as in events and listings). */
  readonly occurrence: string;
  /** The instant it was scheduled for (jitter not included); for runRecurringNow, when it was asked. */
  readonly scheduledAt: Date;
  /** When its run started; null when it was skipped. */
  readonly startedAt: Date | null;
  /** How late it started after `scheduledAt`, in ms (jitter, catch-up, retries included); null when it was skipped. */
  readonly lagMs: number | null;
  /** The attempt that ended so; 0 when it was skipped. */
  readonly attempt: number;
  /** When the outcome was recorded. */
  readonly at: Date;
  /** For a skipped one: the previous occurrence still waiting or running then; null otherwise (or not recorded). */
  readonly blockedBy: RecurringBlocker | null;
}

/** A schedule as `getRecurring` and `listRecurring` report it. */
export interface RecurringSchedule<TPayload = unknown> {
  readonly topic: string;
  readonly key: string;
  /** The recurrence with its defaults filled in. */
  readonly recurrence: RecurrenceSpec;
  readonly missed: MissedRunPolicy;
  readonly overlap: OverlapPolicy;
  readonly jitterMs: number;
  readonly payload: TPayload | undefined;
  readonly paused: boolean;
  /** When the next occurrence is due (before jitter), also for a schedule just created or changed (worked out from its recurrence); null while paused, or when the recurrence has no further occurrence. */
  readonly nextRunAt: Date | null;
  /** The scheduled time of the latest occurrence reached (fired, or missed by policy); null before the first. */
  readonly lastRunAt: Date | null;
  /** How the latest occurrence to finish a run (or to be skipped by the overlap policy) ended, and how late it started; null before the first. */
  readonly lastRun: RecurringRun | null;
  /** Declared in code by @Recurring (reconciled at every bootstrap) rather than by upsertRecurring. */
  readonly declared: boolean;
  /** For a declared schedule, what happens once no running instance declares it; null for one made by upsertRecurring (never an orphan). */
  readonly orphan: OrphanPolicy | null;
}

/** What a recurring handler's context says about the occurrence it runs. */
export interface RecurringOccurrence {
  /** The occurrence's own key: the schedule's key, U+001E and its identity. Events and listings name this key. */
  readonly key: string;
  /** The time it was scheduled for (jitter not included); for runRecurringNow, when it was asked. */
  readonly scheduledAt: Date;
  /** How late this run started after `scheduledAt`, in ms (jitter, missed-run catch-up, retries included). */
  readonly lateMs: number;
  /** True for an extra run asked by runRecurringNow. */
  readonly runNow: boolean;
}
