import { FaultProxy } from '../../support/fault-proxy';
import { TestRedisServer } from '../../support/redis-server';

/**
 * The suite's own redis-server for a spec file, reached through a fault
 * proxy: one proxy for the file, or a fresh one per test. Registers the
 * jest hooks; `afterEach` runs first (close the apps there), so the proxy
 * and the server go after what used them. A paused server is resumed
 * before it is disposed.
 */
export function proxiedRedis(proxyPer: 'file' | 'test', afterEachTest: () => Promise<unknown> = async () => undefined): { readonly redis: TestRedisServer; readonly proxy: FaultProxy } {
  let redis: TestRedisServer | undefined;
  let proxy: FaultProxy | undefined;
  beforeAll(async () => {
    redis = await TestRedisServer.start();
    if (proxyPer === 'file') proxy = await FaultProxy.start(redis.port);
  });
  afterAll(async () => {
    await afterEachTest();
    await proxy?.close();
    redis?.resume();
    await redis?.dispose();
  });
  if (proxyPer === 'test') {
    beforeEach(async () => {
      proxy = await FaultProxy.start(started(redis).port);
    });
    afterEach(async () => {
      await afterEachTest();
      await proxy?.close();
      proxy = undefined;
    });
  }
  return {
    get redis() {
      return started(redis);
    },
    get proxy() {
      return started(proxy);
    },
  };
}

function started<T>(value: T | undefined): T {
  if (value === undefined) throw new Error('the suite redis-server or its proxy did not start');
  return value;
}
