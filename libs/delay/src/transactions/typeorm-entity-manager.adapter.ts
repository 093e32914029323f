import { TransactionNotActiveError } from '../errors/transaction-not-active.error';
import { DelayTransactionAdapter } from '../interfaces/delay-transaction.interface';
import { hasMethods } from './client-shape';
import { checkQueryRunner, queryOn, TypeOrmQueryRunnerLike } from './typeorm-query-runner.adapter';

/** What the adapter uses of a TypeORM EntityManager. */
export interface TypeOrmEntityManagerLike {
  readonly queryRunner?: TypeOrmQueryRunnerLike;
}

/**
 * The EntityManager a TypeORM transaction hands out
 * (`dataSource.transaction(async (manager) => ...)`, or the `tx` of
 * @nestjs-cls/transactional's TypeORM adapter). Statements run on its query
 * runner. The data source's own manager (`dataSource.manager`, or an
 * injected EntityManager) has no query runner: each statement would commit
 * on its own, so it is refused rather than quietly writing outside the
 * caller's transaction.
 */
export const typeOrmEntityManagerAdapter: DelayTransactionAdapter<TypeOrmEntityManagerLike> = {
  name: 'typeorm',
  matches: (transaction: unknown): transaction is TypeOrmEntityManagerLike =>
    hasMethods(transaction, 'query', 'transaction', 'getRepository', 'createQueryBuilder'),
  check(manager) {
    const runner = manager.queryRunner;
    if (runner === undefined || runner === null) {
      throw new TransactionNotActiveError(
        'typeorm',
        'an EntityManager outside any transaction (the data source\'s own, without a query runner); pass the manager of dataSource.transaction(async (manager) => ...)',
      );
    }
    checkQueryRunner(runner, 'EntityManager');
  },
  query: (manager, sql, params) => queryOn(requireRunner(manager), sql, params),
};

function requireRunner(manager: TypeOrmEntityManagerLike): TypeOrmQueryRunnerLike {
  const runner = manager.queryRunner;
  if (!runner) throw new TransactionNotActiveError('typeorm', 'the EntityManager has no query runner');
  return runner;
}
