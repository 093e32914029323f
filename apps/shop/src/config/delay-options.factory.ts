import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { ConfigService } from '@nestjs/config';
import { DelayModuleOptions } from 'nestjs-delay';
import { ShopConfig } from './shop-config.interface';

/**
 * DelayModule options for this environment (DELAY_DRIVER): the in-memory
 * wheel (actions lost on restart) or Redis (actions survive restarts and
 * run once across instances; REDIS_URL). Neither can join the shop's
 * database transactions, so no ambient transaction is given to them.
 */
export function createDelayOptions(configService: ConfigService<{ shop: ShopConfig }, true>, txHost: TransactionHost<TransactionalAdapterTypeOrm>): DelayModuleOptions {
  const { delayDriver, redisUrl, redisPrefix } = configService.get('shop', { infer: true });
  void txHost;
  if (delayDriver === 'redis' && redisUrl !== undefined) {
    // An unset prefix is left to the library's default ('delay').
    return { driver: { type: 'redis', url: redisUrl, prefix: redisPrefix } };
  }
  if (delayDriver === 'postgres') throw new Error('DELAY_DRIVER=postgres: this build of nestjs-delay has no postgres driver yet');
  return { driver: { type: 'wheel' } };
}
