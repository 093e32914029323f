import { Logger } from '@nestjs/common';
import { ActionKindConflictError } from '../../errors/action-kind-conflict.error';
import { BatchTooLargeError } from '../../errors/batch-too-large.error';
import { LISTED_BATCH_ITEMS } from '../../delay.constants';
import { batchItemBytes } from '../batch-item-bytes';
import { DriverUnavailableError } from '../../errors/driver-unavailable.error';
import {
  AdvanceSeriesCommand,
  AdvanceSeriesResult,
  SeriesPageRequest,
  SeriesRunRecord,
  CollectCommand,
  CollectResult,
  DelayConsumer,
  Delivery,
  DeliveryOutcome,
  RescheduleCommand,
  ScheduleCommand,
  ScheduleManyCommand,
  ScheduleResult,
  StoredAction,
  StoredDeadAction,
} from '../../interfaces/delay-driver.interface';
import { DriverHealth, TopicHealth } from '../../interfaces/delay-health.interface';
import { PageRequest } from '../../interfaces/pending-action.interface';
import { SameTickDriver } from '../../interfaces/same-tick-driver.interface';
import { TopicSummary } from '../../interfaces/topic-summary.interface';
import { DelayClock, SystemClock, TimerHandle } from '../../time/clock';
import { DEFAULT_HORIZON_MS, resolveDueAt } from '../../validation/due-time';
import { InFlightTracker } from '../in-flight-tracker';
import { runDelivery } from '../run-delivery';
import { markSameTickWrappers } from '../same-tick-forms';
import { ActionArena, ArenaPayload, isBatch, NIL, ORPHANED, READY, RUNNING } from './action-arena';
import { stepSeries, WheelSeriesHost } from './wheel-series-step';
import { TopicState } from './wheel-topic-state';
import { compareCodePoints } from '../../utils/code-point-order';
import { TimingWheel } from './timing-wheel';
import { SERIES_SEPARATOR } from '../../recurring/occurrence-key';
import { inMicrotask } from '../../utils/in-microtask';
import { quoteInput } from '../../utils/quote-input';

/** The most runs (ticks and actions) the wheel starts in one turn of the event loop before letting it go round. */
const RUNS_PER_TURN = 256;

export interface WheelDriverOptions {
  /** The wheel's precision: actions fire at most one tick late. Default 100 ms. */
  readonly tickMs?: number;
  /** Default: the system clock. */
  readonly clock?: DelayClock;
}

/**
 * The in-memory driver: a hierarchical timing wheel over a compact arena,
 * one clock timer for the whole process (armed for the next bucket that has
 * work, so an idle process sleeps), and per-topic bounded dispatch.
 *
 * Guarantees: once per process; everything is lost when the process ends.
 */
export class WheelDriver implements SameTickDriver {
  readonly name = 'wheel';
  readonly horizonMs = DEFAULT_HORIZON_MS;
  readonly tickMs: number;
  /** A recurrence may not be finer than the wheel's tick. */
  get minRecurrenceMs(): number {
    return this.tickMs;
  }

  private readonly logger = new Logger(WheelDriver.name);
  private readonly clock: DelayClock;
  private readonly arena = new ActionArena();
  private readonly wheel: TimingWheel;
  private readonly topicStates = new Map<string, TopicState>();
  private readonly topicsById: TopicState[] = [];
  /** Where the next turn's pump starts among topicsById. */
  private pumpFrom = 0;
  /** The topic of the latest schedule or cancel: most calls name the same topic as the one before. */
  private lastTopic: TopicState | undefined;
  private readonly inFlight = new InFlightTracker();

  private consumer: DelayConsumer | undefined;
  private dispatching = false;
  private closed = false;
  private timer: TimerHandle | undefined;
  private timerTick = Infinity;
  private pumpQueued = false;
  /** Runs started since the event loop last had a turn (see RUNS_PER_TURN). */
  private startedThisTurn = 0;
  /** What a series step uses of this driver (wheel-series-step.ts). */
  private readonly seriesHost: WheelSeriesHost = {
    arena: this.arena,
    horizonMs: this.horizonMs,
    now: () => this.clock.now(),
    arm: (state, key, payload, dueAt, existing) => this.arm(state, key, payload, dueAt, existing),
    cancel: (topic, key) => this.cancelNow(topic, key),
  };

  constructor(options: WheelDriverOptions = {}) {
    this.tickMs = options.tickMs ?? 100;
    if (!Number.isInteger(this.tickMs) || this.tickMs < 1) {
      throw new RangeError(`WheelDriver tickMs must be a whole number of milliseconds >= 1, got ${this.tickMs}`);
    }
    this.clock = options.clock ?? new SystemClock();
    this.wheel = new TimingWheel(this.arena, this.clock.now(), this.tickMs);
    this.clock.trackIdle(() => this.whenIdle(), () => this.inFlight.size + (this.pumpQueued ? 1 : 0));
  }

  async schedule(command: ScheduleCommand): Promise<ScheduleResult> {
    return this.scheduleNow(command);
  }

  /** `schedule`, returned rather than promised: DelayService calls it directly (see SameTickDriver). */
  scheduleNow(command: ScheduleCommand): ScheduleResult {
    this.assertOpen();
    const dueAt = resolveDueAt(command.due, this.clock.now(), command.maxPastMs, this.horizonMs);
    const topic = this.topic(command.topic);
    const existing = topic.index.get(command.key);
    if (existing !== undefined && isBatch(this.arena.payloads[existing])) throw new ActionKindConflictError(command.topic, command.key, 'batch');
    if (existing !== undefined && command.ifExists === 'keep') {
      return { action: this.snapshot(existing), outcome: 'kept' };
    }
    const i = this.arm(topic, command.key, command.payload, dueAt, existing, 1, command.trace);
    return { action: this.snapshot(i), outcome: existing === undefined ? 'created' : 'replaced' };
  }

  async scheduleMany(command: ScheduleManyCommand): Promise<ScheduleResult[]> {
    this.assertOpen();
    const now = this.clock.now();
    const topic = this.topic(command.topic);
    // Every entry is checked before any is written: all or nothing.
    const dues = command.entries.map((entry) => {
      const existing = topic.index.get(entry.key);
      if (existing !== undefined && isBatch(this.arena.payloads[existing])) throw new ActionKindConflictError(command.topic, entry.key, 'batch');
      return resolveDueAt(entry.due, now, command.maxPastMs, this.horizonMs);
    });
    return command.entries.map((entry, n) => {
      const existing = topic.index.get(entry.key);
      if (existing !== undefined && entry.ifExists === 'keep') return { action: this.snapshot(existing), outcome: 'kept' };
      const i = this.arm(topic, entry.key, entry.payload, dues[n], existing, 1, entry.trace);
      return { action: this.snapshot(i), outcome: existing === undefined ? 'created' : 'replaced' };
    });
  }

  async cancel(topic: string, key: string): Promise<boolean> {
    return this.cancelNow(topic, key);
  }

  /** `cancel`, returned rather than promised: DelayService calls it directly (see SameTickDriver). */
  cancelNow(topic: string, key: string): boolean {
    const last = this.lastTopic;
    const state = last !== undefined && topic === last.name ? last : this.topicStates.get(topic);
    const i = state?.index.take(key);
    if (state === undefined || i === undefined) return false;
    // A running action is left to its handler; its outcome will find it orphaned and drop it.
    if (this.arena.where[i] === RUNNING) {
      this.orphan(state, i);
    } else {
      this.unfile(state, i);
      this.arena.free(i);
    }
    return true;
  }

  async reschedule(command: RescheduleCommand): Promise<StoredAction | null> {
    const state = this.topicStates.get(command.topic);
    const i = state?.index.get(command.key);
    if (state === undefined || i === undefined) return null;
    this.assertOpen();
    if (isBatch(this.arena.payloads[i])) throw new ActionKindConflictError(command.topic, command.key, 'batch');
    const dueAt = resolveDueAt(command.due, this.clock.now(), command.maxPastMs, this.horizonMs);
    const moved = this.arm(state, command.key, this.arena.payloads[i], dueAt, i, this.arena.attempt[i], this.arena.traces.get(i));
    return this.snapshot(moved);
  }

  async get(topic: string, key: string): Promise<StoredAction | null> {
    const i = this.topicStates.get(topic)?.index.get(key);
    return i === undefined ? null : this.snapshot(i);
  }

  async list(topic: string, page: Required<PageRequest>): Promise<StoredAction[]> {
    const state = this.topicStates.get(topic);
    if (!state) return [];
    const { dueAt, keys } = this.arena;
    const indices = state.index.values();
    for (const i of state.detached) indices.push(i);
    const running = (i: number): number => (this.arena.where[i] === RUNNING ? 0 : 1);
    indices.sort((a, b) => running(a) - running(b) || dueAt[a] - dueAt[b] || compareCodePoints(keys[a] as string, keys[b] as string));
    return indices.slice(page.offset, page.offset + page.limit).map((i) => this.snapshot(i, LISTED_BATCH_ITEMS));
  }

  /** The series' ticks by key (code point order): an array sorted once while no tick comes or goes, then a binary search per page. */
  async listSeries(topic: string, page: SeriesPageRequest): Promise<StoredAction[]> {
    const state = this.topicStates.get(topic);
    if (!state) return [];
    const actions: StoredAction[] = [];
    // A key whose tick is gone (cancelled as a plain action) is passed over, and the page filled from the keys after it.
    let after = page.after;
    while (actions.length < page.limit) {
      const keys = state.ticks.page(after, page.limit - actions.length);
      if (keys.length === 0) break;
      for (const key of keys) {
        const i = state.index.get(key);
        if (i !== undefined) actions.push(this.snapshot(i));
      }
      after = keys[keys.length - 1];
    }
    return actions;
  }

  async count(topic: string): Promise<number> {
    const state = this.topicStates.get(topic);
    return state ? state.index.size + state.detached.size : 0;
  }

  async listDead(topic: string, page: Required<PageRequest>): Promise<StoredDeadAction[]> {
    const dead = this.topicStates.get(topic)?.dead;
    if (!dead) return [];
    const records = Array.from(dead.values()).sort((a, b) => a.diedAt - b.diedAt || compareCodePoints(a.id, b.id));
    return records.slice(page.offset, page.offset + page.limit);
  }

  async countDead(topic: string): Promise<number> {
    return this.topicStates.get(topic)?.dead.size ?? 0;
  }

  async redrive(topic: string, id: string): Promise<boolean> {
    const state = this.topicStates.get(topic);
    const record = state?.dead.get(id);
    if (state === undefined || record === undefined) return false;
    this.assertOpen();
    const pending = state.index.get(record.key);
    // A dead single action must not overwrite the key's open batch (its items would be lost).
    if (!record.items && pending !== undefined && isBatch(this.arena.payloads[pending])) {
      throw new ActionKindConflictError(topic, record.key, 'batch');
    }
    state.dead.delete(id);
    const now = this.clock.now();
    if (record.items) {
      // A dead batch comes back as the closed unit it was, not merged into the key's open batch.
      const bytes = record.items.reduce((sum, item) => sum + batchItemBytes(item), 0);
      const i = this.arena.alloc(state.id, record.key, { items: [...record.items], openedAt: now, bytes }, now);
      state.detached.add(i);
      this.file(state, i);
    } else {
      this.arm(state, record.key, record.payload, now, pending);
    }
    return true;
  }

  async collect(command: CollectCommand): Promise<CollectResult> {
    this.assertOpen();
    const now = this.clock.now();
    const state = this.topic(command.topic);
    const { arena } = this;
    let i = state.index.get(command.key);
    let outcome: CollectResult['outcome'];
    let dueAt: number;
    if (i === undefined) {
      dueAt = now + (command.maxWaitMs === undefined ? command.windowMs : Math.min(command.windowMs, command.maxWaitMs));
      i = arena.alloc(state.id, command.key, { items: [command.item], openedAt: now, bytes: batchItemBytes(command.item) }, dueAt);
      arena.setTrace(i, command.trace);
      state.index.set(command.key, i);
      outcome = 'opened';
    } else {
      const batch = arena.payloads[i];
      if (!isBatch(batch)) throw new ActionKindConflictError(command.topic, command.key, 'action');
      const bytes = batch.bytes + batchItemBytes(command.item);
      if (command.maxBytes !== undefined && bytes > command.maxBytes) throw new BatchTooLargeError(command.topic, command.key, bytes, command.maxBytes);
      batch.items.push(command.item);
      batch.bytes = bytes;
      dueAt = command.slide ? Math.min(now + command.windowMs, batch.openedAt + (command.maxWaitMs ?? Infinity)) : arena.dueAt[i];
      this.unfile(state, i);
      outcome = 'joined';
    }
    const size = (arena.payloads[i] as { items: string[] }).items.length;
    if (size >= command.maxItems) {
      dueAt = now;
      state.index.delete(command.key);
      state.detached.add(i);
      outcome = 'flushed';
    }
    arena.dueAt[i] = dueAt;
    this.file(state, i);
    return { size, dueAt, outcome };
  }

  async start(consumer: DelayConsumer): Promise<void> {
    this.consumer = consumer;
    for (const [name, concurrency] of consumer.topics) this.topic(name).concurrency = concurrency;
    this.dispatching = true;
    this.queuePump();
  }

  async drain(timeoutMs: number): Promise<void> {
    this.dispatching = false;
    this.disarmTimer();
    const emptied = await this.inFlight.whenEmpty(timeoutMs);
    if (!emptied) {
      this.logger.warn(`${this.inFlight.size} delay handler(s) still running after the ${timeoutMs} ms shutdown timeout`);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    this.dispatching = false;
    this.disarmTimer();
    // Counted at close, not at drain: handlers finishing during the drain may have scheduled more.
    let pending = 0;
    for (const state of this.topicStates.values()) pending += state.index.size + state.detached.size;
    if (pending > 0) {
      this.logger.warn(`${pending} pending delayed action(s) are dropped: the wheel driver keeps actions in memory only`);
    }
  }

  // ---- operations ------------------------------------------------------

  async pause(topic: string): Promise<boolean> {
    const state = this.topic(topic);
    if (state.paused) return false;
    state.paused = true;
    return true;
  }

  async resume(topic: string): Promise<boolean> {
    const state = this.topicStates.get(topic);
    if (!state?.paused) return false;
    state.paused = false;
    this.sortReady(state);
    this.queuePump();
    return true;
  }

  async isPaused(topic: string): Promise<boolean> {
    return this.topicStates.get(topic)?.paused ?? false;
  }

  async topics(): Promise<TopicSummary[]> {
    const summaries: TopicSummary[] = [];
    for (const state of this.topicsById) {
      const pending = state.index.size + state.detached.size;
      if (pending === 0 && state.dead.size === 0 && !state.paused) continue;
      const running = state.running - state.orphans;
      summaries.push({ topic: state.name, waiting: pending - running, running, dead: state.dead.size, paused: state.paused });
    }
    return summaries;
  }

  async runNow(topic: string, key: string): Promise<boolean> {
    const state = this.topicStates.get(topic);
    const i = state?.index.get(key);
    if (state === undefined || i === undefined) return false;
    const where = this.arena.where[i];
    if (where === RUNNING) return false;
    // Already due and waiting for a slot: it is as early as it can be.
    if (where === READY) return true;
    this.assertOpen();
    this.unfile(state, i);
    this.arena.dueAt[i] = Math.min(this.arena.dueAt[i], this.clock.now());
    this.file(state, i);
    return true;
  }

  async advanceSeries(command: AdvanceSeriesCommand): Promise<AdvanceSeriesResult> {
    this.assertOpen();
    return stepSeries(this.seriesHost, this.topic(command.topic), command);
  }

  async declareSeries(topic: string, keys: readonly string[], forMs: number): Promise<void> {
    this.assertOpen();
    const state = this.topic(topic);
    const until = this.clock.now() + forMs;
    for (const key of keys) if ((state.declared.get(key) ?? -Infinity) < until) state.declared.set(key, until);
  }

  async lastSeriesRuns(topic: string, keys: readonly string[]): Promise<ReadonlyArray<SeriesRunRecord | null>> {
    const state = this.topicStates.get(topic);
    return keys.map((key) => state?.runs.get(key) ?? null);
  }

  async health(): Promise<DriverHealth> {
    const now = this.clock.now();
    const topics: TopicHealth[] = [];
    for (const state of this.topicsById) {
      const consuming = state.concurrency > 0;
      if (!consuming && state.index.size + state.detached.size === 0 && !state.paused) continue;
      const head = state.ready.head;
      topics.push({
        topic: state.name,
        consuming,
        consumerAlive: consuming && this.dispatching,
        // The ready queue is in the order actions fell due, so its head has waited longest.
        lagMs: head === NIL ? 0 : Math.max(0, now - this.arena.dueAt[head]),
        paused: state.paused,
      });
    }
    return { up: !this.closed, roundTripMs: 0, topics };
  }

  /** Resolves once no handler runs and no dispatch is queued (used by the virtual clock). */
  async whenIdle(): Promise<void> {
    while (this.pumpQueued || this.inFlight.size > 0) {
      if (this.inFlight.size > 0) await this.inFlight.whenEmpty();
      else await new Promise<void>((resolve) => setImmediate(resolve));
    }
  }

  /** After close nothing would ever fire: refuse rather than accept and lose. */
  private assertOpen(): void {
    if (this.closed) throw new DriverUnavailableError('the wheel driver is closed (the application is shutting down)');
  }

  // ---- filing ----------------------------------------------------------

  /**
   * Arms `key` due at `dueAt`. Reuses the existing arena entry when it is
   * waiting; a running one is detached instead (its late outcome is then
   * ignored) and a fresh entry takes its place.
   */
  private arm(state: TopicState, key: string, payload: ArenaPayload, dueAt: number, existing: number | undefined, attempt = 1, trace?: string): number {
    const { arena } = this;
    let i: number;
    if (existing !== undefined && arena.where[existing] !== RUNNING) {
      i = existing;
      this.unfile(state, i);
      arena.payloads[i] = payload;
      arena.dueAt[i] = dueAt;
      arena.rearm(i);
    } else {
      if (existing !== undefined) this.orphan(state, existing);
      i = arena.alloc(state.id, key, payload, dueAt);
      state.index.set(key, i);
    }
    arena.setTrace(i, trace);
    arena.attempt[i] = attempt;
    this.file(state, i);
    return i;
  }

  private file(state: TopicState, i: number): void {
    const deadline = this.wheel.insert(i);
    if (deadline < 0) {
      this.arena.where[i] = READY;
      state.queueFor(this.arena.keys[i] as string).push(this.arena, i);
      this.queuePump();
    } else if (deadline < this.timerTick) {
      this.armTimer(deadline);
    }
  }

  /** A running action cancelled or re-armed: its run's outcome will be dropped. */
  private orphan(state: TopicState, i: number): void {
    this.arena.where[i] = ORPHANED;
    state.orphans++;
    const revoke = this.consumer?.revoke;
    if (revoke) {
      // Told after the step that orphaned it: an abort listener must not run inside a driver call.
      const consumer = this.consumer as DelayConsumer;
      const key = this.arena.keys[i] as string;
      const token = String(this.arena.token[i]);
      inMicrotask(() => revoke.call(consumer, state.name, key, token));
    }
  }

  /** Due order (then key) for the ready queue, so a resumed topic starts with what fell due first. */
  private sortReady(state: TopicState): void {
    const { arena } = this;
    if (state.ready.size < 2) return;
    const indices: number[] = [];
    while (state.ready.size > 0) indices.push(state.ready.shift(arena));
    indices.sort((a, b) => arena.dueAt[a] - arena.dueAt[b] || compareCodePoints(arena.keys[a] as string, arena.keys[b] as string));
    for (const i of indices) state.ready.push(arena, i);
  }

  private unfile(state: TopicState, i: number): void {
    const where = this.arena.where[i];
    if (where >= 0) this.wheel.remove(i);
    else if (where === READY) state.queueFor(this.arena.keys[i] as string).remove(this.arena, i);
  }

  // ---- time ------------------------------------------------------------

  private armTimer(tick: number): void {
    if (this.closed) return;
    if (this.timer !== undefined) this.clock.clearTimer(this.timer);
    this.timerTick = tick;
    const delay = Math.max(0, this.wheel.timeOf(tick) - this.clock.now());
    this.timer = this.clock.setTimer(() => this.onTimer(), delay);
  }

  private disarmTimer(): void {
    if (this.timer !== undefined) this.clock.clearTimer(this.timer);
    this.timer = undefined;
    this.timerTick = Infinity;
  }

  /** The timer only moves due actions to their ready queues: user code never runs on this tick. */
  private onTimer(): void {
    this.timer = undefined;
    this.timerTick = Infinity;
    let due = 0;
    this.wheel.advance(this.wheel.tickAt(this.clock.now()), (i) => {
      const state = this.topicsById[this.arena.topicId[i]];
      this.arena.where[i] = READY;
      state.queueFor(this.arena.keys[i] as string).push(this.arena, i);
      due++;
    });
    const next = this.wheel.nextDeadline();
    if (next !== Infinity) this.armTimer(next);
    if (due > 0) this.queuePump();
  }

  // ---- dispatch --------------------------------------------------------

  private queuePump(): void {
    if (this.pumpQueued || !this.dispatching) return;
    this.pumpQueued = true;
    setImmediate(() => {
      this.pumpQueued = false;
      this.startedThisTurn = 0;
      // Each turn starts from the next topic, so one topic's backlog cannot spend every turn's budget before the others.
      const topics = this.topicsById;
      const from = topics.length === 0 ? 0 : this.pumpFrom++ % topics.length;
      for (let n = 0; n < topics.length; n++) this.pump(topics[(from + n) % topics.length]);
    });
  }

  /**
   * Whether one more run may start in this turn of the event loop. Past RUNS_PER_TURN the rest waits
   * for the next turn (queuePump): 10,000 schedules due at the same second start in chunks, and
   * timers, I/O and the handlers' own work get the loop in between.
   */
  private mayStart(): boolean {
    if (this.startedThisTurn < RUNS_PER_TURN) {
      this.startedThisTurn++;
      if (this.startedThisTurn === 1) setImmediate(() => (this.startedThisTurn = 0));
      return true;
    }
    this.queuePump();
    return false;
  }

  private pump(state: TopicState): void {
    if (!this.dispatching || state.paused || state.ready.size + state.readyTicks.size === 0) return;
    if (state.concurrency === 0) {
      if (!state.warnedUnhandled) {
        state.warnedUnhandled = true;
        this.logger.warn(`Actions of topic ${quoteInput(state.name)} are due but no @OnDelayExpired handler for it runs in this process; they stay pending`);
      }
      return;
    }
    // A tick is library work of a few microseconds: it never waits for a slot, so long handlers cannot hold a schedule back.
    while (state.readyTicks.size > 0) {
      if (!this.mayStart()) return;
      this.run(state, state.readyTicks.shift(this.arena));
    }
    while (state.running - state.runningTicks < state.concurrency && state.ready.size > 0) {
      if (!this.mayStart()) return;
      this.run(state, state.ready.shift(this.arena));
    }
  }

  private run(state: TopicState, i: number): void {
    const { arena } = this;
    const consumer = this.consumer as DelayConsumer;
    const payload = arena.payloads[i];
    const key = arena.keys[i] as string;
    if (isBatch(payload) && state.index.get(key) === i) {
      // A batch closes when its handler starts: items arriving now open the next one.
      state.index.delete(key);
      state.detached.add(i);
    }
    arena.where[i] = RUNNING;
    state.running++;
    const tick = state.ticks.size > 0 && state.ticks.has(key);
    if (tick) state.runningTicks++;
    this.inFlight.enter();
    const delivery: Delivery = {
      topic: state.name,
      key,
      payload: isBatch(payload) ? undefined : payload,
      items: isBatch(payload) ? payload.items : undefined,
      dueAt: arena.dueAt[i],
      firedAt: this.clock.now(),
      attempt: arena.attempt[i],
      token: String(arena.token[i]),
      trace: arena.traces.size > 0 ? arena.traces.get(i) : undefined,
    };
    runDelivery(consumer, delivery, (outcome) => {
      state.running--;
      if (tick) state.runningTicks--;
      try {
        this.settle(state, i, delivery, outcome);
      } finally {
        // Whatever settle met, the slot is free: the count goes down and the next action may start.
        this.inFlight.leave();
        this.pump(state);
      }
    });
  }

  private recordRun(state: TopicState, delivery: Delivery, outcome: DeliveryOutcome): void {
    const cut = delivery.key.indexOf(SERIES_SEPARATOR);
    if (cut < 0 || !state.ticks.has(delivery.key.slice(0, cut))) return;
    const outcomeName = outcome.kind === 'completed' ? 'succeeded' : outcome.kind === 'retry' ? 'retrying' : 'dead';
    state.runs.set(delivery.key.slice(0, cut), { outcome: outcomeName, occurrenceKey: delivery.key, startedAt: delivery.firedAt, attempt: delivery.attempt, at: this.clock.now() });
  }

  private settle(state: TopicState, i: number, delivery: Delivery, outcome: DeliveryOutcome): void {
    const { arena } = this;
    // Cancelled or re-armed while running (arm() never reuses a running
    // entry): this outcome belongs to an arming that no longer exists.
    if (arena.where[i] === ORPHANED) {
      state.orphans--;
      arena.free(i);
      return;
    }
    // An occurrence of a recurring series: its outcome is the series' last run.
    if (state.ticks.size > 0) this.recordRun(state, delivery, outcome);
    const detached = state.detached.has(i);
    const release = (): void => {
      if (detached) state.detached.delete(i);
      else state.index.delete(delivery.key);
      arena.free(i);
    };
    switch (outcome.kind) {
      case 'completed':
        release();
        break;
      case 'retry':
        arena.dueAt[i] = this.clock.now() + outcome.delayMs;
        arena.attempt[i] = delivery.attempt + 1;
        this.file(state, i);
        break;
      case 'dead': {
        // A key can have several dead batches, so a batch is filed under key + token.
        const id = delivery.items ? `${delivery.key}\u001f${delivery.token}` : delivery.key;
        state.dead.set(id, {
          id,
          topic: state.name,
          key: delivery.key,
          payload: delivery.payload,
          items: delivery.items,
          dueAt: delivery.dueAt,
          attempts: delivery.attempt,
          error: outcome.error,
          diedAt: this.clock.now(),
        });
        release();
        break;
      }
    }
  }

  // ---- helpers ---------------------------------------------------------

  private topic(name: string): TopicState {
    const last = this.lastTopic;
    if (last !== undefined && name === last.name) return last;
    let state = this.topicStates.get(name);
    if (!state) {
      if (this.topicsById.length >= 0xffff) throw new RangeError('The wheel driver supports at most 65535 topics');
      state = new TopicState(this.topicsById.length, name, this.arena);
      this.topicStates.set(name, state);
      this.topicsById.push(state);
    }
    this.lastTopic = state;
    return state;
  }

  /** What is stored at `i`; of a batch, its first `maxItems` items. */
  private snapshot(i: number, maxItems = Infinity): StoredAction {
    const { arena } = this;
    const payload = arena.payloads[i];
    return {
      topic: this.topicsById[arena.topicId[i]].name,
      key: arena.keys[i] as string,
      payload: isBatch(payload) ? undefined : payload,
      items: isBatch(payload) ? payload.items.slice(0, maxItems) : undefined,
      size: isBatch(payload) ? payload.items.length : undefined,
      dueAt: arena.dueAt[i],
      attempt: arena.attempt[i],
      state: arena.where[i] === RUNNING ? 'running' : 'waiting',
      paused: this.topicsById[arena.topicId[i]].paused,
    };
  }
}


// schedule and cancel only wrap scheduleNow and cancelNow: DelayService may call those directly.
// A subclass or spy that replaces schedule or cancel is not marked, and keeps seeing every call.
markSameTickWrappers(WheelDriver.prototype.schedule, WheelDriver.prototype.cancel);
