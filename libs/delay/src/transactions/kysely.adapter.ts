import { TransactionNotActiveError } from '../errors/transaction-not-active.error';
import { DelayTransactionAdapter, SqlRows } from '../interfaces/delay-transaction.interface';
import { hasMethods, rowsOf } from './client-shape';

/** What the adapter uses of a Kysely Transaction. */
export interface KyselyTransactionLike {
  readonly isTransaction: boolean;
  readonly isCommitted?: boolean;
  readonly isRolledBack?: boolean;
  executeQuery(query: KyselyCompiledQueryLike): Promise<unknown>;
}

/** The fields of Kysely's CompiledQuery that its executor reads. */
interface KyselyCompiledQueryLike {
  readonly sql: string;
  readonly parameters: readonly unknown[];
  readonly query: { readonly kind: 'RawNode'; readonly sqlFragments: readonly string[]; readonly parameters: readonly unknown[] };
  readonly queryId: { readonly queryId: string };
}

let queries = 0;

/**
 * The `trx` of `db.transaction().execute(async (trx) => ...)` or of
 * `db.startTransaction().execute()`. Statements go through
 * `trx.executeQuery` as a raw compiled query, built here with the fields
 * `CompiledQuery.raw(sql, parameters)` gives (so kysely need not be
 * imported); on its postgres dialect, `$n` placeholders are its own. The
 * Kysely instance itself is recognised and refused: it is not a transaction.
 */
export const kyselyAdapter: DelayTransactionAdapter<KyselyTransactionLike> = {
  name: 'kysely',
  matches: (transaction: unknown): transaction is KyselyTransactionLike =>
    hasMethods(transaction, 'executeQuery', 'selectFrom', 'insertInto') && typeof transaction.isTransaction === 'boolean',
  check(trx) {
    if (!trx.isTransaction) {
      throw new TransactionNotActiveError('kysely', 'a Kysely instance outside any transaction; pass the trx of db.transaction().execute(async (trx) => ...)');
    }
    if (trx.isCommitted === true || trx.isRolledBack === true) {
      throw new TransactionNotActiveError('kysely', `it is already ${trx.isCommitted === true ? 'committed' : 'rolled back'}`);
    }
  },
  async query(trx, sql, params): Promise<SqlRows> {
    const parameters = Object.freeze([...params]);
    const compiled: KyselyCompiledQueryLike = {
      sql,
      parameters,
      query: { kind: 'RawNode', sqlFragments: [sql], parameters: [] },
      queryId: { queryId: `nestjs-delay-${(queries = (queries + 1) % Number.MAX_SAFE_INTEGER)}` },
    };
    return rowsOf('kysely', await trx.executeQuery(compiled));
  },
};
