import { TransactionNotActiveError } from '../../errors/transaction-not-active.error';
import { PgPoolClientLike } from '../../interfaces/postgres-pool.interface';

type Query = (...args: unknown[]) => unknown;

/**
 * What one run of a group (see PostgresRunGroups) hands its handler as its
 * transaction: the group's connection, seen through a proxy that
 * - notes a statement that failed (the handler may have caught it: the
 *   savepoint is then aborted, and the run must not count as done) and
 *   statements still unanswered when the handler returned;
 * - refuses BEGIN, COMMIT, ROLLBACK and the like: the transaction is the
 *   driver's, shared with other runs, and ends with their completions;
 * - refuses every statement once the run is over (closed): a handler still
 *   going after its timeout, or a timer it left, cannot write into the
 *   next run's part of the transaction. What it had sent before is queued
 *   on the connection ahead of the group's next message, so it lands in its
 *   own run's part.
 * The statements go to the connection in the order they are called (the
 * `pg` client queues them).
 */
export class PostgresMemberClient {
  /** The proxy the handler gets. */
  readonly client: PgPoolClientLike;
  /** The first statement of the run that failed, if one did. */
  failure: unknown;
  /** A statement was sent in a way whose outcome is not seen here (a callback, a cursor), or had not answered when looked at: check the savepoint. */
  private unseen = 0;
  private pending = 0;
  private closed = false;

  constructor(private readonly connection: PgPoolClientLike) {
    const query: Query = (...args) => this.query(args);
    this.client = new Proxy(connection, {
      get: (target, property) => {
        if (property === 'query') return query;
        if (property === 'release') return () => {
          throw new TransactionNotActiveError('pg', "a transactional run's connection is the driver's: it is given back when the run's transaction ends");
        };
        const value: unknown = Reflect.get(target, property, target);
        return typeof value === 'function' ? (value as Query).bind(target) : value;
      },
    });
  }

  /** Whether the run's statements all answered without an error: its savepoint can be kept as it is. */
  get clean(): boolean {
    return this.failure === undefined && this.pending === 0 && this.unseen === 0;
  }

  /** No more statements: the run is over. */
  close(): void {
    this.closed = true;
  }

  private query(args: unknown[]): unknown {
    const refusal = this.closed
      ? "the run is over: its transaction is not this statement's to write into"
      : endsTransaction(args[0])
        ? "the run's transaction is begun and committed by nestjs-delay with the run's completion: a handler does not send BEGIN, COMMIT or ROLLBACK itself (a SAVEPOINT of its own, and ROLLBACK TO it, are fine)"
        : undefined;
    if (refusal !== undefined) {
      const error = new TransactionNotActiveError('pg', refusal);
      if (typeof args[args.length - 1] === 'function') {
        (args[args.length - 1] as (error: Error) => void)(error);
        return undefined;
      }
      return Promise.reject(error);
    }
    const result = (this.connection.query as unknown as Query)(...args);
    if (result instanceof Promise) {
      this.watch(result);
      return result;
    }
    this.unseen++;
    return result;
  }

  private watch(statement: Promise<unknown>): void {
    this.pending++;
    statement.then(
      () => this.pending--,
      (error: unknown) => {
        this.pending--;
        if (this.failure === undefined) this.failure = error;
      },
    );
  }
}

/** Statements that would end or begin the run's transaction behind the driver's back (ROLLBACK TO SAVEPOINT is not one). */
const TRANSACTION_CONTROL = /^\s*(BEGIN|START\s+TRANSACTION|COMMIT|END|ABORT|PREPARE\s+TRANSACTION|COMMIT\s+PREPARED|ROLLBACK(?!\s+(TO|PREPARED)\b))\b/i;

function endsTransaction(statement: unknown): boolean {
  const text = typeof statement === 'string' ? statement : typeof statement === 'object' && statement !== null ? (statement as { text?: unknown }).text : undefined;
  return typeof text === 'string' && TRANSACTION_CONTROL.test(text);
}
