import { isDriverInstance, ResolvedDelayOptions } from './delay.module-definition';
import { WheelDriver } from './drivers/wheel/wheel.driver';
import { DelayDriver } from './interfaces/delay-driver.interface';
import { DelayClock } from './time/clock';

/**
 * Builds the driver the options name; a driver instance given in the options
 * is used as it is. The Redis driver is loaded only when asked for, so an
 * app on the wheel never needs ioredis installed.
 */
export async function createDelayDriver(options: ResolvedDelayOptions, clock: DelayClock): Promise<DelayDriver> {
  const { driver } = options;
  if (isDriverInstance(driver)) return driver;
  if (driver.type === 'redis') {
    const { RedisDriver } = await import('./drivers/redis/redis.driver');
    const redis = new RedisDriver(driver);
    await redis.connect();
    return redis;
  }
  return new WheelDriver({ tickMs: driver.tickMs, clock });
}
