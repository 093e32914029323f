import { TransactionNotActiveError } from '../errors/transaction-not-active.error';
import { DelayTransactionAdapter, SqlRows } from '../interfaces/delay-transaction.interface';
import { hasMethods, isObjectLike, rowsOf } from './client-shape';

/** What the adapter uses of a Drizzle PostgreSQL transaction. */
export interface DrizzleTransactionLike {
  execute(query: DrizzleSqlWrapperLike): PromiseLike<unknown>;
}

/** Drizzle's SQLWrapper: `execute` asks it for its SQL, which its dialect asks for the query text and parameters. */
interface DrizzleSqlWrapperLike {
  getSQL(): { toQuery(config: unknown): { sql: string; params: unknown[] } };
}

/** Drizzle marks each of its classes with a kind under this registered symbol (what its `is()` reads). */
const ENTITY_KIND = Symbol.for('drizzle:entityKind');

/**
 * The `tx` of `db.transaction(async (tx) => ...)` on any of Drizzle's
 * PostgreSQL drivers (node-postgres, postgres.js, ...), recognised by the
 * kind Drizzle gives its classes ('PgTransaction', 'PgDatabase'). A
 * statement goes through the public `tx.execute(query)` as a query that is
 * already built: a SQLWrapper whose SQL renders as the text with its `$n`
 * placeholders and the parameters in order. Drizzle's `sql` template is not
 * used: it would have to be imported, and it numbers placeholders itself.
 * The database object (`db`) is recognised and refused: it is not a
 * transaction.
 */
export const drizzleAdapter: DelayTransactionAdapter<DrizzleTransactionLike> = {
  name: 'drizzle',
  matches: (transaction: unknown): transaction is DrizzleTransactionLike =>
    hasMethods(transaction, 'execute', 'transaction') && (hasKind(transaction, 'PgTransaction') || hasKind(transaction, 'PgDatabase')),
  check(tx) {
    if (!hasKind(tx, 'PgTransaction')) {
      throw new TransactionNotActiveError('drizzle', 'a Drizzle database outside any transaction; pass the tx of db.transaction(async (tx) => ...)');
    }
  },
  async query(tx, sql, params): Promise<SqlRows> {
    const built = { sql, params: [...params] };
    return rowsOf('drizzle', await tx.execute({ getSQL: () => ({ toQuery: () => built }) }));
  },
};

/** True when the object's class, or one it extends, has Drizzle's kind `kind`. */
function hasKind(value: object, kind: string): boolean {
  for (let proto: unknown = Object.getPrototypeOf(value); isObjectLike(proto); proto = Object.getPrototypeOf(proto)) {
    const constructor = (proto as { constructor?: unknown }).constructor;
    if (isObjectLike(constructor) && (constructor as Record<symbol, unknown>)[ENTITY_KIND] === kind) return true;
  }
  return false;
}
