import { ActionKindConflictError } from '../../errors/action-kind-conflict.error';
import { DriverUnavailableError } from '../../errors/driver-unavailable.error';
import { DueTimeOutOfRangeError } from '../../errors/due-time-out-of-range.error';
import { InvalidKeyError } from '../../errors/invalid-key.error';
import { DueSpec, ScheduleResult, StoredAction } from '../../interfaces/delay-driver.interface';
import { DriverTransaction } from '../../interfaces/delay-transaction.interface';
import { sqlStateOf } from '../../transactions/sql-state';
import { codePointOrder, inItemOrder } from '../../utils/code-point-order';
import { PostgresClockOffset } from './postgres-clock-offset';
import { PostgresConnection, Row } from './postgres-connection';
import { SQLSTATE_KIND_CONFLICT } from './postgres-migrations';
import { dueParams, hasNul } from './postgres-params';
import { int, nullable } from './postgres-rows';
import { PostgresStatements } from './postgres-statements';
import { ScheduleEntry } from './postgres-write-gatherer';
import { WriteOrder, writeId } from './postgres-write-order';

/** What the writes need of the driver around them. */
export interface PostgresWritesContext {
  readonly connection: PostgresConnection;
  readonly sql: PostgresStatements;
  readonly schema: string;
  readonly horizonMs: number;
  readonly clockOffset: PostgresClockOffset;
  /** The driver's write order, shared with the gatherer (which holds its calls' places in it). */
  readonly order: WriteOrder;
  /** Sends the schedule and cancel calls of these keys still gathered for this tick. */
  flushFor(topic: string, keys: readonly string[]): void;
  /** Tells this instance's consumer of the topic that something is due at `at` (no notification needed). */
  wake(topic: string, at: number): void;
}

/**
 * Where the driver's writes go: into the application's transaction when one
 * is given (with the store's id for the guard in the statement, which
 * refuses a transaction no longer open, or on another database), else on
 * the driver's pool after its earlier writes of the same keys (WriteOrder),
 * bounded by commandTimeout. And the schedule statement with its answers:
 * the results in entry order, or the typed error of the first refused entry.
 */
export class PostgresWrites {
  /** The store's id (the schema's store table), read at start: what a write in the application's transaction gives its guard. */
  private storeId: string | undefined;

  constructor(private readonly context: PostgresWritesContext) {}

  /** A write: in the application's transaction when given, else in the write order, with null for the store. */
  async write(topic: string, keys: readonly string[], transaction: DriverTransaction | undefined, sql: string, params: (txStore: string | null) => unknown[]): Promise<Row[]> {
    const { connection } = this.context;
    if (transaction) return connection.inTransaction(transaction, sql, params(await this.store()));
    return this.ordered(topic, keys, (timeoutMs) => connection.query(sql, params(null), timeoutMs));
  }

  /** The store's id: read at start, or by the first write in a transaction made before. */
  async store(): Promise<string> {
    if (this.storeId === undefined) {
      const [row] = await this.context.connection.query(this.context.sql.storeId);
      if (typeof row?.id !== 'string') throw new DriverUnavailableError(`schema "${this.context.schema}" has no store id: the one row of its store table, made by migration 1, is gone`);
      this.storeId = row.id;
    }
    return this.storeId;
  }

  /**
   * Runs `work` after the driver's earlier writes of these keys, schedule calls still gathered for this tick included,
   * with what is left of the call's commandTimeout once its turn comes (waiting for earlier calls counts): a call whose
   * time ran out while it waited rejects unsent.
   */
  ordered<T>(topic: string, keys: readonly string[], work: (timeoutMs: number) => Promise<T>): Promise<T> {
    this.context.flushFor(topic, keys);
    const timeoutMs = this.context.connection.commandTimeoutMs;
    const deadline = Date.now() + timeoutMs;
    return this.context.order.run(
      keys.map((key) => writeId(topic, key)),
      () => {
        const left = deadline - Date.now();
        if (left <= 0) return Promise.reject(new DriverUnavailableError(`PostgreSQL did not answer within ${timeoutMs} ms (earlier calls on the same key were still waiting)`));
        return work(left);
      },
    );
  }

  /** Schedules these entries in one statement, in the application's transaction or after earlier writes of their keys. */
  async schedules(topic: string, entries: readonly ScheduleEntry[], maxPastMs: number, transaction: DriverTransaction | undefined): Promise<ScheduleResult[]> {
    for (const entry of entries) {
      if (hasNul(entry.key)) throw new InvalidKeyError(entry.key, 'contains U+0000, which PostgreSQL cannot store in text');
    }
    if (entries.length === 0) return [];
    const { connection, sql } = this.context;
    const keys = entries.map((entry) => entry.key);
    if (transaction) return this.sendSchedules(topic, entries, maxPastMs, transaction, (params) => this.write(topic, keys, transaction, sql.schedule, params));
    // Autocommit: the named statement the gathered schedules use, after this driver's earlier writes of these keys.
    return this.sendSchedules(topic, entries, maxPastMs, undefined, (params) => this.ordered(topic, keys, (timeoutMs) => connection.queryPrepared(sql.schedule, params(null), timeoutMs)));
  }

  /**
   * The gathered autocommit schedules of one topic, sent as is (the gatherer
   * holds their keys' places in the write order): the entries in code point
   * order of their keys, as cancelGathered below; results in call order.
   */
  async sendGathered(topic: string, entries: readonly ScheduleEntry[], maxPastMs: number, timeoutMs: number): Promise<ScheduleResult[]> {
    const { connection, sql } = this.context;
    const order = codePointOrder(entries, (entry) => entry.key);
    const sorted = order.map((n) => entries[n]);
    return inItemOrder(order, await this.sendSchedules(topic, sorted, maxPastMs, undefined, (params) => connection.queryPrepared(sql.schedule, params(null), timeoutMs)));
  }

  /**
   * The gathered cancels of one topic as one statement of cancel_each, sent
   * as is (the gatherer holds the keys' places): the keys in code point
   * order, as every gathered statement takes its rows (a key given twice
   * keeps its calls' order, so the first still removes the row); per call,
   * in call order, whether it removed one.
   */
  async cancelGathered(topic: string, keys: readonly string[], timeoutMs: number): Promise<boolean[]> {
    const { connection, sql } = this.context;
    const order = codePointOrder(keys, (key) => key);
    const rows = await connection.queryPrepared(sql.cancelEach, [topic, order.map((n) => keys[n])], timeoutMs);
    return inItemOrder(order, rows.map((row) => int(row.removed) > 0));
  }

  /**
   * One statement of the schedule function for these entries, sent by
   * `run` (which decides where: the application's transaction, in the write
   * order, or as is for the gatherer that holds the order itself); the
   * results in entry order, or the typed error of the first refused entry.
   */
  private async sendSchedules(
    topic: string,
    entries: readonly ScheduleEntry[],
    maxPastMs: number,
    transaction: DriverTransaction | undefined,
    run: (params: (txStore: string | null) => unknown[]) => Promise<Row[]>,
  ): Promise<ScheduleResult[]> {
    const keys = entries.map((entry) => entry.key);
    const dues = entries.map((entry) => dueParams(entry.due));
    let rows: Row[];
    const sentAt = Date.now();
    try {
      rows = await run((txStore) => [
        topic,
        keys,
        dues.map(([absolute]) => absolute),
        dues.map(([, value]) => value),
        entries.map((entry) => (entry.payload === undefined || entry.payload === '' ? null : entry.payload)),
        entries.map((entry) => entry.ifExists === 'keep'),
        entries.map((entry) => entry.trace ?? null),
        maxPastMs,
        this.context.horizonMs,
        txStore,
      ]);
    } catch (error) {
      // A batch opened under one of the keys between the function's check and its write: nothing was written.
      if (sqlStateOf(error) === SQLSTATE_KIND_CONFLICT) throw new ActionKindConflictError(topic, conflictingKey(error, keys), 'batch');
      throw error;
    }
    const first = rows[0];
    this.sawNow(first.now_ms, sentAt);
    const status = int(first.status);
    if (status < 0) {
      const entry = entries[int(first.attempt) - 1];
      throw this.refusal(status, topic, entry.key, entry.due, int(first.due_at), maxPastMs);
    }
    let soonest = Infinity;
    const results = rows.map((row, n): ScheduleResult => {
      const rowStatus = int(row.status);
      const dueAt = int(row.due_at);
      const action: StoredAction = {
        topic,
        key: keys[n],
        payload: nullable(row.payload),
        dueAt,
        attempt: int(row.attempt),
        state: rowStatus === 4 ? 'running' : 'waiting',
      };
      if (rowStatus <= 2) soonest = Math.min(soonest, dueAt);
      return { action, outcome: rowStatus === 1 ? 'created' : rowStatus === 2 ? 'replaced' : 'kept' };
    });
    // This instance's own consumer need not wait for the notification (or, behind a transaction pooler, for its next look).
    if (!transaction && soonest < Infinity) this.context.wake(topic, soonest);
    return results;
  }

  /** A reply carrying the database's time, for a call sent at `sentAt`: a sample of the clock offset. */
  sawNow(now: unknown, sentAt: number): void {
    if (now !== null && now !== undefined) this.context.clockOffset.observe(int(now), sentAt);
  }

  /** The typed error for a refused due time (-1 too far in the past, -2 beyond the horizon) or key (-3 a batch), as every driver throws. */
  refusal(status: number, topic: string, key: string, due: DueSpec, reportedDueAt: number, maxPastMs: number): Error {
    if (status === -3) return new ActionKindConflictError(topic, key, 'batch');
    const dueAt = 'atMs' in due ? due.atMs : reportedDueAt;
    if (status === -1) return new DueTimeOutOfRangeError(dueAt, `more than ${maxPastMs} ms in the past (option maxPast)`);
    return new DueTimeOutOfRangeError(dueAt, `beyond the driver's horizon of ${this.context.horizonMs} ms from now`);
  }
}

/** The key a kind-conflict error names (the function puts it in its message), else the first key. */
function conflictingKey(error: unknown, keys: readonly string[]): string {
  const message = error instanceof Error ? error.message : '';
  return keys.find((key) => message.includes(`key ${key} of topic`)) ?? keys[0];
}
