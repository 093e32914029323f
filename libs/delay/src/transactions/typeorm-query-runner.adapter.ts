import { TransactionNotActiveError } from '../errors/transaction-not-active.error';
import { UnsupportedTransactionClientError } from '../errors/unsupported-transaction-client.error';
import { DelayTransactionAdapter, SqlRows } from '../interfaces/delay-transaction.interface';
import { hasMethods, isObjectLike, rowsOf } from './client-shape';

/** What the adapters use of a TypeORM QueryRunner. */
export interface TypeOrmQueryRunnerLike {
  readonly isTransactionActive: boolean;
  readonly isReleased?: boolean;
  query(sql: string, parameters: unknown[], useStructuredResult: true): Promise<unknown>;
}

/**
 * A TypeORM QueryRunner after `startTransaction()`. Statements go through
 * its `query` with `$n` placeholders (the postgres driver's own), asking for
 * the structured result: without it, TypeORM resolves an UPDATE or DELETE
 * as `[rows, count]` instead of the rows.
 */
export const typeOrmQueryRunnerAdapter: DelayTransactionAdapter<TypeOrmQueryRunnerLike> = {
  name: 'typeorm',
  matches: (transaction: unknown): transaction is TypeOrmQueryRunnerLike =>
    hasMethods(transaction, 'query', 'startTransaction', 'commitTransaction', 'rollbackTransaction', 'release') &&
    typeof transaction.isTransactionActive === 'boolean',
  check: (runner) => checkQueryRunner(runner, 'QueryRunner'),
  query: (runner, sql, params) => queryOn(runner, sql, params),
};

/** Refuses a query runner that cannot take the write: released, without a transaction, or on another database. */
export function checkQueryRunner(runner: TypeOrmQueryRunnerLike, holder: string): void {
  if (runner.isReleased === true) throw new TransactionNotActiveError('typeorm', `the ${holder}'s query runner is released`);
  if (!runner.isTransactionActive) {
    throw new TransactionNotActiveError('typeorm', `the ${holder}'s query runner has no transaction started; each statement would commit on its own`);
  }
  const type = databaseType(runner);
  if (type !== undefined && type !== 'postgres') throw new UnsupportedTransactionClientError('typeorm', `its data source is of type "${type}"`);
}

export async function queryOn(runner: TypeOrmQueryRunnerLike, sql: string, params: readonly unknown[]): Promise<SqlRows> {
  const result = await runner.query(sql, [...params], true);
  if (isObjectLike(result) && Array.isArray(result.records)) return result.records as SqlRows;
  // A TypeORM without structured results: an UPDATE or DELETE resolves [rows, affected].
  if (Array.isArray(result) && result.length === 2 && Array.isArray(result[0]) && typeof result[1] === 'number') return result[0] as SqlRows;
  return rowsOf('typeorm', result);
}

/** The data source's `type` ('postgres', 'mysql', ...): `dataSource` since TypeORM 1, `connection` before. */
function databaseType(holder: object): string | undefined {
  const { dataSource, connection } = holder as { dataSource?: unknown; connection?: unknown };
  const source = isObjectLike(dataSource) ? dataSource : connection;
  if (!isObjectLike(source) || !isObjectLike(source.options)) return undefined;
  const { type } = source.options;
  return typeof type === 'string' ? type : undefined;
}
