import type { RecurringOptions, RecurringSchedule } from './recurring-options';

/** Which page of a topic's schedules `listRecurringPage` reads. */
export interface RecurringPageRequest {
  /**
   * The key after which the page starts, in code point order: the `next` of
   * the page before. Absent or null: from the first schedule. A key that is
   * no schedule's (removed meanwhile) is fine: the page starts after where
   * it would be.
   */
  readonly after?: string | null;
  /** How many schedules at most; default 100, at most 1000. */
  readonly limit?: number;
}

/** A page of a topic's schedules, by key (code point order). */
export interface RecurringPage<TPayload = unknown> {
  readonly schedules: Array<RecurringSchedule<TPayload>>;
  /** The `after` of the next page; null when this page is the last. */
  readonly next: string | null;
}

/** One schedule of `upsertRecurringMany`: its key and what `upsertRecurring` takes. */
export type RecurringUpsert<TPayload = unknown> = RecurringOptions<TPayload> & { readonly key: string };
