import { Logger } from '@nestjs/common';
import { BatchTooLargeError } from '../../errors/batch-too-large.error';
import { ActionKindConflictError } from '../../errors/action-kind-conflict.error';
import { DriverUnavailableError } from '../../errors/driver-unavailable.error';
import { InvalidKeyError } from '../../errors/invalid-key.error';
import {
  AdvanceSeriesCommand,
  AdvanceSeriesResult,
  CollectCommand,
  CollectResult,
  DelayConsumer,
  DelayDriver,
  Delivery,
  RescheduleCommand,
  ScheduleCommand,
  ScheduleManyCommand,
  ScheduleResult,
  SeriesPageRequest,
  SeriesRunRecord,
  StoredAction,
  StoredDeadAction,
} from '../../interfaces/delay-driver.interface';
import { DriverHealth, TopicHealth } from '../../interfaces/delay-health.interface';
import { PostgresDriverConfig } from '../../interfaces/delay-module-options.interface';
import { DriverTransaction } from '../../interfaces/delay-transaction.interface';
import { PageRequest } from '../../interfaces/pending-action.interface';
import { TopicSummary } from '../../interfaces/topic-summary.interface';
import { parseDuration } from '../../time/duration';
import { compareCodePoints } from '../../utils/code-point-order';
import { describeError } from '../../utils/describe-error';
import { settleWithin } from '../../utils/settle-within';
import { DEFAULT_HORIZON_MS } from '../../validation/due-time';
import { InFlightTracker } from '../in-flight-tracker';
import { LeaseRenewals } from '../lease-renewals';
import { readSkippedOccurrence } from '../series-blocker-field';
import { PostgresClockOffset } from './postgres-clock-offset';
import { PostgresHandBack } from './postgres-hand-back';
import { dueParams, expectParams, hasNul, nextParams } from './postgres-params';
import { PostgresHandlerTransactions } from './postgres-handler-transactions';
import { PostgresRunGroups } from './postgres-run-groups';
import { inlineParameters } from './postgres-literals';
import { SERIES_SEPARATOR } from '../../recurring/occurrence-key';
import { PostgresConnection } from './postgres-connection';
import { POSTGRES_DEFAULT_SCHEMA } from './postgres-migrations';
import { int, nullable, toDeadAction, toStoredAction } from './postgres-rows';
import { PostgresSchema } from './postgres-schema';
import { postgresStatements, PostgresStatements } from './postgres-statements';
import { PostgresTopicConsumer } from './postgres-topic-consumer';
import { PostgresWakeListener, WakeHandler } from './postgres-wake-listener';
import { PostgresVacuum } from './postgres-vacuum';
import { PostgresSeriesSteps } from './postgres-series-steps';
import { PostgresWriteGatherer } from './postgres-write-gatherer';
import { WriteOrder } from './postgres-write-order';
import { PostgresWrites } from './postgres-writes';

/** How long health waits for the database before calling it down. */
const HEALTH_TIMEOUT_MS = 2_000;
/** Actions one claim takes at most, unless the claimBatch option says otherwise. */
const CLAIM_BATCH = 100;
/**
 * The same on a topic of recurring schedules, whose claims also take up to as many ticks (see
 * PostgresTopicConsumer): each tick stepped creates an occurrence, and claims that took fewer occurrences than ticks
 * left them piling up behind the ticks. 10,000 schedules every second, handler concurrency 1,000: 8,566-8,834 run a
 * second with 100 occurrences and 256 ticks a claim, 9,572-9,975 (p99 1.14-1.24 s) with 100 and 128, all 10,000
 * (p99 0.87-0.96 s) with 256 and 256.
 */
const RECURRING_CLAIM_BATCH = 256;

/**
 * The transactional driver: actions are rows of the application's own
 * PostgreSQL, so a write can join the application's transaction and commit
 * or roll back with it. Every write is one statement; every time is the
 * database's (`clock_timestamp()`); a unique key on (topic, key), not a
 * lock, keeps one pending action per key. Consumers sleep until the next due
 * time and are woken by LISTEN/NOTIFY when a committed write makes a topic's
 * earliest due time earlier; claims lease rows with FOR UPDATE SKIP LOCKED.
 *
 * Guarantees: as the Redis driver's (at least once; in normal operation
 * exactly one instance runs each action; a crashed instance's runs are
 * redone once their lease expires), with the database's durability.
 */
export class PostgresDriver implements DelayDriver {
  readonly name = 'postgres';
  readonly horizonMs = DEFAULT_HORIZON_MS;
  readonly supportsTransactions = true;

  private readonly logger = new Logger(PostgresDriver.name);
  private readonly connection: PostgresConnection;
  private readonly schema: string;
  private readonly sql: PostgresStatements;
  private readonly migrateAtStart: boolean;
  private readonly leaseMs: number;
  private readonly leases: LeaseRenewals;
  private leaseTimerMs = 0;
  /** The claimBatch option; undefined: each topic's default (CLAIM_BATCH, RECURRING_CLAIM_BATCH). */
  private readonly claimBatch: number | undefined;
  private readonly wakeCheckMs: number;
  private readonly listen: boolean;
  private readonly consumers = new Map<string, PostgresTopicConsumer>();
  private readonly inFlight = new InFlightTracker();
  private readonly clockOffset = new PostgresClockOffset();
  private readonly order = new WriteOrder();
  private readonly gatherer: PostgresWriteGatherer;
  private readonly writes: PostgresWrites;
  private readonly seriesSteps: PostgresSeriesSteps;
  private listener: PostgresWakeListener | undefined;
  private readonly handlerTransactions: PostgresHandlerTransactions;
  private readonly runGroups: PostgresRunGroups;
  private readonly handBack: PostgresHandBack;
  private leaseTimer: NodeJS.Timeout | undefined;
  /** Keeps the busiest tables vacuumed while this instance consumes (undefined with `vacuum: false`). */
  private readonly vacuum: PostgresVacuum | undefined;

  constructor(config: PostgresDriverConfig) {
    const pooler = config.pooler ?? 'session';
    this.schema = config.schema ?? POSTGRES_DEFAULT_SCHEMA;
    const commandTimeoutMs = parseDuration(config.commandTimeout ?? '5s');
    this.connection = new PostgresConnection({ connectionString: config.connectionString, pool: config.pool, commandTimeoutMs, pooler });
    this.sql = postgresStatements(this.schema);
    this.writes = new PostgresWrites({
      connection: this.connection,
      sql: this.sql,
      schema: this.schema,
      horizonMs: this.horizonMs,
      clockOffset: this.clockOffset,
      order: this.order,
      flushFor: (topic, keys) => this.gatherer.flushFor(topic, keys),
      wake: (topic, at) => this.consumers.get(topic)?.wake(at),
    });
    this.seriesSteps = new PostgresSeriesSteps({
      connection: this.connection,
      sql: this.sql,
      writes: this.writes,
      gather: (command) => this.gatherer.advance(command),
      consumerOf: (topic) => this.consumers.get(topic),
    });
    this.gatherer = new PostgresWriteGatherer(
      this.order,
      {
        schedule: (topic, entries, maxPastMs, timeoutMs) => this.writes.sendGathered(topic, entries, maxPastMs, timeoutMs),
        cancel: (topic, keys, timeoutMs) => this.writes.cancelGathered(topic, keys, timeoutMs),
        advance: (topic, commands, timeoutMs) => this.seriesSteps.sendGathered(topic, commands, timeoutMs),
      },
      commandTimeoutMs,
    );
    this.handBack = new PostgresHandBack(this.connection, this.sql);
    this.handlerTransactions = new PostgresHandlerTransactions(config.connectionString, config.pool, commandTimeoutMs);
    this.runGroups = new PostgresRunGroups(this.handlerTransactions, () => this.handlerTransactions.connections);
    this.migrateAtStart = config.migrate ?? true;
    this.leaseMs = parseDuration(config.lease ?? '30s');
    this.leases = new LeaseRenewals(this.leaseMs, config.recurringLease);
    this.claimBatch = config.claimBatch;
    this.wakeCheckMs = parseDuration(config.wakeCheck ?? '10s');
    // A pooler in transaction mode hands each statement any server connection: a LISTEN there would listen nowhere.
    this.listen = pooler === 'session';
    this.vacuum = config.vacuum === false ? undefined : new PostgresVacuum(this.connection, this.schema, this.sql.vacuumCandidates, pooler === 'session');
  }

  /**
   * Creates or upgrades the schema (or checks it, with `migrate: false`); bootstrap fails with DriverUnavailableError if
   * the database cannot be reached, or if its connections do not run under READ COMMITTED (checked first: a refused
   * start creates nothing).
   */
  async connect(): Promise<void> {
    const schema = new PostgresSchema(this.connection, this.schema);
    try {
      await this.checkIsolation();
      if (this.migrateAtStart) await schema.migrate();
      else await schema.check();
      await this.writes.store();
    } catch (error) {
      await this.connection.close();
      throw error;
    }
  }

  async schedule(command: ScheduleCommand): Promise<ScheduleResult> {
    if (command.transaction) {
      const [result] = await this.writes.schedules(command.topic, [command], command.maxPastMs, command.transaction);
      return result;
    }
    if (hasNul(command.key)) throw new InvalidKeyError(command.key, 'contains U+0000, which PostgreSQL cannot store in text');
    // Autocommit: the calls of this tick for this topic share one statement and one commit.
    return this.gatherer.schedule(command);
  }

  scheduleMany(command: ScheduleManyCommand): Promise<ScheduleResult[]> {
    return this.writes.schedules(command.topic, command.entries, command.maxPastMs, command.transaction);
  }

  async cancel(topic: string, key: string, transaction?: DriverTransaction): Promise<boolean> {
    if (hasNul(key)) return false;
    // Autocommit: the cancels of this tick for this topic share one statement and one commit.
    if (!transaction) return this.gatherer.cancel(topic, key);
    const rows = await this.writes.write(topic, [key], transaction, this.sql.cancel, (txStore) => [topic, key, txStore]);
    return int(rows[0].removed) > 0;
  }

  async reschedule(command: RescheduleCommand): Promise<StoredAction | null> {
    const { topic, key, due } = command;
    if (hasNul(key)) return null;
    const [absolute, value] = dueParams(due);
    const sentAt = Date.now();
    const rows = await this.writes.write(topic, [key], command.transaction, this.sql.reschedule, (txStore) => [topic, key, absolute, value, command.maxPastMs, this.horizonMs, txStore]);
    const row = rows[0];
    this.writes.sawNow(row.now_ms, sentAt);
    const status = int(row.status);
    if (status === 0) return null;
    if (status < 0) throw this.writes.refusal(status, topic, key, due, int(row.due_at), command.maxPastMs);
    const dueAt = int(row.due_at);
    if (!command.transaction) this.consumers.get(topic)?.wake(dueAt);
    return { topic, key, payload: nullable(row.payload), dueAt, attempt: int(row.attempt), state: 'waiting' };
  }

  async get(topic: string, key: string, transaction?: DriverTransaction): Promise<StoredAction | null> {
    if (hasNul(key)) return null;
    // In the caller's transaction the read sees what that transaction wrote, and nothing waits for the pool's writes; its
    // guard refuses a transaction over or on another database, as a write's does.
    const rows = transaction
      ? (await this.connection.inTransaction(transaction, this.sql.getInTransaction, [topic, key, await this.writes.store()])).filter((row) => row.member !== null)
      : await this.writes.ordered(topic, [key], (timeoutMs) => this.connection.query(this.sql.get, [topic, key], timeoutMs));
    return rows.length === 0 ? null : toStoredAction(topic, rows[0]);
  }

  async list(topic: string, page: Required<PageRequest>): Promise<StoredAction[]> {
    const rows = await this.connection.query(this.sql.list, [topic, page.limit, page.offset]);
    return rows.map((row) => toStoredAction(topic, row));
  }

  /** The series' ticks by key after `page.after`: one call of list_series, a range of the primary key. */
  async listSeries(topic: string, page: SeriesPageRequest): Promise<StoredAction[]> {
    // A key PostgreSQL cannot store sorts where its part before U+0000 would; no tick has one.
    const after = page.after === null ? null : page.after.split('\u0000')[0];
    const rows = await this.connection.query(this.sql.listSeries, [topic, after, page.limit]);
    return rows.map((row) => toStoredAction(topic, row));
  }

  /** The actions under these keys, in order (null where none): one call of get_each, after this driver's earlier writes of them. */
  async getMany(topic: string, keys: readonly string[]): Promise<Array<StoredAction | null>> {
    const storable = keys.map((key) => (hasNul(key) ? '' : key));
    const rows = await this.writes.ordered(topic, storable, (timeoutMs) => this.connection.query(this.sql.getEach, [topic, storable], timeoutMs));
    const found: Array<StoredAction | null> = keys.map(() => null);
    for (const row of rows) found[int(row.ord) - 1] = toStoredAction(topic, row);
    return found;
  }

  /**
   * Per-key recurring writes of one topic in one statement (advance_series_each:
   * one advance_series per key, keys in code point order so two batches lock
   * in the same order), after this driver's earlier writes of those keys.
   */
  async advanceSeriesMany(topic: string, commands: readonly AdvanceSeriesCommand[]): Promise<AdvanceSeriesResult[]> {
    for (const command of commands) {
      if (command.topic !== topic || command.occurrences.length > 0 || command.orphanGraceMs !== undefined || command.transaction !== undefined) {
        throw new TypeError('advanceSeriesMany takes per-key writes of its topic only: no occurrences, no orphan grace, no transaction');
      }
      if (hasNul(command.key)) throw new InvalidKeyError(command.key, 'contains U+0000, which PostgreSQL cannot store in text');
    }
    const order = commands.map((_, n) => n).sort((a, b) => compareCodePoints(commands[a].key, commands[b].key));
    const sorted = order.map((n) => commands[n]);
    const keys = sorted.map((command) => command.key);
    const expects = sorted.map(({ expect }) => expectParams(expect));
    const nexts = sorted.map(({ next }) => nextParams(next));
    const params = [
      topic,
      keys,
      expects.map(([kind]) => kind),
      expects.map(([, value]) => value),
      nexts.map(([kind]) => kind),
      nexts.map(([, value]) => value),
      nexts.map(([, , payload]) => payload),
    ];
    const sentAt = Date.now();
    const rows = await this.writes.ordered(topic, keys, (timeoutMs) => this.connection.query(this.sql.advanceSeriesEach, params, timeoutMs));
    const results: AdvanceSeriesResult[] = new Array(commands.length);
    let soonest: number | undefined;
    for (const row of rows) {
      this.writes.sawNow(row.now_ms, sentAt);
      const at = int(row.ord) - 1;
      const status = int(row.status);
      if (status === -3) throw new ActionKindConflictError(topic, sorted[at].key, 'batch');
      const nextDueAt = row.due_at === null ? undefined : int(row.due_at);
      if (nextDueAt !== undefined) soonest = Math.min(soonest ?? nextDueAt, nextDueAt);
      results[order[at]] = { applied: status === 1, created: [], skipped: [], cancelled: [], nextDueAt };
    }
    if (soonest !== undefined) this.consumers.get(topic)?.wake(soonest);
    return results;
  }

  async count(topic: string): Promise<number> {
    return int((await this.connection.query(this.sql.count, [topic]))[0].n);
  }

  async listDead(topic: string, page: Required<PageRequest>): Promise<StoredDeadAction[]> {
    const rows = await this.connection.query(this.sql.listDead, [topic, page.limit, page.offset]);
    return rows.map((row) => toDeadAction(topic, row));
  }

  async countDead(topic: string): Promise<number> {
    return int((await this.connection.query(this.sql.countDead, [topic]))[0].n);
  }

  async redrive(topic: string, id: string): Promise<boolean> {
    if (hasNul(id)) return false;
    const status = int((await this.connection.query(this.sql.redrive, [topic, id]))[0].status);
    if (status === -3) throw new ActionKindConflictError(topic, id, 'batch');
    return status === 1;
  }

  async collect(command: CollectCommand): Promise<CollectResult> {
    const { topic, key } = command;
    if (hasNul(key)) throw new InvalidKeyError(key, 'contains U+0000, which PostgreSQL cannot store in text');
    const sentAt = Date.now();
    const rows = await this.writes.write(topic, [key], command.transaction, this.sql.collect, (txStore) => [
      topic,
      key,
      command.item,
      command.windowMs,
      command.maxWaitMs ?? -1,
      command.slide,
      command.maxItems,
      command.trace ?? null,
      txStore,
      command.maxBytes ?? -1,
    ]);
    const row = rows[0];
    this.writes.sawNow(row.now_ms, sentAt);
    const status = int(row.status);
    if (status === -3) throw new ActionKindConflictError(topic, key, 'action');
    if (status === -4) throw new BatchTooLargeError(topic, key, int(row.due_at), command.maxBytes ?? 0);
    const dueAt = int(row.due_at);
    if (!command.transaction) this.consumers.get(topic)?.wake(dueAt);
    return { size: int(row.size), dueAt, outcome: status === 1 ? 'opened' : status === 2 ? 'joined' : 'flushed' };
  }

  async start(consumer: DelayConsumer): Promise<void> {
    if (consumer.topics.size === 0) return;
    this.handlerTransactions.sizeFor([...consumer.topics.values()].reduce((sum, concurrency) => sum + concurrency, 0));
    const wakes = new Map<string, WakeHandler>();
    for (const [topic, concurrency] of consumer.topics) {
      const recurring = consumer.isRecurringTopic?.(topic) === true;
      const topicConsumer = new PostgresTopicConsumer(
        { topic, concurrency, claimBatch: this.claimBatch ?? (recurring ? RECURRING_CLAIM_BATCH : CLAIM_BATCH), leaseMs: this.leases.leaseFor(recurring), recurring, wakeCheckMs: this.wakeCheckMs },
        this.connection,
        this.sql,
        consumer,
        this.inFlight,
        this.clockOffset,
      );
      this.consumers.set(topic, topicConsumer);
      wakes.set(topic, () => topicConsumer.notify());
    }
    if (this.listen) {
      // The listener looks at every topic once it listens (and again after every reconnect).
      this.listener = new PostgresWakeListener(this.connection, this.sql.channel, wakes, this.sql.wakeTags, this.lookAgain, this.wakeCheckMs);
      await this.listener.start();
      // It could not listen yet (it keeps trying): the consumers must not wait for it to look.
      if (!this.listener.listening) this.lookAgain();
    } else {
      this.lookAgain();
    }
    this.leaseTimerMs = this.leases.timerMs([...this.consumers.values()].some((topicConsumer) => topicConsumer.recurring));
    this.leaseTimer = setInterval(() => void this.renewLeases(), this.leaseTimerMs);
    this.vacuum?.start();
  }

  async drain(timeoutMs: number): Promise<void> {
    // A vacuum in flight is cancelled; only the cancel is waited for (below, with what is handed back).
    const vacuumStopped = this.vacuum?.stop();
    for (const topicConsumer of this.consumers.values()) topicConsumer.stop();
    this.listener?.stop();
    this.listener = undefined;
    const emptied = await this.inFlight.whenEmpty(timeoutMs);
    // A claim still on its way is not waited for to run what it took: answered now, that is handed back too.
    if (!emptied) for (const topicConsumer of this.consumers.values()) topicConsumer.claimInFlight.abandon();
    // What shutdown hands back is bounded on its own: commandTimeout for all of it, whatever the database does.
    const deadline = Date.now() + this.connection.commandTimeoutMs;
    const consumers = [...this.consumers.values()];
    await Promise.all([this.handBack.releaseLostClaims(consumers, deadline), emptied ? undefined : this.handBack.releaseRunning(consumers, deadline), vacuumStopped]);
    if (this.leaseTimer) clearInterval(this.leaseTimer);
    this.leaseTimer = undefined;
  }

  // ---- transactional handlers ----

  runTransaction<T>(work: (transaction: unknown) => Promise<T>): Promise<T> {
    return this.handlerTransactions.run(work);
  }

  async beginRun(delivery: Delivery, transaction: DriverTransaction, lockTimeoutMs: number): Promise<boolean> {
    const member = this.memberOf(delivery);
    const lockMs = Math.max(1, Math.min(this.connection.commandTimeoutMs, lockTimeoutMs));
    const rows = await this.connection.inTransaction(transaction, this.sql.beginRun, [delivery.topic, member, delivery.token, await this.writes.store(), lockMs]);
    return rows[0]?.found === true;
  }

  async completeRun(delivery: Delivery, transaction: DriverTransaction): Promise<void> {
    // An occurrence of a recurring schedule: its completion also records it as the schedule's last run.
    const startedAt = delivery.key.includes(SERIES_SEPARATOR) ? delivery.firedAt : null;
    await this.connection.inTransaction(transaction, this.sql.completeRun, [delivery.topic, this.memberOf(delivery), delivery.token, startedAt, await this.writes.store()]);
  }

  /**
   * The run on a connection of the driver's own, in a transaction it may share with other runs (see
   * PostgresRunGroups): begin_run sent with `BEGIN` (or with the locks of the runs that join later), the handler in a
   * savepoint of its own, complete_run sent with `COMMIT`. Neither statement passes
   * the store's id: the guard that checks it would refuse begin_run (a statement in the message that began its
   * transaction looks like one in autocommit to it), and both are known to run in the transaction this opened, on
   * the driver's database.
   */
  async runOwnTransaction(delivery: Delivery, lockTimeoutMs: number, work: (transaction: unknown) => Promise<void>): Promise<'committed' | 'gone'> {
    const { topic, token } = delivery;
    const member = this.memberOf(delivery);
    // Below commandTimeout, so a lock wait ends with the server's 55P03 (the run fails alone) before the driver gives
    // up on the message (which would cost the whole shared transaction).
    const commandMs = this.connection.commandTimeoutMs;
    const lockMs = Math.max(1, Math.min(commandMs - Math.max(250, Math.round(commandMs / 10)), lockTimeoutMs));
    const startedAt = delivery.key.includes(SERIES_SEPARATOR) ? delivery.firedAt : null;
    return this.runGroups.run({
      opening: inlineParameters(this.sql.beginRun, [topic, member, token, null, lockMs]),
      closing: inlineParameters(this.sql.completeRun, [topic, member, token, startedAt, null]),
      order: `${topic}\u0000${member}`,
      work,
    });
  }

  /** The row a run of this process names (a closed batch is filed under its own id, not its key). */
  private memberOf(delivery: Delivery): string {
    return this.consumers.get(delivery.topic)?.memberOf(delivery) ?? delivery.key;
  }

  // ---- end transactional handlers ----

  async close(): Promise<void> {
    const vacuumStopped = this.vacuum?.stop();
    this.runGroups.close();
    await Promise.all([this.handlerTransactions.close(), vacuumStopped]);
    for (const topicConsumer of this.consumers.values()) topicConsumer.stop();
    if (this.leaseTimer) clearInterval(this.leaseTimer);
    this.leaseTimer = undefined;
    this.listener?.stop();
    this.listener = undefined;
    await this.connection.close();
  }

  async pause(topic: string): Promise<boolean> {
    return (await this.connection.query(this.sql.pause, [topic])).length > 0;
  }

  async resume(topic: string): Promise<boolean> {
    const resumed = int((await this.connection.query(this.sql.resume, [topic]))[0].resumed) > 0;
    if (resumed) this.consumers.get(topic)?.kick();
    return resumed;
  }

  async isPaused(topic: string): Promise<boolean> {
    return (await this.connection.query(this.sql.isPaused, [topic]))[0].paused === true;
  }

  async topics(): Promise<TopicSummary[]> {
    const rows = await this.connection.query(this.sql.topics);
    return rows.map((row) => ({ topic: String(row.topic), waiting: int(row.waiting), running: int(row.running), dead: int(row.dead), paused: row.paused === true }));
  }

  async runNow(topic: string, key: string): Promise<boolean> {
    if (hasNul(key)) return false;
    const rows = await this.writes.ordered(topic, [key], (timeoutMs) => this.connection.query(this.sql.runNow, [topic, key], timeoutMs));
    if (rows[0].found === true) this.consumers.get(topic)?.kick();
    return rows[0].found === true;
  }

  /** One step of a recurring series (PostgresSeriesSteps). */
  advanceSeries(command: AdvanceSeriesCommand): Promise<AdvanceSeriesResult> {
    return this.seriesSteps.advance(command);
  }

  // ---- Recurring: declaration marks and last runs ----

  /** Marks these series declared in code until `forMs` from the database's now (a mark only moves later): one statement. */
  async declareSeries(topic: string, keys: readonly string[], forMs: number): Promise<void> {
    // A key PostgreSQL cannot store can have no tick either.
    const storable = keys.filter((key) => !hasNul(key));
    if (storable.length === 0) return;
    await this.connection.query(this.sql.declareSeries, [topic, storable, Math.ceil(forMs)]);
  }

  /** The last run of each series, as the outcome statements (and advance_series, for a skipped one) recorded it: one read. */
  async lastSeriesRuns(topic: string, keys: readonly string[]): Promise<ReadonlyArray<SeriesRunRecord | null>> {
    if (keys.length === 0) return [];
    const storable = keys.map((key) => (hasNul(key) ? '' : key));
    const rows = await this.connection.query(this.sql.lastSeriesRuns, [topic, storable]);
    return rows.map((row, n): SeriesRunRecord | null =>
      row.outcome === null || storable[n] === ''
        ? null
        : {
            outcome: String(row.outcome) as SeriesRunRecord['outcome'],
            ...readSkippedOccurrence(String(row.occurrence)),
            startedAt: row.started_at === null ? undefined : int(row.started_at),
            attempt: int(row.attempt),
            at: int(row.at),
          },
    );
  }

  // ---- end declaration marks and last runs ----

  /** The database reachable (its clock read within 2 s), the round trip, and per topic consumed here its consumer and lag. Never rejects. */
  async health(): Promise<DriverHealth> {
    const consumers = [...this.consumers.values()];
    const started = performance.now();
    const down = (): DriverHealth => ({
      up: false,
      roundTripMs: Math.round(performance.now() - started),
      topics: consumers.map((topicConsumer) => ({ topic: topicConsumer.topic, consuming: true, consumerAlive: false, lagMs: 0, paused: false })),
    });
    const noAnswer = (): Error => new Error(`no answer within ${HEALTH_TIMEOUT_MS} ms`);
    try {
      await settleWithin(this.connection.query(this.sql.now), HEALTH_TIMEOUT_MS, noAnswer);
    } catch {
      return down();
    }
    const roundTripMs = Math.round((performance.now() - started) * 100) / 100;
    if (consumers.length === 0) return { up: true, roundTripMs, topics: [] };
    try {
      const rows = await settleWithin(
        this.connection.query(this.sql.topicHealth, [consumers.map((topicConsumer) => topicConsumer.topic)]),
        HEALTH_TIMEOUT_MS,
        noAnswer,
      );
      const topics = rows.map((row, n): TopicHealth => {
        const now = int(row.now_ms);
        const earliest = row.earliest === null ? undefined : int(row.earliest);
        return {
          topic: consumers[n].topic,
          consuming: true,
          consumerAlive: consumers[n].alive && (!this.listen || this.listener?.listening === true),
          lagMs: earliest === undefined ? 0 : Math.max(0, now - earliest),
          paused: row.paused === true,
        };
      });
      // Claims that keep waiting for their turn: another session holds the topic's row in turns.
      const warnings = consumers
        .filter((topicConsumer) => topicConsumer.stalledForMs > 0 && !topicConsumer.alive)
        .map((topicConsumer) => `claims of "${topicConsumer.topic}" have waited ${Math.round(topicConsumer.stalledForMs / 1000)} s for the topic's turn: another session holds the lock of its row in ${this.schema}.turns`);
      return warnings.length > 0 ? { up: true, roundTripMs, topics, warnings } : { up: true, roundTripMs, topics };
    } catch {
      return down();
    }
  }

  // ---- helpers -----------------------------------------------------------

  /**
   * The claim counts on READ COMMITTED (a statement's snapshot taken after the topic's claims have taken turns); a
   * connection whose role or database defaults to another level would have every claim refused.
   */
  private async checkIsolation(): Promise<void> {
    const [row] = await this.connection.query("SELECT pg_catalog.current_setting('transaction_isolation'::pg_catalog.text) AS level");
    if (row?.level !== 'read committed') {
      throw new DriverUnavailableError(
        `the driver's connections run under ${String(row?.level)} by default; it needs READ COMMITTED: set default_transaction_isolation to 'read committed' for the role or database it connects as (ALTER ROLE ... SET default_transaction_isolation = 'read committed')`,
      );
    }
  }

  /** Every consumer looks now: at start, and after the LISTEN connection came back. */
  private readonly lookAgain = (): void => {
    for (const topicConsumer of this.consumers.values()) topicConsumer.kick();
  };

  /**
   * Every topic at once, each on its own: a renewal that waits (a busy pool, a slow server) holds back only its own
   * topic's next one (LeaseRenewals.due), never the others'. Each is bounded by the command timeout.
   */
  private async renewLeases(): Promise<void> {
    const now = Date.now();
    await Promise.all(
      [...this.consumers.values()]
        .filter((topicConsumer) => topicConsumer.holdsLeases && this.leases.due(topicConsumer, topicConsumer.recurring, this.leaseTimerMs, now))
        .map((topicConsumer) =>
          this.leases.track(topicConsumer, () => {
            const { claimIds, members, tokens } = topicConsumer.leases();
            return this.connection
              .queryPrepared(this.sql.extend, [topicConsumer.topic, topicConsumer.leaseMs, claimIds, members, tokens])
              .then((lost) => topicConsumer.revoke(lost.map((row) => String(row.member))))
              .catch((error: unknown) => {
                this.logger.warn(`Could not renew leases: ${describeError(error)}`);
              });
          }),
        ),
    );
  }
}
