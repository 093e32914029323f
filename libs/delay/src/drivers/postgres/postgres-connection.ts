import { createHash } from 'node:crypto';
import { Logger } from '@nestjs/common';
import { Pool } from 'pg';
import { DelayError } from '../../errors/delay.error';
import { DriverUnavailableError } from '../../errors/driver-unavailable.error';
import { TransactionNotActiveError } from '../../errors/transaction-not-active.error';
import { UnsupportedTransactionClientError } from '../../errors/unsupported-transaction-client.error';
import { DriverTransaction } from '../../interfaces/delay-transaction.interface';
import { PgPoolClientLike, PgPoolLike } from '../../interfaces/postgres-pool.interface';
import { connectionLost, transactionEnded } from '../../transactions/client-errors';
import { isConnectionState, sqlStateOf } from '../../transactions/sql-state';
import { describeError } from '../../utils/describe-error';
import { settleWithin } from '../../utils/settle-within';
import { SQLSTATE_NOT_IN_TRANSACTION, SQLSTATE_OTHER_STORE } from './postgres-migrations';
import { inlineParameters } from './postgres-literals';

export type Row = Record<string, unknown>;

export interface PostgresConnectionSettings {
  readonly connectionString: string | undefined;
  readonly pool: PgPoolLike | undefined;
  readonly commandTimeoutMs: number;
  /** Session poolers (or none) pass a server-side statement_timeout at connect; a transaction pooler may refuse startup parameters. */
  readonly pooler: 'session' | 'transaction';
}

/**
 * SQLSTATEs that mean "try again", not "the statement is wrong": the
 * connection or the server went away (08, 57P0x), resources (53), a
 * statement or lock wait cancelled by its timeout (57014, 55P03), a
 * deadlock or serialization failure the server resolved by aborting this
 * statement (40P01, 40001: nothing of it was applied).
 */
const UNAVAILABLE_STATES = /^(08|53|57P0[1-4]|57014|55P03|58|40001|40P01)/;

/** deadlock_detected and serialization_failure: the server aborted the statement, which applied nothing, to end a cycle of waits. */
const ABORTED_STATES = new Set(['40P01', '40001']);
/** The pause before an aborted statement is sent again: from this, doubling per abort of the same call, up to the max (times 0.5-1, jitter). */
const ABORTED_PAUSE_MIN_MS = 2;
const ABORTED_PAUSE_MAX_MS = 100;
/** Another try is sent only with at least this much of the call's bound left (and no less than its pause): one with less would time out, not run. */
const ABORTED_MIN_TRY_MS = 20;

/** A statement bounded by less than commandTimeout by more than this gets the server's limits brought down to its bound. */
const SERVER_BOUND_SLACK_MS = 10;

/** invalid_schema_name: in the application's transaction, its database lacks the driver's schema. */
const SQLSTATE_NO_SCHEMA = '3F000';

/** invalid_sql_statement_name: a named statement the connection no longer holds. */
const SQLSTATE_NO_SUCH_STATEMENT = '26000';

/**
 * The driver's way to PostgreSQL: its own pool (or the application's), one
 * client borrowed per statement, and a bound on every call. A call that
 * outlives `commandTimeoutMs` rejects with DriverUnavailableError and its
 * client is destroyed rather than given back (on a black-holed connection
 * the reply may never come, and a client still waiting for one must not
 * serve the next call). The server also cancels a statement that runs
 * longer (statement_timeout) on the driver's own pool.
 */
export class PostgresConnection {
  private readonly logger = new Logger(PostgresConnection.name);
  readonly pool: PgPoolLike;
  private readonly ownPool: Pool | undefined;
  /** The server's own limits (statement_timeout, lock_timeout) are commandTimeout, set at connect: the driver's pool, no transaction pooler. */
  private readonly serverLimits: boolean;
  private closed = false;
  private readonly names = new Map<string, string>();
  /** Clients whose session settings could not be put back: dropped when the call that used them ends. */
  private readonly spoiled = new WeakSet<PgPoolClientLike>();

  constructor(private readonly settings: PostgresConnectionSettings) {
    this.serverLimits = settings.pool === undefined && settings.pooler === 'session';
    if (settings.pool) {
      this.pool = settings.pool;
      return;
    }
    const timeout = settings.commandTimeoutMs;
    this.ownPool = new Pool({
      connectionString: settings.connectionString,
      max: 10,
      connectionTimeoutMillis: timeout,
      idleTimeoutMillis: 30_000,
      keepAlive: true,
      application_name: 'nestjs-delay',
      ...(this.serverLimits ? { statement_timeout: timeout, lock_timeout: timeout } : {}),
    });
    // An idle client that loses its connection emits here; the pool drops it and the next call opens another. Once
    // closing, the pool has asked each connection to end, and a server that stops meanwhile ends it with an error.
    this.ownPool.on('error', (error) => {
      if (this.closed) this.logger.debug(`A connection ended with an error while the pool closed: ${describeError(error)}`);
      else this.logger.warn(`An idle connection failed: ${describeError(error)}`);
    });
    // Heard from the moment each connection is made: between the pool handing one out and withClient listening, an
    // error the server sends (pg_terminate_backend) would otherwise be emitted to no one and end the process.
    this.ownPool.on('connect', (client) => client.on('error', (error) => this.logger.debug(`A connection failed: ${describeError(error)}`)));
    this.pool = this.ownPool as unknown as PgPoolLike;
  }

  get isClosed(): boolean {
    return this.closed;
  }

  get commandTimeoutMs(): number {
    return this.settings.commandTimeoutMs;
  }

  /** The connection string of the driver's own pool (for its LISTEN connection); undefined on the application's pool. */
  get connectionString(): string | undefined {
    return this.settings.pool ? undefined : this.settings.connectionString;
  }

  /** One statement on a pooled client, bounded (by commandTimeout unless `timeoutMs` says less). */
  async query(sql: string, params: readonly unknown[] = [], timeoutMs = this.settings.commandTimeoutMs): Promise<Row[]> {
    if (this.closed) throw new DriverUnavailableError('the driver is closed');
    const bound = Math.min(timeoutMs, this.settings.commandTimeoutMs);
    return this.sentAgainWhenAborted(bound, (left) =>
      this.withClient((client) => this.withServerBound(client, left, async () => (await client.query(sql, params as unknown[])).rows), left),
    );
  }

  /**
   * Sends a statement, and sends it again while the server aborts it to
   * break a cycle of lock waits (deadlock_detected, serialization_failure),
   * within the same bound. Every statement on the pool is one autocommit
   * call, so an aborted one applied nothing, and sending it again is the
   * same call made a moment later. The cycle is one the driver made: its
   * statements that lock several rows (gathered cancels and schedules, a
   * batch of completions, a scheduleMany) can each take them in an order
   * another's does not, though every call the application made locks only
   * its own keys; the application must not get that as an error. Each try
   * after the first waits a moment (about 2 ms, doubling to at most 100 ms,
   * with jitter), so that a server aborting it again and again is not sent
   * it in a tight loop. When too little of the bound is left for another try
   * (less than the pause, and at least ABORTED_MIN_TRY_MS), the call fails
   * with the last abort, as a DriverUnavailableError.
   */
  private async sentAgainWhenAborted<T>(bound: number, send: (timeoutMs: number) => Promise<T>): Promise<T> {
    const deadline = Date.now() + bound;
    for (let aborts = 0, timeoutMs = bound; ; timeoutMs = deadline - Date.now()) {
      try {
        return await send(timeoutMs);
      } catch (error) {
        const state = sqlStateOf(error);
        if (state === undefined || !ABORTED_STATES.has(state) || this.closed) throw error;
        const pause = Math.round(Math.min(ABORTED_PAUSE_MAX_MS, ABORTED_PAUSE_MIN_MS * 2 ** aborts++) * (0.5 + Math.random() / 2));
        const floor = Math.max(ABORTED_MIN_TRY_MS, pause);
        if (deadline - Date.now() - pause < floor) throw error;
        this.logger.debug(`A statement was aborted to end a cycle of lock waits (${state}); sending it again in ${pause} ms`);
        await new Promise((resolve) => setTimeout(resolve, pause));
        // Checked again after the pause: its timer may have fired late.
        if (this.closed || deadline - Date.now() < floor) throw error;
      }
    }
  }

  /**
   * Runs one statement on `client`. The server's own limits (statement_timeout, lock_timeout, set at connect on the
   * driver's pool) are commandTimeout: a statement bounded by less (a call that waited for earlier calls on its key, a
   * hand-back within shutdown's deadline) has them brought down to its bound for that statement, so the server does not
   * go on with it (and apply it) after the call gave up. Two more round trips, only on that path.
   */
  private async withServerBound<T>(client: PgPoolClientLike, boundMs: number, run: () => Promise<T>): Promise<T> {
    const lowered = this.serverLimits && boundMs < this.settings.commandTimeoutMs - SERVER_BOUND_SLACK_MS;
    if (!lowered) return run();
    const ms = Math.max(1, Math.floor(boundMs));
    await client.query(`SET statement_timeout = ${ms}; SET lock_timeout = ${ms}`);
    const restore = (): Promise<unknown> => client.query('RESET statement_timeout; RESET lock_timeout');
    let result: T;
    try {
      result = await run();
    } catch (error) {
      // Back to the session's own values (those given at connect) before the connection serves another call; the
      // statement's error is the call's (a connection that cannot reset is dropped with it: the error is not a refusal).
      await restore().catch(() => this.spoiled.add(client));
      throw error;
    }
    // A statement that ran is the call's result even if the reset fails; that connection is dropped, not given back.
    await restore().catch(() => this.spoiled.add(client));
    return result;
  }

  /**
   * The same, as a named statement where the connection allows it: each
   * connection parses and plans it once, then only binds and runs it. For the
   * statements sent over and over (claim, completions, renewals, gathered
   * writes), whose planning cost as much as their run. A pooler in
   * transaction mode hands each statement any server connection, where the
   * name may not exist: there they go unnamed.
   */
  async queryPrepared(sql: string, params: readonly unknown[] = [], timeoutMs = this.settings.commandTimeoutMs): Promise<Row[]> {
    const bound = Math.min(timeoutMs, this.settings.commandTimeoutMs);
    if (this.settings.pooler === 'transaction') return this.query(sql, params, bound);
    if (this.closed) throw new DriverUnavailableError('the driver is closed');
    const name = this.statementName(sql);
    const send = (timeoutMs: number): Promise<Row[]> =>
      this.withClient(
        (client) =>
          this.withServerBound(client, timeoutMs, async () => {
            try {
              return (await client.query({ name, text: sql, values: params as unknown[] })).rows;
            } catch (error) {
              // pg remembers the statement as prepared on this connection, so every later call on it would fail the same
              // way: as a DriverUnavailableError the connection is dropped instead of given back.
              if (sqlState(error) === SQLSTATE_NO_SUCH_STATEMENT) throw new StatementGoneError(error);
              throw error;
            }
          }),
        timeoutMs,
      );
    const sendOnce = async (timeoutMs: number): Promise<Row[]> => {
      const deadline = Date.now() + timeoutMs;
      try {
        return await send(timeoutMs);
      } catch (error) {
        // Refused at Bind, so nothing ran: sent once more, on another connection, which prepares it again, within the
        // same bound as the first.
        const left = deadline - Date.now();
        if (error instanceof StatementGoneError && left > 0) return send(left);
        throw error;
      }
    };
    return this.sentAgainWhenAborted(bound, sendOnce);
  }

  /**
   * Runs `work` on one client, bounded as a whole: BEGIN ... COMMIT of the
   * migrations, LISTEN. The client is destroyed when `work` fails or times
   * out, given back otherwise.
   */
  async withClient<T>(work: (client: PgPoolClientLike) => Promise<T>, timeoutMs = this.settings.commandTimeoutMs): Promise<T> {
    if (this.closed) throw new DriverUnavailableError('the driver is closed');
    let client: PgPoolClientLike | undefined;
    let released = false;
    // A connection lost while the client is checked out (reset, server gone) makes pg emit 'error' on the
    // client, which the pool only listens to while the client is idle: unheard, it would crash the process.
    // The statement in flight rejects with the same error, which the caller handles.
    const onLost = (error: Error): void => this.logger.debug(`A connection in use was lost: ${describeError(error)}`);
    const release = (destroy: boolean): void => {
      if (!client || released) return;
      released = true;
      // Kept for a client that is closed: its socket may still report an error after the release.
      if (!destroy) client.removeListener('error', onLost);
      try {
        client.release(destroy ? new Error('nestjs-delay: connection dropped after a failed or timed-out call') : undefined);
      } catch {
        // already released by the pool (it ended)
      }
    };
    const run = async (): Promise<T> => {
      client = await this.pool.connect();
      client.on('error', onLost);
      if (timedOut) {
        // The call gave up while waiting for a client: this one was never used, so it goes back to the pool.
        release(false);
        throw new DriverUnavailableError('timed out');
      }
      try {
        const result = await work(client);
        release(this.spoiled.has(client));
        return result;
      } catch (error) {
        // A statement the server refused leaves its connection as good as before; anything else may not.
        release(!refusedByServer(error) || this.spoiled.has(client));
        throw error;
      }
    };
    let timedOut = false;
    let timer: NodeJS.Timeout | undefined;
    const bound = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        timedOut = true;
        // Dropping the connection makes pg fail what it still waits for, and the server cancel the statement.
        release(true);
        reject(new DriverUnavailableError(`PostgreSQL did not answer within ${timeoutMs} ms`));
      }, timeoutMs);
    });
    try {
      return await Promise.race([run(), bound]);
    } catch (error) {
      throw unavailable(error);
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * One statement inside the application's transaction, bounded. The
   * parameters are written into the SQL as literals, so the statement goes
   * by the simple query protocol, where the guard in `clock_ms` can tell a
   * transaction block from autocommit (see the migration). On timeout the
   * call rejects; the transaction is the application's, so it is left to
   * the application to roll back.
   */
  async inTransaction(transaction: DriverTransaction, sql: string, params: readonly unknown[]): Promise<Row[]> {
    if (this.closed) throw new DriverUnavailableError('the driver is closed');
    const text = inlineParameters(sql, params);
    let timer: NodeJS.Timeout | undefined;
    const bound = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new DriverUnavailableError(`PostgreSQL did not answer within ${this.settings.commandTimeoutMs} ms (in the ${transaction.adapter} transaction)`)), this.settings.commandTimeoutMs);
    });
    try {
      const rows = await Promise.race([transaction.query(text, []), bound]);
      return rows as Row[];
    } catch (error) {
      throw transactionError(transaction.adapter, error);
    } finally {
      clearTimeout(timer);
    }
  }

  /** A name per statement text (the schema is part of the text), the same on every connection. */
  private statementName(sql: string): string {
    let name = this.names.get(sql);
    if (name === undefined) {
      name = `nestjs_delay_${createHash('sha1').update(sql).digest('hex').slice(0, 20)}`;
      this.names.set(sql, name);
    }
    return name;
  }

  /** Ends the driver's own pool; the application's pool is left open. */
  async close(): Promise<void> {
    this.closed = true;
    // Ending waits for each connection to close: a black-holed one must not hold shutdown past the bound.
    if (this.ownPool) await settleWithin(this.ownPool.end(), this.settings.commandTimeoutMs, () => new Error('pool end timed out')).catch(() => undefined);
  }
}

/** A named statement the connection no longer holds (DEALLOCATE or DISCARD ran on it): the statement did not run. */
class StatementGoneError extends DriverUnavailableError {
  constructor(cause: unknown) {
    super('a statement prepared on this connection is gone (DEALLOCATE or DISCARD ran on it); the connection is dropped', cause);
  }
}

/** An error the server sent for a statement (a SQLSTATE outside the connection classes): the connection itself is fine. */
function refusedByServer(error: unknown): boolean {
  const state = sqlState(error);
  return state !== undefined && /^[0-9A-Z]{5}$/.test(state) && !isConnectionState(state);
}

/** The SQLSTATE of a pg error, if it has one. */
export function sqlState(error: unknown): string | undefined {
  const code = typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined;
  return typeof code === 'string' ? code : undefined;
}

/** Connection-level failures become DriverUnavailableError; a statement the server refused is rethrown as it is (a bug, not an outage). */
function unavailable(error: unknown): unknown {
  if (error instanceof DriverUnavailableError || error instanceof TransactionNotActiveError) return error;
  const state = sqlState(error);
  if (state !== undefined && /^[0-9A-Z]{5}$/.test(state)) {
    return UNAVAILABLE_STATES.test(state) ? new DriverUnavailableError(`PostgreSQL: ${describeError(error)}`, error) : error;
  }
  // No SQLSTATE: a socket error (ECONNREFUSED, ECONNRESET), a connect timeout, a connection that ended.
  return new DriverUnavailableError(`PostgreSQL: ${describeError(error)}`, error);
}

/**
 * What a write in the application's transaction rejects with. The transaction is over: the guard fired (autocommit),
 * it is aborted (25P02), or its client says so (TransactionNotActiveError). It is on another database: the guard
 * found another store id, or the driver's schema is not there (UnsupportedTransactionClientError). The connection
 * is lost: a SQLSTATE of the connection classes, or an error of the client's that says so (DriverUnavailableError).
 * Anything else as it is: an error the server raised for the statement (it aborted the transaction, which the caller
 * rolls back), a refusal or an error of the client's own, and this library's errors.
 */
function transactionError(adapter: string, error: unknown): unknown {
  if (error instanceof DelayError) return error;
  const state = sqlStateOf(error);
  if (state === SQLSTATE_OTHER_STORE || state === SQLSTATE_NO_SCHEMA) {
    const detail = state === SQLSTATE_OTHER_STORE ? "its schema's store id is not the driver's" : describeError(error);
    return new UnsupportedTransactionClientError(adapter, `it is connected to another database than the driver's (${detail}): the write would not be seen by the driver`, error);
  }
  if (state === SQLSTATE_NOT_IN_TRANSACTION) return new TransactionNotActiveError(adapter, 'it is not in a transaction block: committed, rolled back, or never begun', error);
  if (state === '25P02') return new TransactionNotActiveError(adapter, 'it is aborted after an earlier error', error);
  const ended = transactionEnded(error);
  if (ended !== undefined) return new TransactionNotActiveError(adapter, ended, error);
  if (state !== undefined) return isConnectionState(state) ? new DriverUnavailableError(`PostgreSQL: ${describeError(error)}`, error) : error;
  return connectionLost(error) ? new DriverUnavailableError(`PostgreSQL: ${describeError(error)}`, error) : error;
}
