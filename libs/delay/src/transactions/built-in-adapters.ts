import { DelayTransactionAdapter } from '../interfaces/delay-transaction.interface';
import { drizzleAdapter } from './drizzle.adapter';
import { knexAdapter } from './knex.adapter';
import { kyselyAdapter } from './kysely.adapter';
import { pgClientAdapter } from './pg-client.adapter';
import { prismaAdapter } from './prisma.adapter';
import { typeOrmEntityManagerAdapter } from './typeorm-entity-manager.adapter';
import { typeOrmQueryRunnerAdapter } from './typeorm-query-runner.adapter';

/**
 * The adapters tried after the application's own, in order. Each recognises
 * its client by shape, not by import, so none of those packages is needed
 * to compile or run nestjs-delay. The most specific shapes come first: a
 * TypeORM QueryRunner also has a `query` method, as a pg client does, and
 * must not be taken for one; the pg client, the loosest shape, is last.
 */
export const BUILT_IN_TRANSACTION_ADAPTERS: ReadonlyArray<DelayTransactionAdapter> = [
  typeOrmQueryRunnerAdapter,
  typeOrmEntityManagerAdapter,
  prismaAdapter,
  kyselyAdapter,
  drizzleAdapter,
  knexAdapter,
  pgClientAdapter,
];
