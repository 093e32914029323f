import { IfExists } from './schedule-options.interface';
import { DriverHealth } from './delay-health.interface';
import { ActionState, PageRequest } from './pending-action.interface';
import { TopicSummary } from './topic-summary.interface';
import { DriverTransaction } from './delay-transaction.interface';

/**
 * The contract between DelayService and a storage/timing backend. The wheel
 * and Redis drivers implement it; so can a custom one. Inputs arrive already
 * validated (topic, key, payload serialised to JSON); the driver owns time:
 * it turns a relative delay into a due time on its own clock.
 */
export interface DelayDriver {
  /** Shown in logs: 'wheel', 'redis', ... */
  readonly name: string;
  /** The furthest ahead, in ms, a due time may be. */
  readonly horizonMs: number;
  /**
   * True when the driver's writes can join the caller's database transaction
   * (schedule, scheduleMany, reschedule, cancel and collect then take a
   * `transaction`, and so do the recurring writes: `get` and `advanceSeries`).
   * DelayService refuses a transaction for any other driver.
   */
  readonly supportsTransactions?: boolean;

  // ---- transactional handlers (optional: a driver without them refuses such handlers at bootstrap) ----
  /**
   * Opens a transaction on a connection of the driver's own for a
   * transactional handler, when the application configured no
   * `transactions.run` and the driver has no runOwnTransaction: `work`
   * gets the transaction object (one the transaction adapters recognise),
   * and it commits if `work` resolves.
   */
  runTransaction?<T>(work: (transaction: unknown) => Promise<T>): Promise<T>;
  /**
   * First statement of a transactional run, in its transaction: holds the
   * run's arming (its row, under the run's token) until the transaction
   * ends, so nothing else changes or takes it meanwhile, and bounds the
   * transaction's lock waits by `lockTimeoutMs`. False when the arming is
   * gone (cancelled, re-armed, taken back after its lease ran out): the run
   * must not go on.
   */
  beginRun?(delivery: Delivery, transaction: DriverTransaction, lockTimeoutMs: number): Promise<boolean>;
  /** Last statement of a transactional run, in its transaction: records the run's completion (a recurring occurrence's last run too). */
  completeRun?(delivery: Delivery, transaction: DriverTransaction): Promise<void>;
  /**
   * Optional, used instead of runTransaction, beginRun and completeRun when
   * the application configured no `transactions.run`: the whole run in a
   * transaction of the driver's own, whose first and last statements the
   * driver sends with the transaction's own commands (postgres: `BEGIN` in
   * one message with the arming's lock, the completion in one message with
   * `COMMIT`). `work` runs the handler with the transaction object; it is
   * not called, and the run ends 'gone', when the arming is gone. After
   * `work` resolves, a rejection that carries no SQLSTATE of the server's
   * leaves the commit in doubt, as a failed COMMIT does.
   */
  runOwnTransaction?(delivery: Delivery, lockTimeoutMs: number, work: (transaction: unknown) => Promise<void>): Promise<'committed' | 'gone'>;
  // ---- end transactional handlers ----

  schedule(command: ScheduleCommand): Promise<ScheduleResult>;
  /** Many schedules of one topic, all or nothing: one refused entry and none is written. */
  scheduleMany(command: ScheduleManyCommand): Promise<ScheduleResult[]>;
  /** Removes the action, waiting or running (a running one is then never retried). True if there was one. */
  cancel(topic: string, key: string, transaction?: DriverTransaction): Promise<boolean>;
  /** Moves an existing action, keeping its payload. Null if there is none. */
  reschedule(command: RescheduleCommand): Promise<StoredAction | null>;
  /**
   * With `transaction` (only given to a driver that supportsTransactions),
   * read inside it: a recurring write reads its schedule there before its
   * conditioned advanceSeries, and must see the transaction's own writes.
   */
  get(topic: string, key: string, transaction?: DriverTransaction): Promise<StoredAction | null>;
  /** Running actions first, then waiting ones by due time, then key (code point order); of a batch, only its first LISTED_BATCH_ITEMS items, and its size. */
  list(topic: string, page: Required<PageRequest>): Promise<StoredAction[]>;
  count(topic: string): Promise<number>;

  listDead(topic: string, page: Required<PageRequest>): Promise<StoredDeadAction[]>;
  countDead(topic: string): Promise<number>;
  /** Moves a dead action back to pending, due now, attempt 1. False if there was none. `id` is the dead action's id. */
  redrive(topic: string, id: string): Promise<boolean>;

  /** Adds an item to the key's open batch, opening one if there is none (collect). */
  collect(command: CollectCommand): Promise<CollectResult>;

  /** Starts handing due actions of the consumer's topics to it. */
  start(consumer: DelayConsumer): Promise<void>;
  /** Stops taking new work and waits up to `timeoutMs` for running handlers. */
  drain(timeoutMs: number): Promise<void>;
  /** Releases timers and connections. */
  close(): Promise<void>;
  /** Optional: tells `listener` when the store came back without its data (Redis restarted empty, failover). */
  onStoreReset?(listener: (detail: string) => void): void;
  /** Optional: tells `listener` (at once if it is already known) that the store may delete keys to make room (Redis maxmemory-policy other than noeviction). */
  onStoreEvicting?(listener: (detail: string) => void): void;

  // Operations. Optional, so a custom driver written before them still
  // compiles and runs; DelayService refuses a call its driver lacks with
  // UnsupportedOperationError (isPaused then reports false).

  /** Nothing new of the topic starts (on every instance sharing the store); running handlers finish. True if it was not paused. */
  pause?(topic: string): Promise<boolean>;
  /** Undoes pause: due actions run again, in due order. True if it was paused. */
  resume?(topic: string): Promise<boolean>;
  isPaused?(topic: string): Promise<boolean>;
  /** Every topic with waiting, running or dead actions, or paused (across instances on a shared store). */
  topics?(): Promise<TopicSummary[]>;
  /** Makes a waiting action due now (it still waits while its topic is paused). False if there is no waiting action. */
  runNow?(topic: string, key: string): Promise<boolean>;
  /** The store's state, round trip and, per topic, consumer and lag. Never rejects: a store that cannot be reached is `up: false`. */
  health?(): Promise<DriverHealth>;

  // Recurring actions. Optional: DelayService refuses recurring calls on a
  // driver without it (UnsupportedOperationError).

  /**
   * The one atomic step of a recurring series (see docs/design.md, "Recurring
   * actions"). The series' tick is the ordinary action `(topic, key)`. Applied
   * only if `expect` still holds; then, all or nothing: the overlap policy is
   * checked against the series' previous occurrences that are still waiting or
   * running (the driver keeps their keys per series), each occurrence is created
   * (never over an existing action: an occurrence key names one instant, so it
   * can be created once), previous ones are cancelled for 'cancelPrevious', and
   * the tick is re-armed (`next`), removed (`null`) or left alone (undefined).
   */
  advanceSeries?(command: AdvanceSeriesCommand): Promise<AdvanceSeriesResult>;
  /**
   * The ticks of the topic's series whose key comes after `after` (all from
   * the first when null), in code point order of the key, at most `limit`:
   * a listing that pages by key sees each series that exists throughout
   * exactly once, however often ticks are re-armed meanwhile. May return an
   * action that is no tick under a key without U+001E (the caller checks the
   * payload). Optional: without it, listRecurring pages through `list` and
   * sorts, and may skip or repeat schedules whose ticks move meanwhile.
   */
  listSeries?(topic: string, page: SeriesPageRequest): Promise<StoredAction[]>;
  /**
   * Several steps of the same topic in one round trip, results in order.
   * Only per-key writes (no occurrences, no orphan grace, no transaction),
   * as upsertRecurringMany sends them. Optional: without it they are sent at
   * once, each on its own (a driver that pipelines, as Redis does, needs
   * nothing more).
   */
  advanceSeriesMany?(topic: string, commands: readonly AdvanceSeriesCommand[]): Promise<AdvanceSeriesResult[]>;
  /** The actions under these keys, in order (null where none): one round trip. Optional: without it, `get` per key, sent at once. */
  getMany?(topic: string, keys: readonly string[]): Promise<Array<StoredAction | null>>;
  /**
   * Marks series as declared in code by a running instance, until `forMs`
   * from the driver's now (a mark only moves later). advanceSeries with an
   * `orphanGraceMs` removes a series whose mark has passed. One write per
   * shard the keys fall in. Optional: without it, declared series are never
   * removed as orphans (DelayService then passes no `orphanGraceMs`).
   */
  declareSeries?(topic: string, keys: readonly string[], forMs: number): Promise<void>;
  /**
   * The last run of each series, as recorded with its outcome (and, for an
   * occurrence the overlap policy refused, by advanceSeries); null where none
   * is. Optional: without it, schedules are listed with `lastRun: null`.
   */
  lastSeriesRuns?(topic: string, keys: readonly string[]): Promise<ReadonlyArray<SeriesRunRecord | null>>;
  /** The smallest spacing of a recurrence this driver accepts, in ms (the wheel: its tick). Default 1000. */
  readonly minRecurrenceMs?: number;
}

/** A page of listSeries: the key after which it starts (null: from the first), and how many at most. */
export interface SeriesPageRequest {
  readonly after: string | null;
  readonly limit: number;
}

/** What the series' tick must be for advanceSeries to apply: the run being delivered, the payload just read, or none yet. */
export type SeriesExpectation = { readonly token: string } | { readonly payload: string } | { readonly absent: true };

/** How a series' new occurrence treats its previous ones still waiting or running. */
export type OverlapPolicy = 'skip' | 'bufferOne' | 'allow' | 'cancelPrevious';

export interface SeriesOccurrence {
  /** Series key, U+001E, and the occurrence's identity (see occurrence-key.ts). */
  readonly key: string;
  readonly due: DueSpec;
  readonly payload: string | undefined;
}

export interface AdvanceSeriesCommand {
  readonly topic: string;
  /** The series key: the key of its tick. */
  readonly key: string;
  readonly expect: SeriesExpectation;
  /** Created together: the overlap policy decides for all of them at once. */
  readonly occurrences: readonly SeriesOccurrence[];
  readonly overlap: OverlapPolicy;
  /** Re-arm the tick (a new token) with this due time and payload; null removes it and the series' bookkeeping; undefined leaves it. */
  readonly next: { readonly due: DueSpec; readonly payload: string } | null | undefined;
  /**
   * With overlap 'bufferOne': the step to make instead when a previous
   * occurrence is still waiting or running. No occurrence is created, the
   * tick is re-armed with `next` here (its state names the occurrence held
   * back), and `skipped` are reported skipped (the last of them, if any, as
   * the series' last run). Without it, 'bufferOne' refuses as 'skip' does.
   */
  readonly whileAlive?: { readonly next: { readonly due: DueSpec; readonly payload: string }; readonly skipped: readonly string[] };
  /**
   * A series declared in code whose orphan policy is 'remove': if its
   * declaration mark (declareSeries) has passed, the series is removed
   * instead (tick, bookkeeping, mark, last run) and the result says
   * `orphaned`; a series with no mark yet gets one this far ahead.
   */
  readonly orphanGraceMs?: number;
  /** A recurring write made inside this transaction of the caller's (only given to a driver that supportsTransactions); a tick's step never has one. */
  readonly transaction?: DriverTransaction;
}

/** The previous occurrence of a series that kept a new one from being created (overlap 'skip', or held back by 'bufferOne'). */
export interface SeriesBlocker {
  /** Its key (see occurrence-key.ts). */
  readonly occurrenceKey: string;
  /** Running, or waiting to start (due later, waiting for a slot, or taken back after its instance stopped). */
  readonly state: 'running' | 'waiting';
  /** When its current attempt fell due (or falls due), in the driver's time: a running one has run since then at most. */
  readonly dueAt: number;
  /** Its current attempt (2 or more: retried, or taken back after its instance stopped). */
  readonly attempt: number;
}

/** How a recurring occurrence's latest run ended, as the driver records it. */
export interface SeriesRunRecord {
  /** 'retrying': failed, another attempt is scheduled; 'skipped': the overlap policy refused to create it. */
  readonly outcome: 'succeeded' | 'retrying' | 'dead' | 'skipped';
  /** The occurrence's key (see occurrence-key.ts). */
  readonly occurrenceKey: string;
  /** When its run started, in the driver's time; undefined for a skipped one. */
  readonly startedAt: number | undefined;
  /** The attempt that ended so; 0 for a skipped one. */
  readonly attempt: number;
  /** When the outcome was recorded, in the driver's time. */
  readonly at: number;
  /** For a skipped one: the previous occurrence that was still waiting or running. */
  readonly blockedBy?: SeriesBlocker;
}

export interface AdvanceSeriesResult {
  /** False when `expect` did not hold: nothing was changed. */
  readonly applied: boolean;
  /** Keys of the occurrences created. */
  readonly created: readonly string[];
  /** Keys of the occurrences the overlap policy refused (or that existed already). */
  readonly skipped: readonly string[];
  /** Keys of previous occurrences cancelled ('cancelPrevious'). */
  readonly cancelled: readonly string[];
  /** The series was removed as an orphan (see `orphanGraceMs`): nothing else was done. */
  readonly orphaned?: boolean;
  /**
   * The previous occurrence (the latest still waiting or running) that made
   * the overlap policy refuse the occurrences ('skip', 'bufferOne'); with
   * `whileAlive`, its step was the one made.
   */
  readonly blockedBy?: SeriesBlocker;
  /**
   * The re-armed tick's due time (the driver's time) when `next` armed one.
   * A driver that leaves it out makes a recurring write read the tick back.
   * A driver that gives it also drops, on a write with `absent`, any last
   * run an earlier series of the same key left: a schedule created so is
   * returned without reading its last run.
   */
  readonly nextDueAt?: number;
}

/** A due time as the caller gave it; the driver resolves it on its own clock. */
export type DueSpec = { readonly delayMs: number } | { readonly atMs: number };

export interface ScheduleCommand {
  readonly topic: string;
  readonly key: string;
  readonly due: DueSpec;
  /** JSON text, or undefined for no payload. */
  readonly payload: string | undefined;
  readonly ifExists: IfExists;
  /** How far in the past an absolute `at` may be before it is refused. */
  readonly maxPastMs: number;
  /** W3C traceparent of the scheduling code, stored with the action and handed back in its Delivery. */
  readonly trace?: string;
  /** Write inside this transaction of the caller's (only given to a driver that supportsTransactions). */
  readonly transaction?: DriverTransaction;
}

export interface ScheduleManyCommand {
  readonly topic: string;
  readonly entries: ReadonlyArray<Omit<ScheduleCommand, 'topic' | 'maxPastMs' | 'transaction'>>;
  readonly maxPastMs: number;
  readonly transaction?: DriverTransaction;
}

export interface RescheduleCommand {
  readonly topic: string;
  readonly key: string;
  readonly due: DueSpec;
  readonly maxPastMs: number;
  readonly transaction?: DriverTransaction;
}

export interface StoredAction {
  readonly topic: string;
  readonly key: string;
  readonly payload: string | undefined;
  /** For a batch: its items as JSON texts, in arrival order (from `list`, only the first LISTED_BATCH_ITEMS). */
  readonly items?: readonly string[];
  /** For a batch: how many items it holds. */
  readonly size?: number;
  readonly dueAt: number;
  readonly attempt: number;
  readonly state: ActionState;
  /** The topic is paused. Undefined reads as false. */
  readonly paused?: boolean;
}

export interface ScheduleResult {
  readonly action: StoredAction;
  /** 'kept' when ifExists was 'keep' and an action already existed. */
  readonly outcome: 'created' | 'replaced' | 'kept';
}

export interface StoredDeadAction {
  /** What redrive takes: the key for a single action; key plus a suffix for a batch (a key may have several dead batches). */
  readonly id: string;
  readonly topic: string;
  readonly key: string;
  readonly payload: string | undefined;
  readonly items?: readonly string[];
  readonly dueAt: number;
  readonly attempts: number;
  readonly error: string;
  readonly diedAt: number;
}

export interface CollectCommand {
  readonly topic: string;
  readonly key: string;
  /** The item as JSON text. */
  readonly item: string;
  /** The batch is due this long after its first item (after the latest, when sliding). */
  readonly windowMs: number;
  /** With slide: the batch is due at most this long after its first item. */
  readonly maxWaitMs: number | undefined;
  readonly slide: boolean;
  /** The batch is due at once, and closed, when it holds this many items. */
  readonly maxItems: number;
  /**
   * An item that would take an open batch past this many bytes (see
   * batchItemBytes) is refused with BatchTooLargeError and nothing changes;
   * the item that opens a batch is always taken. Undefined for no cap.
   */
  readonly maxBytes?: number;
  /** W3C traceparent of the code that opened the batch (later items keep the first one's). */
  readonly trace?: string;
  readonly transaction?: DriverTransaction;
}

export interface CollectResult {
  /** Items in the batch after this one joined. */
  readonly size: number;
  readonly dueAt: number;
  /** 'flushed' when this item filled the batch: it is due now, and the next item opens a new one. */
  readonly outcome: 'opened' | 'joined' | 'flushed';
}

/** One run of one action, handed by a driver to its consumer. */
export interface Delivery {
  readonly topic: string;
  readonly key: string;
  readonly payload: string | undefined;
  /** For a batch: its items as JSON texts, in arrival order. */
  readonly items?: readonly string[];
  readonly dueAt: number;
  readonly firedAt: number;
  readonly attempt: number;
  /** Identifies this arming of the action; outcomes for a stale token are ignored. */
  readonly token: string;
  /** W3C traceparent stored with the action at schedule/collect, if any. */
  readonly trace?: string;
}

export type DeliveryOutcome =
  /** `committed`: the run's own transaction recorded the completion (transactional handlers): nothing is left to write. */
  | { readonly kind: 'completed'; readonly committed?: boolean }
  | { readonly kind: 'retry'; readonly delayMs: number; readonly error: string }
  | { readonly kind: 'dead'; readonly error: string };

/** What a driver feeds: the topics handled here, and the function that runs one delivery. */
export interface DelayConsumer {
  /** Topic → how many of its handlers may run at once in this process. */
  readonly topics: ReadonlyMap<string, number>;
  /** Runs the handler; never rejects. The driver applies the outcome. */
  handle(delivery: Delivery): Promise<DeliveryOutcome>;
  /**
   * Optional, the same as `handle` without a promise: runs the handler and
   * calls `report` exactly once with the outcome, after `consume` has
   * returned (never from inside it). It must not throw; if it does, the
   * action is retried. Drivers use it when it is there: a delivery then
   * costs no promise of the consumer's own.
   */
  consume?(delivery: Delivery, report: (outcome: DeliveryOutcome) => void): void;
  /**
   * Optional: the arming a run was delivered under is gone (cancelled, or
   * re-armed) while its handler still runs, so its outcome will be ignored;
   * the consumer may tell the handler to stop. `token` is the delivery's.
   * Drivers call it as soon as they learn it (the wheel at once, Redis and PostgreSQL at the
   * lease renewal that finds the token changed), never from inside another
   * call of the consumer's; a second call for the same run does nothing.
   */
  revoke?(topic: string, key: string, token: string): void;
  /**
   * Optional: `topic` is handled here as a recurring topic (@Recurring,
   * @OnRecurring). Drivers with leases give its runs their shorter recurring
   * lease, so that a stopped instance's occurrence holds its schedule back
   * for seconds, not for a whole lease.
   */
  isRecurringTopic?(topic: string): boolean;
}
