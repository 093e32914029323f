import { TransactionNotActiveError } from '../errors/transaction-not-active.error';
import { UnsupportedTransactionClientError } from '../errors/unsupported-transaction-client.error';
import { DelayTransactionAdapter, SqlRows } from '../interfaces/delay-transaction.interface';
import { hasMethods, isObjectLike, rowsOf } from './client-shape';
import { toKnexPlaceholders } from './knex-placeholders';

/** What the adapter uses of a knex transaction (a function with methods, like every knex instance). */
export interface KnexTransactionLike {
  readonly isTransaction?: boolean;
  readonly client?: unknown;
  raw(sql: string, bindings: unknown[]): PromiseLike<unknown>;
  isCompleted?(): boolean;
}

/**
 * The `trx` of `knex.transaction(async (trx) => ...)` (or of `await
 * knex.transaction()`), on PostgreSQL. Statements go through `trx.raw`,
 * their `$n` placeholders rewritten as knex's `?` (see toKnexPlaceholders);
 * on pg, raw resolves pg's result, whose `rows` are returned. The knex
 * instance itself is recognised and refused: it is not a transaction.
 */
export const knexAdapter: DelayTransactionAdapter<KnexTransactionLike> = {
  name: 'knex',
  matches: (transaction: unknown): transaction is KnexTransactionLike =>
    typeof transaction === 'function' && hasMethods(transaction, 'raw', 'transaction', 'select') && isObjectLike(transaction.client),
  check(trx) {
    if (trx.isTransaction !== true) {
      throw new TransactionNotActiveError('knex', 'a knex instance outside any transaction; pass the trx of knex.transaction(async (trx) => ...)');
    }
    if (typeof trx.isCompleted === 'function' && trx.isCompleted()) throw new TransactionNotActiveError('knex', 'it is already committed or rolled back');
    const dialect = isObjectLike(trx.client) ? trx.client.dialect : undefined;
    if (typeof dialect === 'string' && dialect !== 'postgresql') throw new UnsupportedTransactionClientError('knex', `its client is "${dialect}"`);
  },
  async query(trx, sql, params): Promise<SqlRows> {
    const statement = toKnexPlaceholders(sql, params);
    return rowsOf('knex', await trx.raw(statement.sql, statement.bindings));
  },
};
