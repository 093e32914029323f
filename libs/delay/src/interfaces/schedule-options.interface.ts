import { Duration } from '../time/duration';

/** What `schedule` does when `(topic, key)` already names a pending action. */
export type IfExists = 'replace' | 'keep';

/** When an action is due: after `delay`, or at `at`. Exactly one of the two. */
export type DueTime = { readonly delay: Duration; readonly at?: never } | { readonly at: Date | number; readonly delay?: never };

export type ScheduleOptions<TPayload = unknown> = DueTime & {
  readonly payload?: TPayload;
  /** `'replace'` (default) re-arms with the new due time and payload; `'keep'` leaves an existing action untouched. */
  readonly ifExists?: IfExists;
};
