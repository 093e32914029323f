import { TransactionNotActiveError } from '../errors/transaction-not-active.error';
import { DelayTransactionAdapter, SqlRows } from '../interfaces/delay-transaction.interface';
import { hasMethods, rowsOf } from './client-shape';

/** What the adapter uses of a `pg` Client or PoolClient. */
export interface PgClientLike {
  query(text: string, values: unknown[]): Promise<unknown>;
}

/**
 * A `pg` Client or PoolClient on which the application ran BEGIN: the
 * statements go to that connection, `$n` placeholders as they are. A pg
 * Pool is recognised too, and refused: each of its statements may run on
 * another connection, outside any transaction.
 */
export const pgClientAdapter: DelayTransactionAdapter<PgClientLike> = {
  name: 'pg',
  matches: (transaction: unknown): transaction is PgClientLike =>
    hasMethods(transaction, 'query', 'connect') && (hasMethods(transaction, 'escapeLiteral') || isPool(transaction)),
  check(client) {
    if (isPool(client)) {
      throw new TransactionNotActiveError('pg', 'a Pool runs each statement on whichever connection is free, outside any transaction; pass the client of pool.connect() after BEGIN');
    }
  },
  async query(client, sql, params): Promise<SqlRows> {
    return rowsOf('pg', await client.query(sql, [...params]));
  },
};

function isPool(client: object): boolean {
  const { totalCount, idleCount } = client as { totalCount?: unknown; idleCount?: unknown };
  return typeof totalCount === 'number' && typeof idleCount === 'number';
}
