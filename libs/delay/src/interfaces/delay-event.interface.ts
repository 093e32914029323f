import type { RecurringBlocker } from '../recurring/recurring-options';

export type DelayEventType =
  | 'scheduled'
  | 'collected'
  | 'rescheduled'
  | 'cancelled'
  | 'fired'
  | 'completed'
  | 'failed'
  | 'retrying'
  | 'dead'
  | 'redriven'
  | 'timedOut'
  | 'paused'
  | 'resumed'
  /** A recurring schedule's tick created occurrences (key: the schedule's; size: how many). */
  | 'recurringFired'
  /** Occurrences of a schedule whose time passed while nothing could run them, not run by its missed-run policy (size: how many). */
  | 'recurringMissed'
  /** Occurrences not created because a previous one still waits or runs (overlap policy; size: how many). */
  | 'recurringSkipped'
  /** Redis came back without its data (topic '*', key ''): actions pending before may be lost. */
  | 'storeReset'
  /** At startup: Redis's maxmemory-policy lets it delete keys when full, pending actions included (topic '*', key ''); `error` says which policy. */
  | 'storeEvicting';

/** One thing that happened to an action, as `DelayService.events$` reports it. */
export interface DelayEvent {
  readonly type: DelayEventType;
  readonly topic: string;
  /** Empty for the events of a whole topic: paused, resumed. */
  readonly key: string;
  readonly at: Date;
  readonly attempt?: number;
  readonly dueAt?: Date;
  /** The handler's error message, on failed / retrying / dead / timedOut; what was seen, on storeReset and storeEvicting. */
  readonly error?: string;
  /** For a batch: how many items it holds. */
  readonly size?: number;
  /** On retrying: when the next attempt is due. */
  readonly retryAt?: Date;
  /** On recurringSkipped: the previous occurrence still waiting or running that kept them from being created. */
  readonly blockedBy?: RecurringBlocker;
}
