import { isDriverInstance, ResolvedDelayOptions } from './delay.module-definition';
import { WheelDriver } from './drivers/wheel/wheel.driver';
import { MissingPeerDependencyError } from './errors/missing-peer-dependency.error';
import { DelayDriver } from './interfaces/delay-driver.interface';
import { DelayClock } from './time/clock';

/** The ioredis majors the Redis driver is built and tested against (the package's peer range). */
const IOREDIS_RANGE = 'version 5 or 6';
/** The node-postgres majors the postgres driver is built and tested against. */
const PG_RANGE = 'version 8';

/**
 * Builds the driver the options name; a driver instance given in the options
 * is used as it is. The Redis driver is loaded only when asked for, so an
 * app on the wheel never needs ioredis installed; an app that asks for it
 * without ioredis gets a MissingPeerDependencyError instead of a bare
 * "Cannot find module".
 */
export async function createDelayDriver(options: ResolvedDelayOptions, clock: DelayClock): Promise<DelayDriver> {
  const { driver } = options;
  if (isDriverInstance(driver)) return driver;
  if (driver.type === 'redis') {
    const { RedisDriver } = await loadOptionalPeer('ioredis', 'The Redis driver', IOREDIS_RANGE, () => import('./drivers/redis/redis.driver'));
    const redis = new RedisDriver(driver);
    await redis.connect();
    return redis;
  }
  if (driver.type === 'postgres') {
    const { PostgresDriver } = await loadOptionalPeer('pg', 'The PostgreSQL driver', PG_RANGE, () => import('./drivers/postgres/postgres.driver'));
    const postgres = new PostgresDriver(driver);
    await postgres.connect();
    return postgres;
  }
  return new WheelDriver({ tickMs: driver.tickMs, clock });
}

/**
 * Runs `load` (an import of code that depends on the optional peer
 * `packageName`) and turns the module-not-found error for that very package
 * into a MissingPeerDependencyError. Any other failure, including a missing
 * dependency of the peer itself, is rethrown untouched: it is a broken
 * install, not a missing peer, and its own message says more.
 */
export async function loadOptionalPeer<T>(packageName: string, neededFor: string, versionRange: string, load: () => Promise<T>): Promise<T> {
  try {
    return await load();
  } catch (error) {
    if (isModuleNotFound(error, packageName)) throw new MissingPeerDependencyError(packageName, neededFor, versionRange, error);
    throw error;
  }
}

function isModuleNotFound(error: unknown, packageName: string): boolean {
  // Duck-typed, not `instanceof Error`: a loader may build its errors in another realm (Jest's resolver does).
  if (typeof error !== 'object' || error === null) return false;
  const { code, message } = error as { code?: unknown; message?: unknown };
  if ((code !== 'MODULE_NOT_FOUND' && code !== 'ERR_MODULE_NOT_FOUND') || typeof message !== 'string') return false;
  // Node says "Cannot find module 'ioredis'" (CommonJS) or "Cannot find package 'ioredis'" (ES modules).
  return message.split('\n', 1)[0].includes(`'${packageName}'`);
}
