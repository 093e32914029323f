import { Inject, Injectable, Logger } from '@nestjs/common';
import { DELAY_DRIVER, DELAY_RESOLVED_OPTIONS } from '../delay.constants';
import { ResolvedDelayOptions } from '../delay.module-definition';
import { InvalidKeyError } from '../errors/invalid-key.error';
import { InvalidScheduleOptionsError } from '../errors/invalid-schedule-options.error';
import { RecurringTopicError } from '../errors/recurring-topic.error';
import { UnsupportedOperationError } from '../errors/unsupported-operation.error';
import { AdvanceSeriesCommand, DelayDriver, SeriesRunRecord, StoredAction } from '../interfaces/delay-driver.interface';
import { recurringBlocker } from './recurring-blocker';
import { DriverTransaction } from '../interfaces/delay-transaction.interface';
import { DelayClock } from '../time/clock';
import { compareCodePoints } from '../utils/code-point-order';
import { quoteInput } from '../utils/quote-input';
import { validateTopic } from '../validation/action-input';
import { parsePayload, serializePayload } from '../validation/payload-json';
import { isTickKey, occurrenceKey, parseOccurrenceKey } from './occurrence-key';
import { OrphanPolicy, RecurringOptions, RecurringRun, RecurringSchedule } from './recurring-options';
import { PAUSED_TICK_DELAY_MS } from './recurring-ticker';
import { checkRecurringOptions, CompileRecurrence } from './check-recurring-options';
import { compileRecurrence, CompiledRecurrence } from './compile-recurrence';
import { CompiledRecurrences } from './compiled-recurrences';
import { RecurringPage, RecurringPageRequest, RecurringUpsert } from './recurring-page';
import { MAX_RECURRING_PAGE, validateRecurringPage } from './recurring-page-input';
import { validateSeriesKey } from './series-key';
import { decodeSeriesState, encodeSeriesState, missedOf, recurrenceOf, sameSpec, SeriesState } from './series-state';

/** Compare-and-set rounds before a write gives up to a concurrent writer of the same schedule. */
const MAX_ROUNDS = 8;
/** upsertRecurringMany reads and writes this many schedules per round trip. */
const MANY_CHUNK = 1000;

type Change = { readonly next: AdvanceSeriesCommand['next']; readonly occurrences?: AdvanceSeriesCommand['occurrences'] } | 'none';
/** What a schedule's view is made of: its tick as read, or as just written. */
type Tick = Pick<StoredAction, 'topic' | 'key' | 'payload' | 'dueAt'>;
/** The state an upsert writes, but for what the schedule has already (last, paused, reset). */
type Wanted = Pick<SeriesState, 'spec' | 'missed' | 'overlap' | 'jitterMs' | 'payload' | 'declared' | 'orphan'>;
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
  private readonly recurrences = new CompiledRecurrences();

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
    const wanted = this.wanted(options, declaration);
    const written = await this.write(topic, key, (state, action) => upsertChange(wanted, state, action), transaction, !wanted.declared);
    const tick = written.tick as Tick;
    return written.created ? this.view<TPayload>(tick, null) : (await this.views<TPayload>([tick]))[0];
  }

  /**
   * upsert for many schedules of one topic (none declared in code): every
   * entry is checked first (bad input changes nothing), then per 1000 keys
   * one read of their ticks and last runs and one write of those that must
   * change (created or changed, all in one round trip), and a read again of
   * only those a concurrent writer changed meanwhile. Schedules in the order given.
   */
  async upsertMany<TPayload>(topic: string, entries: ReadonlyArray<RecurringUpsert<TPayload>>): Promise<Array<RecurringSchedule<TPayload>>> {
    validateTopic(topic);
    if (!Array.isArray(entries)) throw new InvalidScheduleOptionsError(`upsertRecurringMany takes an array of schedules, got ${quoteInput(entries)}`);
    const seen = new Set<string>();
    // Schedules written together mostly share a few recurrences: each distinct one is compiled (and checked) once.
    const compiled = new Map<string, CompiledRecurrence>();
    const compile: CompileRecurrence = (spec, options) => {
      const id = JSON.stringify(spec);
      let known = compiled.get(id);
      if (!known) {
        known = compileRecurrence(spec, options);
        compiled.set(id, known);
      }
      return known;
    };
    const checked = entries.map((entry: RecurringUpsert<TPayload>) => {
      if (entry === null || typeof entry !== 'object') throw new InvalidScheduleOptionsError(`each schedule must be an object with a key, got ${quoteInput(entry)}`);
      const { key, ...options } = entry;
      validateSeriesKey(key);
      if (seen.has(key)) throw new InvalidKeyError(key, 'is given twice in one upsertRecurringMany');
      seen.add(key);
      return { key, wanted: this.wanted(options as RecurringOptions<TPayload>, undefined, compile) };
    });
    const schedules: Array<RecurringSchedule<TPayload>> = [];
    for (let at = 0; at < checked.length; at += MANY_CHUNK) schedules.push(...(await this.upsertChunk<TPayload>(topic, checked.slice(at, at + MANY_CHUNK))));
    return schedules;
  }

  private async upsertChunk<TPayload>(topic: string, entries: ReadonlyArray<{ readonly key: string; readonly wanted: Wanted }>): Promise<Array<RecurringSchedule<TPayload>>> {
    const { driver } = this;
    if (!driver.advanceSeries) throw new UnsupportedOperationError('recurring actions', driver.name);
    const advance = driver.advanceSeries.bind(driver);
    const views: Array<RecurringSchedule<TPayload> | undefined> = new Array(entries.length);
    let pending = entries.map((_, n) => n);
    for (let round = 0; round < MAX_ROUNDS && pending.length > 0; round++) {
      const keys = pending.map((n) => entries[n].key);
      const [actions, runs] = await Promise.all([this.getMany(topic, keys), this.lastRuns(topic, keys)]);
      const writes: Array<{ readonly n: number; readonly command: AdvanceSeriesCommand; readonly created: boolean; readonly run: SeriesRunRecord | null }> = [];
      pending.forEach((n, at) => {
        const action = actions[at] ?? undefined;
        const state = action ? decodeSeriesState(action.payload) : undefined;
        if (action && !state) throw new RecurringTopicError(topic, `key ${quoteInput(entries[n].key)} holds an action that is no recurring schedule`);
        const change = upsertChange(entries[n].wanted, state, action);
        if (change === 'none') {
          views[n] = this.view<TPayload>(action as StoredAction, runs[at] ?? null);
          return;
        }
        const expect = action ? { payload: action.payload as string } : { absent: true as const };
        const command: AdvanceSeriesCommand = { topic, key: entries[n].key, expect, overlap: 'allow', occurrences: [], next: change.next };
        writes.push({ n, command, created: action === undefined, run: action ? (runs[at] ?? null) : null });
      });
      if (writes.length === 0) {
        pending = [];
        break;
      }
      const results = driver.advanceSeriesMany
        ? await driver.advanceSeriesMany(topic, writes.map((write) => write.command))
        : await Promise.all(writes.map((write) => advance(write.command)));
      const again: number[] = [];
      const unknownDue: number[] = [];
      writes.forEach((write, at) => {
        const result = results[at];
        const next = write.command.next;
        if (!result.applied || !next) {
          again.push(write.n);
        } else if (result.nextDueAt === undefined) {
          unknownDue.push(write.n);
        } else {
          views[write.n] = this.view<TPayload>({ topic, key: write.command.key, payload: next.payload, dueAt: result.nextDueAt }, write.run);
        }
      });
      // A driver that does not say the tick's due time: read back like an unapplied write (the next round finds it unchanged).
      pending = [...again, ...unknownDue];
    }
    if (pending.length > 0) {
      this.logger.warn(`Recurring ${quoteInput(topic)} / ${quoteInput(entries[pending[0]].key)} changed ${MAX_ROUNDS} times while being written`);
      throw new RecurringTopicError(topic, `schedule ${quoteInput(entries[pending[0]].key)} kept changing while being written; try again`);
    }
    return views as Array<RecurringSchedule<TPayload>>;
  }

  private async getMany(topic: string, keys: readonly string[]): Promise<Array<StoredAction | null>> {
    const { driver } = this;
    return driver.getMany ? driver.getMany(topic, keys) : Promise.all(keys.map((key) => driver.get(topic, key)));
  }

  private async lastRuns(topic: string, keys: readonly string[]): Promise<ReadonlyArray<SeriesRunRecord | null>> {
    return this.driver.lastSeriesRuns && keys.length > 0 ? this.driver.lastSeriesRuns(topic, keys) : [];
  }

  /** The state an upsert wants: checked options (typed errors for bad ones), the payload serialised. */
  private wanted<TPayload>(options: RecurringOptions<TPayload>, declaration: { readonly orphan: OrphanPolicy } | undefined, compile?: CompileRecurrence): Wanted {
    const checked = checkRecurringOptions(options, this.minIntervalMs, compile);
    const payload = serializePayload(options.payload, this.options.maxPayloadBytes);
    const declared = declaration !== undefined;
    return { spec: checked.compiled.spec, missed: checked.missed, overlap: checked.overlap, jitterMs: checked.jitterMs, payload, declared, orphan: declaration?.orphan === 'keep' ? ('keep' as const) : undefined };
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

  /** Every schedule of the topic, by key: pages of listPage until the last, so each schedule that exists throughout is listed once. */
  async list<TPayload>(topic: string): Promise<Array<RecurringSchedule<TPayload>>> {
    const schedules: Array<RecurringSchedule<TPayload>> = [];
    let after: string | null = null;
    do {
      const page: RecurringPage<TPayload> = await this.listPage<TPayload>(topic, { after, limit: MAX_RECURRING_PAGE });
      schedules.push(...page.schedules);
      after = page.next;
    } while (after !== null);
    return schedules;
  }

  /**
   * A page of the topic's schedules by key (code point order), after the
   * key `after`: the driver reads the ticks in key order (listSeries), so a
   * tick re-armed meanwhile keeps its place. One read of the ticks and one of
   * their last runs.
   */
  async listPage<TPayload>(topic: string, page?: RecurringPageRequest): Promise<RecurringPage<TPayload>> {
    validateTopic(topic);
    const { after, limit } = validateRecurringPage(page);
    const ticks = this.driver.listSeries ? await this.driver.listSeries(topic, { after, limit }) : await this.sortedTicks(topic, after, limit);
    const schedules = await this.views<TPayload>(ticks.filter((action) => isTickKey(action.key) && decodeSeriesState(action.payload)));
    return { schedules, next: ticks.length < limit ? null : ticks[ticks.length - 1].key };
  }

  /** Without listSeries: every action of the topic read by offset and sorted by key (a tick re-armed meanwhile may be missed or read twice). */
  private async sortedTicks(topic: string, after: string | null, limit: number): Promise<StoredAction[]> {
    const ticks = new Map<string, StoredAction>();
    for (let offset = 0; ; offset += MAX_RECURRING_PAGE) {
      const page = await this.driver.list(topic, { offset, limit: MAX_RECURRING_PAGE });
      for (const action of page) if (isTickKey(action.key) && (after === null || compareCodePoints(action.key, after) > 0)) ticks.set(action.key, action);
      if (page.length < MAX_RECURRING_PAGE) break;
    }
    return [...ticks.values()].sort((a, b) => compareCodePoints(a.key, b.key)).slice(0, limit);
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

  /**
   * When the next occurrence is due. A tick armed with `reset` (a new
   * schedule, a changed recurrence) is due at once and plans from its own
   * due time, so its next occurrence is the recurrence's first instant after
   * that: worked out here from the recurrence (deterministic, as the tick's
   * plan is), not left at the tick's own instant. Null when there is none.
   */
  private nextRunAt(state: SeriesState, dueAt: number): Date | null {
    if (!state.reset) return new Date(dueAt);
    const next = this.recurrences.after(state.spec, Math.max(state.last ?? -Infinity, dueAt));
    return next === null ? null : new Date(next);
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
      nextRunAt: state.paused ? null : this.nextRunAt(state, action.dueAt),
      lastRunAt: state.last === null ? null : new Date(state.last),
      lastRun: run ? recurringRun(run) : null,
      declared: state.declared,
      orphan: state.declared ? (state.orphan ?? 'remove') : null,
    };
  }
}

/** What an upsert changes: nothing, or the tick to write (created due now, changed, or parked while paused). */
function upsertChange(wanted: Wanted, state: SeriesState | undefined, action: StoredAction | undefined): Change {
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

export { validateSeriesKey };
