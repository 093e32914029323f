import { Logger } from '@nestjs/common';
import { Pool } from 'pg';
import { DriverUnavailableError } from '../../errors/driver-unavailable.error';
import { PgPoolClientLike, PgPoolLike } from '../../interfaces/postgres-pool.interface';
import { describeError } from '../../utils/describe-error';
import { settleWithin } from '../../utils/settle-within';

/**
 * The transactions of transactional handlers when the application gives no
 * `transactions.run`: each on a connection of its own, BEGIN ... COMMIT
 * around the run (sent with the driver's first and last statements of the
 * run, see framed()), the `pg` client handed to the handler. A run holds its
 * connection as long as its handler runs, so they come from a pool apart
 * from the driver's (whose connections claims, renewals and outcomes need
 * at once), sized for the handlers that may run at once; on the
 * application's pool (`pool` given), from that pool. Opening, and the
 * messages with BEGIN and with COMMIT, are each bounded by
 * `commandTimeout`; the handler's own statements are not
 * (its `timeout` is). A connection is given back only after a COMMIT that
 * answered: after a failure it is destroyed, which rolls the transaction
 * back, so a handler still running after its run was given up (its
 * timeout) can neither commit a statement on its own nor write into the
 * next run that would get the same connection.
 */
export class PostgresHandlerTransactions {
  private readonly logger = new Logger(PostgresHandlerTransactions.name);
  private ownPool: Pool | undefined;
  private size = 10;

  constructor(
    private readonly connectionString: string | undefined,
    private readonly applicationPool: PgPoolLike | undefined,
    private readonly commandTimeoutMs: number,
  ) {}

  /** How many handlers may run at once in this process (the pool's size, made on first use). */
  sizeFor(handlers: number): void {
    this.size = Math.max(1, Math.min(100, handlers));
  }

  async run<T>(work: (transaction: unknown) => Promise<T>): Promise<T> {
    return this.withConnection(async (client, bound) => {
      await bound(client.query('BEGIN'), 'BEGIN');
      // If work fails, no ROLLBACK: a statement the handler still has in flight (it was given up at its timeout and
      // goes on) would run before it, and its next one after it, on its own. The connection is destroyed instead:
      // what is queued on it fails, and the server rolls the transaction back.
      const result = await work(client);
      await bound(client.query('COMMIT'), 'COMMIT');
      return result;
    });
  }

  /**
   * A transaction whose first and last statements are the driver's, in two
   * round trips instead of four: `BEGIN` and `opening` go as one message
   * (the simple query protocol runs them in order, and the transaction
   * stays open after it), then `work` runs with the client and `opening`'s
   * rows, then the statement it resolves goes as one message with `COMMIT`
   * (an error in it skips the COMMIT). `work` resolving null ends the
   * transaction with a ROLLBACK, nothing written, and the connection is
   * kept. Both SQL texts must carry no parameters (literals only). Each
   * message is bounded by `commandTimeout`; a failure destroys the
   * connection, as in run().
   */
  framed(opening: string, work: (transaction: unknown, opened: ReadonlyArray<Record<string, unknown>>) => Promise<string | null>): Promise<boolean> {
    return this.withConnection(async (client, bound) => {
      const opened = lastRows(await bound(client.query(`BEGIN;${opening}`), "BEGIN and the run's first statement"));
      const closing = await work(client, opened);
      if (closing === null) {
        await bound(client.query('ROLLBACK'), 'ROLLBACK');
        return false;
      }
      await bound(client.query(`${closing};COMMIT`), "the run's last statement and COMMIT");
      return true;
    });
  }

  /** How many connections runs may hold at once: the pool's size (the application's pool says its own). */
  get connections(): number {
    const max = (this.applicationPool as { options?: { max?: unknown } } | undefined)?.options?.max;
    return this.applicationPool ? (typeof max === 'number' && max > 0 ? max : 10) : this.size;
  }

  /**
   * A connection of the pool for `body`, with every statement of the frame bounded by `commandTimeout` (`bound`):
   * given back once `body` resolves, destroyed if it rejects.
   */
  async withConnection<T>(body: (client: PgPoolClientLike, bound: <R>(promise: Promise<R>, what: string) => Promise<R>) => Promise<T>): Promise<T> {
    const pool = this.pool();
    const bound = <R>(promise: Promise<R>, what: string): Promise<R> =>
      settleWithin(promise, this.commandTimeoutMs, () => new DriverUnavailableError(`PostgreSQL did not answer ${what} within ${this.commandTimeoutMs} ms`));
    const connecting = pool.connect();
    // A connection that arrives after the wait was given up goes back to the pool, unused.
    const client: PgPoolClientLike = await bound(connecting, 'a connection for a transactional handler').catch((error: unknown) => {
      connecting.then((late) => late.release(), () => undefined);
      throw error;
    });
    // An error on the connection while the handler runs rejects what it waits for; unheard, it would crash the process.
    const onError = (error: Error): void => this.logger.debug(`A transactional handler's connection failed: ${describeError(error)}`);
    client.on('error', onError);
    let healthy = false;
    try {
      const result = await body(client, bound);
      healthy = true;
      return result;
    } finally {
      if (healthy) client.removeListener('error', onError);
      try {
        client.release(healthy ? undefined : new Error('nestjs-delay: the connection of a transactional run that did not commit'));
      } catch {
        // released already (the pool ended)
      }
    }
  }

  async close(): Promise<void> {
    const pool = this.ownPool;
    this.ownPool = undefined;
    if (pool) await settleWithin(pool.end(), this.commandTimeoutMs, () => new Error('pool end timed out')).catch(() => undefined);
  }

  private pool(): PgPoolLike {
    if (this.applicationPool) return this.applicationPool;
    if (!this.ownPool) {
      const pool = new Pool({
        connectionString: this.connectionString,
        max: this.size,
        connectionTimeoutMillis: this.commandTimeoutMs,
        idleTimeoutMillis: 30_000,
        keepAlive: true,
        application_name: 'nestjs-delay handlers',
      });
      // Once close() let go of the pool, it has asked each connection to end, and a server that stops meanwhile ends it
      // with an error: expected, not a warning.
      pool.on('error', (error) => {
        if (this.ownPool === pool) this.logger.warn(`An idle handler connection failed: ${describeError(error)}`);
        else this.logger.debug(`A handler connection ended with an error while the pool closed: ${describeError(error)}`);
      });
      // Heard from the moment each connection is made: the pool stops listening as it hands one out, and run()
      // listens only a few promise turns later. An error the server sends in between (pg_terminate_backend, a
      // shutdown), read with the connection's last startup bytes, would be emitted to no one and end the process.
      pool.on('connect', (client) => client.on('error', (error) => this.logger.debug(`A handler connection failed: ${describeError(error)}`)));
      this.ownPool = pool;
    }
    return this.ownPool as unknown as PgPoolLike;
  }
}

/** The rows of a message's last statement: pg resolves an array of results for a message of several statements. */
function lastRows(result: unknown): ReadonlyArray<Record<string, unknown>> {
  const last: unknown = Array.isArray(result) ? result[result.length - 1] : result;
  const rows = typeof last === 'object' && last !== null ? (last as { rows?: unknown }).rows : undefined;
  return Array.isArray(rows) ? (rows as Array<Record<string, unknown>>) : [];
}
