import { INestApplication, Provider } from '@nestjs/common';
import IORedis from 'ioredis';
import { DelayModuleOptions } from 'nestjs-delay';
import { bootDelayApp } from '../../conformance/support/driver-fixture';
import { TestRedisServer } from '../../support/redis-server';

/**
 * One redis-server and one raw client for a spec file, and the Nest apps a
 * test boots, closed after that test even when it fails.
 */
export function redisAppSuite(): {
  url(): string;
  raw(): IORedis;
  boot(options: DelayModuleOptions, providers: Provider[]): Promise<INestApplication>;
} {
  let redis: TestRedisServer | undefined;
  let raw: IORedis | undefined;
  const apps: INestApplication[] = [];
  beforeAll(async () => {
    redis = await TestRedisServer.start();
    raw = new IORedis(redis.url);
  });
  afterEach(async () => {
    for (const app of apps.splice(0)) await app.close();
  });
  afterAll(async () => {
    await raw?.quit();
    await redis?.dispose();
  });
  const started = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error('the suite redis-server did not start');
    return value;
  };
  return {
    url: () => started(redis).url,
    raw: () => started(raw),
    boot: async (options, providers) => {
      const app = await bootDelayApp(options, providers);
      apps.push(app);
      return app;
    },
  };
}
