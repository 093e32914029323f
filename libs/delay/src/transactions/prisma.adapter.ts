import { TransactionNotActiveError } from '../errors/transaction-not-active.error';
import { DelayTransactionAdapter, SqlRows } from '../interfaces/delay-transaction.interface';
import { hasMethods, rowsOf } from './client-shape';

/** What the adapter uses of Prisma's interactive transaction client. */
export interface PrismaTransactionLike {
  $queryRawUnsafe(sql: string, ...values: unknown[]): PromiseLike<unknown>;
}

/**
 * The `tx` of `prisma.$transaction(async (tx) => ...)`. Statements go
 * through `tx.$queryRawUnsafe(sql, ...params)`, whose placeholders on
 * PostgreSQL are `$n`, and which resolves the rows. The PrismaClient itself
 * is recognised (it has `$connect` and `$disconnect`, which a transaction
 * client lacks) and refused: it is not a transaction.
 */
export const prismaAdapter: DelayTransactionAdapter<PrismaTransactionLike> = {
  name: 'prisma',
  matches: (transaction: unknown): transaction is PrismaTransactionLike => hasMethods(transaction, '$queryRawUnsafe', '$executeRawUnsafe'),
  check(tx) {
    if (hasMethods(tx, '$connect', '$disconnect')) {
      throw new TransactionNotActiveError('prisma', 'a PrismaClient outside any transaction; pass the tx of prisma.$transaction(async (tx) => ...)');
    }
  },
  async query(tx, sql, params): Promise<SqlRows> {
    return rowsOf('prisma', await tx.$queryRawUnsafe(sql, ...params));
  },
};
