import { Propagation, TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { ConfigService } from '@nestjs/config';
import { ambientFromTransactionHost, DelayModuleOptions } from 'nestjs-delay';
import { ShopConfig } from './shop-config.interface';

/**
 * DelayModule options for this environment (DELAY_DRIVER):
 *
 * - postgres (the default): the pending actions are rows in the shop's own
 *   database (schema nestjs_delay), and every schedule or cancel made inside
 *   a `@Transactional()` method joins its transaction (the ambient one of
 *   @nestjs-cls/transactional): an order and its timer commit together;
 * - redis (REDIS_URL): actions survive restarts and run once across
 *   instances, but are written apart from the shop's transaction;
 * - wheel: in memory, lost on restart.
 *
 * Only the postgres driver is given the ambient transaction: the others
 * refuse one rather than ignore it. It is also the only one that runs the
 * orders' handlers transactional (order-handlers.providers.ts): `run` opens
 * each run's transaction through the same TransactionHost, on the shop's
 * TypeORM DataSource, so the handler's `context.transaction` is that
 * transaction's EntityManager and the repositories (which write through
 * `txHost.tx`) and DelayService calls inside it join it. RequiresNew: a run
 * is a transaction of its own, never a part of one its caller had open.
 */
export function createDelayOptions(configService: ConfigService<{ shop: ShopConfig }, true>, txHost: TransactionHost<TransactionalAdapterTypeOrm>): DelayModuleOptions {
  const { delayDriver, databaseUrl, redisUrl, redisPrefix, delayLeaseMs } = configService.get('shop', { infer: true });
  switch (delayDriver) {
    case 'postgres':
      return {
        driver: { type: 'postgres', connectionString: databaseUrl, lease: delayLeaseMs },
        transactions: {
          ambient: ambientFromTransactionHost(txHost),
          run: (work) => txHost.withTransaction(Propagation.RequiresNew, () => work(txHost.tx)),
        },
      };
    case 'redis':
      // An unset prefix is left to the library's default ('delay').
      return { driver: { type: 'redis', url: redisUrl ?? '', prefix: redisPrefix, lease: delayLeaseMs } };
    case 'wheel':
      return { driver: { type: 'wheel' } };
  }
}
