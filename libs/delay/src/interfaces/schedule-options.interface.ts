import { Duration } from '../time/duration';

/** What `schedule` does when `(topic, key)` already names a pending action. */
export type IfExists = 'replace' | 'keep';

/** When an action is due: after `delay`, or at `at`. Exactly one of the two. */
export type DueTime = { readonly delay: Duration; readonly at?: never } | { readonly at: Date | number; readonly delay?: never };

/**
 * Where a write happens. `transaction` is your open database transaction (a
 * `pg` client, a TypeORM EntityManager, a Prisma transaction client, ...):
 * the write then commits or rolls back with it. Only the postgres driver
 * takes one; the others refuse it (TransactionNotSupportedError). Leave it
 * out to use the ambient transaction, if DelayModule was given one
 * (`transactions.ambient`); `null` writes outside any transaction.
 */
export interface WriteOptions {
  readonly transaction?: unknown;
}

/** What an action is: when it is due, its payload, and what happens to an existing one. */
export type ActionOptions<TPayload = unknown> = DueTime & {
  readonly payload?: TPayload;
  /** `'replace'` (default) re-arms with the new due time and payload; `'keep'` leaves an existing action untouched. */
  readonly ifExists?: IfExists;
};

export type ScheduleOptions<TPayload = unknown> = ActionOptions<TPayload> & WriteOptions;

/** One entry of scheduleMany: a key and what schedule would take for it (the transaction is scheduleMany's own option). */
export type ScheduleEntry<TPayload = unknown> = ActionOptions<TPayload> & { readonly key: string };

/** A new due time for reschedule, and where to write it. */
export type RescheduleOptions = DueTime & WriteOptions;

export interface CollectOptions extends WriteOptions {
  /** The batch is due this long after its first item (or, with slide, after its latest). */
  readonly window: Duration;
  /** Due at once when the batch holds this many items. Default and upper bound: the module's maxBatchItems. */
  readonly maxItems?: number;
  /** Re-arm the window with each new item (debounce). Default false. */
  readonly slide?: boolean;
  /** With slide: due at the latest this long after the first item, so a steady stream still flushes. */
  readonly maxWait?: Duration;
}

/** What collect reports: the batch as it is now. */
export interface BatchStatus {
  readonly topic: string;
  readonly key: string;
  readonly size: number;
  readonly dueAt: Date;
  /** True when this item filled the batch: it is due now, and the next item opens a new batch. */
  readonly flushed: boolean;
}
