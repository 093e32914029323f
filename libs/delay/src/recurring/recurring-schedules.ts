import { Inject, Injectable, Logger } from '@nestjs/common';
import { DELAY_DRIVER, DELAY_RESOLVED_OPTIONS } from '../delay.constants';
import { ResolvedDelayOptions } from '../delay.module-definition';
import { InvalidKeyError } from '../errors/invalid-key.error';
import { RecurringTopicError } from '../errors/recurring-topic.error';
import { UnsupportedOperationError } from '../errors/unsupported-operation.error';
import { AdvanceSeriesCommand, DelayDriver, SeriesRunRecord, StoredAction } from '../interfaces/delay-driver.interface';
import { recurringBlocker } from './recurring-blocker';
import { DriverTransaction } from '../interfaces/delay-transaction.interface';
import { DelayClock } from '../time/clock';
import { quoteInput } from '../utils/quote-input';
import { validateKey, validateTopic } from '../validation/action-input';
import { parsePayload, serializePayload } from '../validation/payload-json';
import { isTickKey, MAX_SERIES_KEY_LENGTH, occurrenceKey, parseOccurrenceKey, SERIES_SEPARATOR } from './occurrence-key';
import { OrphanPolicy, RecurringOptions, RecurringRun, RecurringSchedule } from './recurring-options';
import { PAUSED_TICK_DELAY_MS } from './recurring-ticker';
import { checkRecurringOptions } from './check-recurring-options';
import { decodeSeriesState, encodeSeriesState, missedOf, recurrenceOf, sameSpec, SeriesState } from './series-state';

/** Compare-and-set rounds before a write gives up to a concurrent writer of the same schedule. */
const MAX_ROUNDS = 8;
const LIST_PAGE = 1000;

type Change = { readonly next: AdvanceSeriesCommand['next']; readonly occurrences?: AdvanceSeriesCommand['occurrences'] } | 'none';
/** What a schedule's view is made of: its tick as read, or as just written. */
type Tick = Pick<StoredAction, 'topic' | 'key' | 'payload' | 'dueAt'>;
/** The tick after a write (null if none), and whether the write created the schedule (it then has no last run). */
interface Written {
  readonly tick: Tick | null;
  readonly created: boolean;
}

/**
 * The per-key operations on recurring schedules (upsert, remove, pause,
 * resume, run now, read), for every driver alike. Each reads the schedule's
 * tick and writes with advanceSeries conditioned on the payload it read, so
 * a concurrent tick or writer makes it read again rather than overwrite. An
 * upsert first tries to create, on condition that there is no tick: one
 * round trip for a new schedule, whose view is made from what was written.
 * With a transaction (bound by DelayService), the read and the write are
 * both made inside it.
 */
@Injectable()
export class RecurringSchedules {
  private readonly logger = new Logger(RecurringSchedules.name);

  constructor(
    @Inject(DELAY_DRIVER) private readonly driver: DelayDriver,
    @Inject(DELAY_RESOLVED_OPTIONS) private readonly options: ResolvedDelayOptions,
    private readonly clock: DelayClock,
  ) {}

  /** The smallest spacing the driver accepts: the wheel's tick, 1 s otherwise. */
  get minIntervalMs(): number {
    return this.driver.minRecurrenceMs ?? 1000;
  }

  /**
   * Creates the schedule, or changes it. A changed recurrence applies from
   * the next occurrence after now (nothing between the last occurrence and
   * now fires because of it); changed policies or payload keep the next time.
   */
  async upsert<TPayload>(
    topic: string,
    key: string,
    options: RecurringOptions<TPayload>,
    declaration?: { readonly orphan: OrphanPolicy },
    transaction?: DriverTransaction,
  ): Promise<RecurringSchedule<TPayload>> {
    validateTopic(topic);
    validateSeriesKey(key);
    const checked = checkRecurringOptions(options, this.minIntervalMs);
    const payload = serializePayload(options.payload, this.options.maxPayloadBytes);
    const declared = declaration !== undefined;
    const wanted = { spec: checked.compiled.spec, missed: checked.missed, overlap: checked.overlap, jitterMs: checked.jitterMs, payload, declared, orphan: declaration?.orphan === 'keep' ? ('keep' as const) : undefined };
    const written = await this.write(topic, key, (state, action) => {
      if (!state || !action) {
        const fresh: SeriesState = { v: 1, ...wanted, last: null, reset: true, paused: false };
        return { next: { due: { delayMs: 0 }, payload: encodeSeriesState(fresh) } };
      }
      const updated: SeriesState = { ...state, ...wanted, reset: state.reset || !sameSpec(state.spec, wanted.spec) };
      if (encodeSeriesState(updated) === action.payload) return 'none';
      if (updated.paused) return { next: { due: { delayMs: PAUSED_TICK_DELAY_MS }, payload: encodeSeriesState(updated) } };
      // A changed recurrence: the tick runs now and plans from now. Otherwise it keeps its time.
      const due = updated.reset ? { delayMs: 0 } : { atMs: action.dueAt };
      return { next: { due, payload: encodeSeriesState(updated) } };
    }, transaction, !declared);
    const tick = written.tick as Tick;
    return written.created ? this.view<TPayload>(tick, null) : (await this.views<TPayload>([tick]))[0];
  }

  /** Removes the schedule: no further occurrence. Occurrences already created still run. True if there was one. */
  async remove(topic: string, key: string, transaction?: DriverTransaction): Promise<boolean> {
    validateTopic(topic);
    validateSeriesKey(key);
    let existed = false;
    await this.write(topic, key, (state) => {
      existed = state !== undefined;
      return state ? { next: null } : 'none';
    }, transaction);
    return existed;
  }

  /** No occurrence fires until resume (then the missed-run policy applies). True if it was running. */
  async pause(topic: string, key: string, transaction?: DriverTransaction): Promise<boolean> {
    return this.setPaused(topic, key, true, transaction);
  }

  async resume(topic: string, key: string, transaction?: DriverTransaction): Promise<boolean> {
    return this.setPaused(topic, key, false, transaction);
  }

  private async setPaused(topic: string, key: string, paused: boolean, transaction: DriverTransaction | undefined): Promise<boolean> {
    validateTopic(topic);
    validateSeriesKey(key);
    let changed = false;
    await this.write(topic, key, (state) => {
      changed = state !== undefined && state.paused !== paused;
      if (!state || !changed) return 'none';
      const payload = encodeSeriesState({ ...state, paused });
      return { next: { due: { delayMs: paused ? PAUSED_TICK_DELAY_MS : 0 }, payload } };
    }, transaction);
    return changed;
  }

  /**
   * Creates one extra occurrence, due now, without moving the schedule's
   * cadence (its overlap policy does not apply). False if there is no such schedule.
   */
  async runNow(topic: string, key: string, transaction?: DriverTransaction): Promise<boolean> {
    validateTopic(topic);
    validateSeriesKey(key);
    let found = false;
    const at = this.clock.now();
    await this.write(topic, key, (state) => {
      found = state !== undefined;
      if (!state) return 'none';
      return { next: undefined, occurrences: [{ key: occurrenceKey(key, at, true), due: { delayMs: 0 }, payload: state.payload }] };
    }, transaction);
    return found;
  }

  async get<TPayload>(topic: string, key: string): Promise<RecurringSchedule<TPayload> | null> {
    validateTopic(topic);
    validateSeriesKey(key);
    const action = await this.driver.get(topic, key);
    return action && decodeSeriesState(action.payload) ? (await this.views<TPayload>([action]))[0] : null;
  }

  /** Every schedule of the topic, by key. */
  async list<TPayload>(topic: string): Promise<Array<RecurringSchedule<TPayload>>> {
    validateTopic(topic);
    const schedules: Array<RecurringSchedule<TPayload>> = [];
    for (let offset = 0; ; offset += LIST_PAGE) {
      const page = await this.driver.list(topic, { offset, limit: LIST_PAGE });
      schedules.push(...(await this.views<TPayload>(page.filter((action) => isTickKey(action.key) && decodeSeriesState(action.payload)))));
      if (page.length < LIST_PAGE) break;
    }
    return schedules.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }

  /**
   * Reads the tick, asks `decide` what to write, and writes it on condition
   * that the tick is still what was read. With `tryCreate`, the first round
   * skips the read and writes on condition that there is no tick (the
   * common case of an upsert); a tick there makes the next round read it.
   * Returns the tick as read ('none') or as written, null if none.
   */
  private async write(
    topic: string,
    key: string,
    decide: (state: SeriesState | undefined, action: StoredAction | undefined) => Change,
    transaction?: DriverTransaction,
    tryCreate = false,
  ): Promise<Written> {
    const { driver } = this;
    if (!driver.advanceSeries) throw new UnsupportedOperationError('recurring actions', driver.name);
    const first = tryCreate ? -1 : 0;
    for (let round = first; round < MAX_ROUNDS; round++) {
      // Read where the write goes: inside a transaction, it must see that transaction's earlier writes.
      const action = round < 0 ? undefined : ((await driver.get(topic, key, transaction)) ?? undefined);
      const state = action ? decodeSeriesState(action.payload) : undefined;
      if (action && !state) throw new RecurringTopicError(topic, `key ${quoteInput(key)} holds an action that is no recurring schedule`);
      const change = decide(state, action);
      if (change === 'none') return { tick: action ?? null, created: false };
      const expect = action ? { payload: action.payload as string } : { absent: true as const };
      const result = await driver.advanceSeries({ topic, key, expect, overlap: 'allow', occurrences: change.occurrences ?? [], next: change.next, transaction });
      if (!result.applied) continue;
      if (!change.next) return { tick: null, created: false };
      // The tick as written: its payload, and the due time the driver resolved (a driver that does not say is read back).
      if (result.nextDueAt !== undefined) return { tick: { topic, key, payload: change.next.payload, dueAt: result.nextDueAt }, created: action === undefined };
      return { tick: await driver.get(topic, key, transaction), created: false };
    }
    this.logger.warn(`Recurring ${quoteInput(topic)} / ${quoteInput(key)} changed ${MAX_ROUNDS} times while being written`);
    throw new RecurringTopicError(topic, `schedule ${quoteInput(key)} kept changing while being written; try again`);
  }

  /** The schedules of these ticks (all of one topic), with their last runs: one more read of the driver's, whatever their number. */
  private async views<TPayload>(actions: readonly Tick[]): Promise<Array<RecurringSchedule<TPayload>>> {
    if (actions.length === 0) return [];
    const runs = this.driver.lastSeriesRuns ? await this.driver.lastSeriesRuns(actions[0].topic, actions.map((action) => action.key)) : [];
    return actions.map((action, n) => this.view<TPayload>(action, runs[n] ?? null));
  }

  private view<TPayload>(action: Tick, run: SeriesRunRecord | null): RecurringSchedule<TPayload> {
    const state = decodeSeriesState(action.payload) as SeriesState;
    return {
      topic: action.topic,
      key: action.key,
      recurrence: recurrenceOf(state.spec),
      missed: missedOf(state.missed),
      overlap: state.overlap,
      jitterMs: state.jitterMs,
      payload: parsePayload(state.payload) as TPayload | undefined,
      paused: state.paused,
      nextRunAt: state.paused ? null : new Date(action.dueAt),
      lastRunAt: state.last === null ? null : new Date(state.last),
      lastRun: run ? recurringRun(run) : null,
      declared: state.declared,
      orphan: state.declared ? (state.orphan ?? 'remove') : null,
    };
  }
}

/** A driver's record of a last run, as users read it; its scheduled instant comes from the occurrence key. */
function recurringRun(record: SeriesRunRecord): RecurringRun | null {
  const parsed = parseOccurrenceKey(record.occurrenceKey);
  if (!parsed) return null;
  const started = record.startedAt;
  return {
    outcome: record.outcome,
    occurrence: record.occurrenceKey,
    scheduledAt: new Date(parsed.scheduledAtMs),
    startedAt: started === undefined ? null : new Date(started),
    lagMs: started === undefined ? null : Math.max(0, started - parsed.scheduledAtMs),
    attempt: record.attempt,
    at: new Date(record.at),
    blockedBy: record.blockedBy ? recurringBlocker(record.blockedBy) : null,
  };
}

/** A schedule key: a valid key without U+001E (it separates a schedule's key from its occurrences'), short enough for an occurrence key. */
export function validateSeriesKey(key: unknown): string {
  const valid = validateKey(key);
  if (valid.includes(SERIES_SEPARATOR)) throw new InvalidKeyError(key, 'contains U+001E, which is reserved for the occurrences of a recurring schedule');
  if (valid.length > MAX_SERIES_KEY_LENGTH) throw new InvalidKeyError(key, `a recurring schedule's key may be at most ${MAX_SERIES_KEY_LENGTH} characters`);
  return valid;
}
