import { Inject, Injectable, Optional } from '@nestjs/common';
import { Observable } from 'rxjs';
import { DELAY_DRIVER, DELAY_RESOLVED_OPTIONS, DELAY_TRACE_PROPAGATOR, LISTED_BATCH_ITEMS } from './delay.constants';
import { ResolvedDelayOptions } from './delay.module-definition';
import { DelayEventBus } from './delay-event.bus';
import { ActionKindConflictError } from './errors/action-kind-conflict.error';
import { InvalidScheduleOptionsError } from './errors/invalid-schedule-options.error';
import { UnsupportedOperationError } from './errors/unsupported-operation.error';
import { DelayHealth } from './interfaces/delay-health.interface';
import { DelayTracePropagator } from './interfaces/delay-trace-propagator.interface';
import { cancelsSameTick, schedulesSameTick } from './drivers/same-tick-forms';
import { TopicSummary } from './interfaces/topic-summary.interface';
import { DelayDriver, ScheduleCommand, ScheduleResult, StoredAction, StoredDeadAction } from './interfaces/delay-driver.interface';
import { DelayEvent } from './interfaces/delay-event.interface';
import { DeadAction, Page, PageRequest, PendingAction } from './interfaces/pending-action.interface';
import { BatchStatus, CollectOptions, RescheduleOptions, ScheduleEntry, ScheduleOptions, WriteOptions } from './interfaces/schedule-options.interface';
import { DriverTransaction } from './interfaces/delay-transaction.interface';
import { TransactionBinder } from './transactions/transaction-binder';
import {
  toCollectSpec,
  toDueSpec,
  toRescheduleDueSpec,
  validateDeadId,
  validateIfExists,
  validateKey,
  validatePage,
  validateTopic,
} from './validation/action-input';
import { parsePayload, payloadShape, PayloadShape, serializePayload } from './validation/payload-json';
import { DelayHandlerRegistry } from './delay-handler.registry';
import { RecurringTopicError } from './errors/recurring-topic.error';
import { SERIES_SEPARATOR } from './recurring/occurrence-key';
import { quoteInput } from './utils/quote-input';
import { RecurringSchedules } from './recurring/recurring-schedules';
import { RecurringOptions, RecurringSchedule } from './recurring/recurring-options';
import { RecurringPage, RecurringPageRequest, RecurringUpsert } from './recurring/recurring-page';
import { decodeSeriesState } from './recurring/series-state';

/**
 * Schedules, moves, cancels and inspects delayed actions. Every input is
 * checked before anything is written: a rejected call throws a DelayError
 * subclass and changes nothing.
 */
@Injectable()
export class DelayService {
  private readonly transactions: TransactionBinder;

  constructor(
    @Inject(DELAY_DRIVER) private readonly driver: DelayDriver,
    @Inject(DELAY_RESOLVED_OPTIONS) private readonly options: ResolvedDelayOptions,
    private readonly events: DelayEventBus,
    @Optional() @Inject(DELAY_TRACE_PROPAGATOR) private readonly tracer: DelayTracePropagator | null = null,
    @Optional() @Inject(DelayHandlerRegistry) private readonly registry: DelayHandlerRegistry | null = null,
    @Optional() @Inject(RecurringSchedules) private readonly recurring: RecurringSchedules | null = null,
  ) {
    this.transactions = new TransactionBinder(driver, options.transactions);
  }

  /** scheduled / collected / rescheduled / cancelled / fired / completed / failed / retrying / dead / redriven / timedOut / paused / resumed. */
  get events$(): Observable<DelayEvent> {
    return this.events.events$;
  }

  /**
   * Arms `(topic, key)` to fire after `delay` or at `at`. With `ifExists:
   * 'replace'` (default) an existing action is re-armed with the new time and
   * payload; with `'keep'` it is left as it is. Returns what is now pending.
   * With `transaction` (postgres driver), the write commits or rolls back
   * with that transaction of yours.
   */
  async schedule<TPayload = unknown>(topic: string, key: string, options: ScheduleOptions<TPayload>): Promise<PendingAction<TPayload>> {
    validateTopic(topic);
    if (this.registry?.isRecurring(topic)) throw notOneOff(topic, 'schedule');
    const validKey = validateKey(key);
    if (typeof options !== 'object' || options === null) throw new InvalidScheduleOptionsError(OPTIONS_REQUIRED);
    const { payload } = options;
    const shape = payloadShape(payload);
    const command: ScheduleCommand = {
      topic,
      key: validKey,
      due: toDueSpec(options),
      payload: serializePayload(payload, this.options.maxPayloadBytes, shape),
      ifExists: validateIfExists(options.ifExists),
      maxPastMs: this.options.maxPastMs,
      trace: this.currentTrace(),
      transaction: this.transactions.bind(options.transaction),
    };
    // The wheel's schedule is done before it returns: calling its same-tick form saves a promise and an await.
    const { driver } = this;
    const result = schedulesSameTick(driver) && !command.transaction ? driver.scheduleNow(command) : await driver.schedule(command);
    return this.scheduled<TPayload>(result, payload, shape);
  }

  /**
   * Schedules many actions of one topic in one go (one round trip on Redis),
   * all or nothing: if any entry is refused, none is written. Each entry means
   * what `schedule(topic, entry.key, entry)` means. At most 1000 entries.
   * `options.transaction` makes all of them part of your transaction.
   */
  async scheduleMany<TPayload = unknown>(
    topic: string,
    entries: ReadonlyArray<ScheduleEntry<TPayload>>,
    options: WriteOptions = {},
  ): Promise<Array<PendingAction<TPayload>>> {
    validateTopic(topic);
    if (this.registry?.isRecurring(topic)) throw notOneOff(topic, 'scheduleMany');
    const transaction = this.transactions.bind(writeOptions(options).transaction);
    if (!Array.isArray(entries)) throw new InvalidScheduleOptionsError('scheduleMany takes an array of entries');
    if (entries.length > MAX_SCHEDULE_MANY) throw new InvalidScheduleOptionsError(`scheduleMany takes at most ${MAX_SCHEDULE_MANY} entries, got ${entries.length}`);
    if (entries.length === 0) return [];
    const shapes: PayloadShape[] = [];
    const commands = entries.map((entry, n) => this.toEntry(typeof entry === 'object' && entry !== null ? entry.key : undefined, entry, shapes, n));
    const results = await this.driver.scheduleMany({ topic, entries: commands, maxPastMs: this.options.maxPastMs, transaction });
    return results.map((result, n) => this.scheduled<TPayload>(result, entries[n].payload, shapes[n]));
  }

  /** Checks one schedule's key and options and serialises its payload (its shape goes to `shapes[n]`): what a driver's schedule takes. */
  private toEntry(key: unknown, options: ScheduleOptions | undefined, shapes: PayloadShape[], n: number): Omit<ScheduleCommand, 'topic' | 'maxPastMs'> {
    const validKey = validateKey(key);
    if (typeof options !== 'object' || options === null) throw new InvalidScheduleOptionsError(OPTIONS_REQUIRED);
    if ('transaction' in options) throw new InvalidScheduleOptionsError(ENTRY_TRANSACTION);
    const shape = (shapes[n] = payloadShape(options.payload));
    return {
      key: validKey,
      due: toDueSpec(options),
      ifExists: validateIfExists(options.ifExists),
      payload: serializePayload(options.payload, this.options.maxPayloadBytes, shape),
      trace: this.currentTrace(),
    };
  }

  /** The caller's trace context, when a propagator is registered; a failing one costs the trace, not the schedule. */
  private currentTrace(): string | undefined {
    if (!this.tracer) return undefined;
    try {
      return this.tracer.inject() ?? undefined;
    } catch {
      return undefined;
    }
  }

  /**
   * Reports a driver's schedule result: an event unless it was kept, and the
   * action as the caller sees it. When the caller's payload was written and
   * JSON gives it back unchanged (its shape is Kept), the caller's value
   * itself is returned rather than parsed back from the JSON the service has
   * just made; otherwise the stored form is (a Date as its ISO string, an
   * undefined property left out).
   */
  private scheduled<TPayload>({ action, outcome }: ScheduleResult, payload: unknown, shape: PayloadShape): PendingAction<TPayload> {
    if (outcome === 'kept') return toPendingAction<TPayload>(action, readPayload(action.payload));
    const { events } = this;
    if (events.listening) {
      events.publish({ type: 'scheduled', topic: action.topic, key: action.key, at: events.now(), dueAt: new Date(action.dueAt), attempt: action.attempt });
    }
    return toPendingAction<TPayload>(action, payload === undefined || shape === PayloadShape.Kept ? payload : readPayload(action.payload));
  }

  /**
   * Adds `item` to the key's open batch; the first item opens one. The
   * topic's handler receives `items` in arrival order when `window` has
   * passed since the first item (since the latest with `slide`, bounded by
   * `maxWait`), or at once when `maxItems` is reached. A batch closes when its
   * handler starts: later items open the next batch.
   */
  async collect<TItem = unknown>(topic: string, key: string, item: TItem, options: CollectOptions): Promise<BatchStatus> {
    validateTopic(topic);
    if (this.registry?.isRecurring(topic)) throw notOneOff(topic, 'collect');
    validateKey(key);
    const { windowMs, maxWaitMs, slide, maxItems } = toCollectSpec(options, this.driver.horizonMs, this.options.maxBatchItems);
    if (item === undefined) throw new InvalidScheduleOptionsError('collect needs an item (undefined has no JSON form)');
    const json = serializePayload(item, this.options.maxPayloadBytes) as string;
    const transaction = this.transactions.bind(options.transaction);
    const result = await this.driver.collect({
      topic,
      key,
      item: json,
      windowMs,
      maxWaitMs,
      slide,
      maxItems,
      maxBytes: this.options.maxBatchBytes,
      trace: this.currentTrace(),
      transaction,
    });
    const { events } = this;
    if (events.listening) events.publish({ type: 'collected', topic, key, at: events.now(), size: result.size, dueAt: new Date(result.dueAt) });
    return { topic, key, size: result.size, dueAt: new Date(result.dueAt), flushed: result.outcome === 'flushed' };
  }

  /**
   * Removes the pending action; true if there was one. A handler already
   * running is not stopped, but never retried. With `transaction`, the
   * action is gone only if that transaction commits.
   */
  async cancel(topic: string, key: string, options?: WriteOptions): Promise<boolean> {
    validateTopic(topic);
    validateKey(key);
    this.refuseScheduleKey(topic, key, 'cancel', 'removeRecurring');
    const transaction = options === undefined ? this.transactions.bind(undefined) : this.transactions.bind(writeOptions(options).transaction);
    const { driver } = this;
    const cancelled =
      transaction === undefined ? (cancelsSameTick(driver) ? driver.cancelNow(topic, key) : await driver.cancel(topic, key)) : await driver.cancel(topic, key, transaction);
    const { events } = this;
    if (cancelled && events.listening) events.publish({ type: 'cancelled', topic, key, at: events.now() });
    return cancelled;
  }

  /** Moves an existing action to a new due time, keeping its payload. Null if there is none. */
  async reschedule<TPayload = unknown>(topic: string, key: string, due: RescheduleOptions): Promise<PendingAction<TPayload> | null> {
    validateTopic(topic);
    validateKey(key);
    this.refuseScheduleKey(topic, key, 'reschedule', 'upsertRecurring');
    const spec = toRescheduleDueSpec(due);
    const transaction = this.transactions.bind(due.transaction);
    const action = await this.driver.reschedule({ topic, key, due: spec, maxPastMs: this.options.maxPastMs, transaction });
    if (!action) return null;
    const { events } = this;
    if (events.listening) events.publish({ type: 'rescheduled', topic, key, at: events.now(), dueAt: new Date(action.dueAt) });
    return toPendingAction<TPayload>(action, readPayload(action.payload));
  }

  async get<TPayload = unknown>(topic: string, key: string): Promise<PendingAction<TPayload> | null> {
    validateTopic(topic);
    validateKey(key);
    const action = await this.driver.get(topic, key);
    return action ? toPendingAction<TPayload>(action, readPayload(action.payload)) : null;
  }

  /** Pending actions of a topic: running ones first, then waiting ones by due time, then key. */
  async list<TPayload = unknown>(topic: string, page?: PageRequest): Promise<Page<PendingAction<TPayload>>> {
    validateTopic(topic);
    const request = validatePage(page);
    const [items, total] = await Promise.all([this.driver.list(topic, request), this.driver.count(topic)]);
    return { items: items.map((action) => toPendingAction<TPayload>(action, readPayload(action.payload))), total, ...request };
  }

  async count(topic: string): Promise<number> {
    validateTopic(topic);
    return this.driver.count(topic);
  }

  /** Actions of a topic that used up their attempts. */
  async listDead<TPayload = unknown>(topic: string, page?: PageRequest): Promise<Page<DeadAction<TPayload>>> {
    validateTopic(topic);
    const request = validatePage(page);
    const [items, total] = await Promise.all([this.driver.listDead(topic, request), this.driver.countDead(topic)]);
    return { items: items.map((action) => toDeadAction<TPayload>(action)), total, ...request };
  }

  async countDead(topic: string): Promise<number> {
    validateTopic(topic);
    return this.driver.countDead(topic);
  }

  /** Puts a dead action back, due now, with its attempts reset. `id` is DeadAction.id (the key, for a single action). False if no such dead action. */
  async redrive(topic: string, id: string): Promise<boolean> {
    validateTopic(topic);
    validateDeadId(id);
    const redriven = await this.driver.redrive(topic, id);
    if (redriven) this.events.emit(() => ({ type: 'redriven', topic, key: keyOfDeadId(id) }));
    return redriven;
  }

  /**
   * Stops starting handlers of `topic`: on every instance sharing the store
   * (Redis) or in this process (wheel). Running handlers finish; due actions
   * wait and run in due order after resume. Scheduling goes on as usual.
   */
  async pause(topic: string): Promise<void> {
    validateTopic(topic);
    const driver = this.supporting('pause');
    if (await driver.pause(topic)) this.events.emit(() => ({ type: 'paused', topic, key: '' }));
  }

  /** Undoes pause: what fell due meanwhile runs now, earliest first. */
  async resume(topic: string): Promise<void> {
    validateTopic(topic);
    const driver = this.supporting('resume');
    if (await driver.resume(topic)) this.events.emit(() => ({ type: 'resumed', topic, key: '' }));
  }

  async isPaused(topic: string): Promise<boolean> {
    validateTopic(topic);
    return this.driver.isPaused ? this.driver.isPaused(topic) : false;
  }

  /** Every topic with waiting, running or dead actions, or paused, by name; on Redis across every instance. */
  async topics(): Promise<TopicSummary[]> {
    const topics = await this.supporting('topics').topics();
    return [...topics].sort((a, b) => (a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : 0));
  }

  /**
   * Makes a waiting action due now, keeping its payload and attempt. False
   * if the key has no waiting action (none, or its handler is running). On a
   * paused topic it runs once the topic is resumed.
   */
  async runNow(topic: string, key: string): Promise<boolean> {
    validateTopic(topic);
    validateKey(key);
    this.refuseScheduleKey(topic, key, 'runNow', 'runRecurringNow');
    const moved = await this.supporting('runNow').runNow(topic, key);
    if (moved) this.events.emit(() => ({ type: 'rescheduled', topic, key }));
    return moved;
  }

  /** The driver's state for health checks and metrics: store up, round trip, per-topic consumer and lag. */
  async health(): Promise<DelayHealth> {
    const health = await this.supporting('health').health();
    return { driver: this.driver.name, ...health };
  }

  /** The driver, if it implements `operation` (a custom driver may not). */
  private supporting<K extends 'pause' | 'resume' | 'topics' | 'runNow' | 'health'>(operation: K): DelayDriver & Required<Pick<DelayDriver, K>> {
    if (typeof this.driver[operation] !== 'function') throw new UnsupportedOperationError(operation, this.driver.name);
    return this.driver as DelayDriver & Required<Pick<DelayDriver, K>>;
  }

  // ---- recurring schedules ----------------------------------------------

  /**
   * Creates the recurring schedule `(topic, key)` or changes it: a cron in a
   * time zone (`{ cron, timeZone }`) or an interval (`{ every }`), with its
   * policies (`missed`, `overlap`, `jitter`) and the `payload` its occurrences
   * carry. Each occurrence runs once across every instance sharing the store.
   * A changed recurrence applies from its next occurrence after now. With
   * `transaction` (postgres driver), the schedule is written, or changed,
   * only if that transaction of yours commits; the other recurring writes
   * take it as their last argument.
   */
  async upsertRecurring<TPayload = unknown>(topic: string, key: string, options: RecurringOptions<TPayload> & WriteOptions): Promise<RecurringSchedule<TPayload>> {
    const schedules = this.recurringFor(topic);
    const [recurring, given] = splitTransaction(options);
    const schedule = await schedules.upsert(topic, key, recurring, undefined, this.transactions.bind(given));
    this.events.emit(() => ({ type: 'scheduled', topic, key, dueAt: schedule.nextRunAt ?? undefined }));
    return schedule;
  }

  /**
   * `upsertRecurring` for many schedules of one topic (each entry its `key`
   * and its options), in a round trip or two per 1000 whatever their number:
   * one read of their ticks, one write of those created or changed; those
   * already as given are not written. For creating or reconciling schedules
   * in bulk (at startup, one per customer). Every entry is checked before
   * anything is written: bad input (a bad key, a key given twice, bad
   * options) throws its typed error and changes nothing. Each schedule is
   * written on its own (no transaction: a failure part way leaves the
   * earlier ones written; calling again finishes the job). Returns the
   * schedules in the order given.
   */
  async upsertRecurringMany<TPayload = unknown>(topic: string, schedules: ReadonlyArray<RecurringUpsert<TPayload>>): Promise<Array<RecurringSchedule<TPayload>>> {
    const written = await this.recurringFor(topic).upsertMany<TPayload>(topic, schedules);
    for (const schedule of written) this.events.emit(() => ({ type: 'scheduled', topic, key: schedule.key, dueAt: schedule.nextRunAt ?? undefined }));
    return written;
  }

  /** Removes the schedule; occurrences already due still run. True if there was one. */
  async removeRecurring(topic: string, key: string, options?: WriteOptions): Promise<boolean> {
    const schedules = this.recurringFor(topic);
    const removed = await schedules.remove(topic, key, this.bindWrite(options));
    if (removed) this.events.emit(() => ({ type: 'cancelled', topic, key }));
    return removed;
  }

  async getRecurring<TPayload = unknown>(topic: string, key: string): Promise<RecurringSchedule<TPayload> | null> {
    return this.recurringFor(topic).get<TPayload>(topic, key);
  }

  /**
   * True when this application handles `topic` as a recurring topic
   * (`@Recurring` or `@OnRecurring`). Says nothing of topics this
   * application has no handler for.
   */
  isRecurringTopic(topic: string): boolean {
    return this.registry?.isRecurring(topic) ?? false;
  }

  /**
   * Every schedule of the topic, by key (code point order), with its next
   * and last run: read a page of 1000 at a time by key, so each schedule that
   * exists for the whole listing is in it exactly once, however often the
   * schedules fire meanwhile. For a large topic, prefer listRecurringPage.
   */
  async listRecurring<TPayload = unknown>(topic: string): Promise<Array<RecurringSchedule<TPayload>>> {
    return this.recurringFor(topic).list<TPayload>(topic);
  }

  /**
   * One page of the topic's schedules, by key (code point order): those after
   * `page.after` (from the first when absent), at most `page.limit` (default
   * 100, at most 1000). Pass the page's `next` as the next `after`; null
   * means it was the last. The store reads only the page. A schedule that
   * exists for the whole walk is listed exactly once; one created or removed
   * meanwhile may or may not be. A bad `after` (not a schedule key) or
   * `limit` throws InvalidPageError.
   */
  async listRecurringPage<TPayload = unknown>(topic: string, page?: RecurringPageRequest): Promise<RecurringPage<TPayload>> {
    return this.recurringFor(topic).listPage<TPayload>(topic, page);
  }

  /** Stops the schedule firing (on every instance) until resumeRecurring; its missed-run policy applies then. True if it was not paused. */
  async pauseRecurring(topic: string, key: string, options?: WriteOptions): Promise<boolean> {
    const schedules = this.recurringFor(topic);
    const paused = await schedules.pause(topic, key, this.bindWrite(options));
    if (paused) this.events.emit(() => ({ type: 'paused', topic, key }));
    return paused;
  }

  async resumeRecurring(topic: string, key: string, options?: WriteOptions): Promise<boolean> {
    const schedules = this.recurringFor(topic);
    const resumed = await schedules.resume(topic, key, this.bindWrite(options));
    if (resumed) this.events.emit(() => ({ type: 'resumed', topic, key }));
    return resumed;
  }

  /** Runs one extra occurrence now, without moving the schedule's cadence. False if there is no such schedule. */
  async runRecurringNow(topic: string, key: string, options?: WriteOptions): Promise<boolean> {
    const schedules = this.recurringFor(topic);
    return schedules.runNow(topic, key, this.bindWrite(options));
  }

  /** The transaction of a write whose options are optional (`cancel`, the recurring writes): given, ambient or none. */
  private bindWrite(options: WriteOptions | undefined): DriverTransaction | undefined {
    return this.transactions.bind(options === undefined ? undefined : writeOptions(options).transaction);
  }

  private recurringFor(topic: string): RecurringSchedules {
    validateTopic(topic);
    if (!this.recurring || typeof this.driver.advanceSeries !== 'function') throw new UnsupportedOperationError('recurring actions', this.driver.name);
    if (this.registry?.get(topic) && !this.registry.isRecurring(topic)) {
      throw new RecurringTopicError(topic, 'is handled by @OnDelayExpired; recurring schedules need a topic handled by @Recurring or @OnRecurring');
    }
    return this.recurring;
  }

  /**
   * Re-drives every dead action of a topic; returns how many. One whose key
   * has an open batch cannot come back now (ActionKindConflictError): it is
   * left dead and the rest go on.
   */
  async redriveAll(topic: string): Promise<number> {
    validateTopic(topic);
    let redriven = 0;
    let skipped = 0;
    for (;;) {
      const { items } = await this.listDead(topic, { offset: skipped, limit: 100 });
      let moved = 0;
      for (const dead of items) {
        try {
          if (await this.redrive(topic, dead.id)) moved++;
        } catch (error) {
          if (!(error instanceof ActionKindConflictError)) throw error;
          skipped++;
        }
      }
      redriven += moved;
      // Stop when nothing is left, or when nothing could be moved (another instance got there first).
      if (items.length === 0 || moved === 0) return redriven;
    }
  }

  /**
   * On a recurring topic a key without U+001E names a schedule (its tick), not
   * an occurrence: cancelling, moving or running it by hand would stop or
   * shift the schedule behind its bookkeeping's back. Occurrences may be.
   */
  private refuseScheduleKey(topic: string, key: string, call: string, instead: string): void {
    if (this.registry?.isRecurring(topic) && !key.includes(SERIES_SEPARATOR)) {
      throw new RecurringTopicError(topic, `is a recurring topic and ${quoteInput(key)} is one of its schedules: use ${instead}, not ${call}`);
    }
  }
}

function notOneOff(topic: string, call: string): RecurringTopicError {
  return new RecurringTopicError(topic, `is a recurring topic (@Recurring / @OnRecurring): its actions are its schedules' occurrences; use upsertRecurring, not ${call}`);
}

/** The key a dead id names: a dead batch's id is its key, U+001F and a token. */
function keyOfDeadId(id: string): string {
  const separator = id.indexOf('\u001f');
  return separator < 0 ? id : id.slice(0, separator);
}

/** Entries in one scheduleMany call: bounded so one Lua call stays short (Redis runs nothing else meanwhile). */
const MAX_SCHEDULE_MANY = 1000;

const OPTIONS_REQUIRED = 'options are required, e.g. { delay: "30m" }';
const ENTRY_TRANSACTION = 'a scheduleMany entry cannot carry a transaction: pass it once, as scheduleMany(topic, entries, { transaction })';

/**
 * upsertRecurring's options without `transaction` (the schedule's own
 * options refuse a field they do not know), and the transaction. Options
 * that are no object go on as they are, for the schedule's check to refuse.
 */
function splitTransaction<T extends object>(options: T & WriteOptions): [T, unknown] {
  if (typeof options !== 'object' || options === null || !('transaction' in options)) return [options, undefined];
  const { transaction, ...rest } = options;
  return [rest as T, transaction];
}

/** The options object of a write, refused (before anything is written) when it is not one. */
function writeOptions(options: unknown): WriteOptions {
  if (typeof options !== 'object' || options === null) throw new InvalidScheduleOptionsError('write options must be an object, e.g. { transaction }');
  return options as WriteOptions;
}

/**
 * A pending action's payload as users read it: a recurring schedule's tick carries its series state (not JSON), shown
 * decoded, as a copy of its own (the decoder shares its recurrence and policy objects, frozen, between states) without
 * a held-back instant when there is none.
 */
function readPayload(stored: string | undefined): unknown {
  const state = decodeSeriesState(stored);
  if (!state) return parsePayload(stored);
  const { buffered, ...rest } = state;
  return { ...rest, spec: { ...state.spec }, missed: { ...state.missed }, ...(buffered === undefined ? {} : { buffered }) };
}

function toPendingAction<TPayload>(action: StoredAction, payload: unknown): PendingAction<TPayload> {
  return {
    topic: action.topic,
    key: action.key,
    payload: payload as TPayload | undefined,
    // A fixed shape (items present, maybe undefined) keeps this hot path monomorphic.
    items: action.items ? action.items.map((item) => JSON.parse(item) as unknown) : undefined,
    size: action.items ? (action.size ?? action.items.length) : undefined,
    dueAt: new Date(action.dueAt),
    attempt: action.attempt,
    state: action.state,
    paused: action.paused ?? false,
  };
}

function toDeadAction<TPayload>(action: StoredDeadAction): DeadAction<TPayload> {
  return {
    id: action.id,
    topic: action.topic,
    key: action.key,
    payload: parsePayload(action.payload) as TPayload | undefined,
    // A fixed shape (items present, maybe undefined) keeps this hot path monomorphic.
    items: action.items ? action.items.slice(0, LISTED_BATCH_ITEMS).map((item) => JSON.parse(item) as unknown) : undefined,
    size: action.items?.length,
    dueAt: new Date(action.dueAt),
    attempts: action.attempts,
    error: action.error,
    diedAt: new Date(action.diedAt),
  };
}
