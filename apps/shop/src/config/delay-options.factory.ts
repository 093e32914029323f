import { ConfigService } from '@nestjs/config';
import { DelayModuleOptions } from 'nestjs-delay';
import { ShopConfig } from './shop-config.interface';

/**
 * DelayModule options for this environment: the in-memory wheel by default
 * (zero setup, actions lost on restart), Redis when REDIS_URL is set
 * (actions survive restarts and run once across instances).
 */
export function createDelayOptions(configService: ConfigService<{ shop: ShopConfig }, true>): DelayModuleOptions {
  const { redisUrl, redisPrefix } = configService.get('shop', { infer: true });
  // An unset prefix is left to the library's default ('delay').
  return { driver: redisUrl === undefined ? { type: 'wheel' } : { type: 'redis', url: redisUrl, prefix: redisPrefix } };
}
