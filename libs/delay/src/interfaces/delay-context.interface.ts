import type { RecurringOccurrence } from '../recurring/recurring-options';

/** What an @OnDelayExpired (or @Recurring, @OnRecurring) handler receives. */
export interface DelayContext<TPayload = unknown, TItem = unknown> {
  readonly topic: string;
  readonly key: string;
  readonly payload: TPayload | undefined;
  /** For a batch (from collect): its items in arrival order. */
  readonly items?: TItem[];
  /** When the action was due. */
  readonly dueAt: Date;
  /** When this run started. */
  readonly firedAt: Date;
  /** 1 for the first run, 2 for the first retry, and so on. */
  readonly attempt: number;
  /**
   * Aborts when this run has outlived its topic's `timeout` (the run is then
   * already counted as failed and its slot given to the next action), or when
   * shutdown gives up waiting for it. Pass it to fetch, database drivers and
   * the like, or check `signal.aborted`, so the work stops too. A getter:
   * destructure it rather than spreading the context.
   */
  readonly signal: AbortSignal;
  /**
   * The W3C traceparent of the code that scheduled (or collected) the action,
   * when a trace propagator was registered (the telemetry module does it).
   */
  readonly trace?: string;
  /**
   * For a recurring topic's handler: which occurrence of the schedule runs
   * (`key` is then the schedule's key). Undefined for other handlers.
   */
  readonly occurrence?: RecurringOccurrence;
  /**
   * For a handler with `transactional: true`: the transaction this run
   * commits in, with the action's completion, as your client gives it (the
   * object `transactions.run` opened, or the driver's `pg` client). Write
   * through it; DelayService calls made from the handler use it by
   * themselves. Undefined for other handlers.
   */
  readonly transaction?: unknown;
}
