import { RedisConnection } from '../../libs/delay/src/drivers/redis/redis-connection';
import { RedisWakeSubscriber } from '../../libs/delay/src/drivers/redis/redis-wake-subscriber';
import { FaultProxy } from '../support/fault-proxy';
import { TestRedisServer } from '../support/redis-server';
import { eventually, sleep } from './support/fault-app';

/**
 * The wake subscriber's keep-alive when a PING may take longer than the
 * check period (commandTimeout 1 s, checks every 300 ms) and the subscriber
 * is cut off for a while: checks must not overlap into several new
 * subscribers, and after stop() none may be left (it would keep
 * reconnecting, and the process alive).
 */
describe('faults: wake subscriber keep-alive', () => {
  it('replaces a silent subscriber with exactly one, and leaves none after stop', async () => {
    const redis = await TestRedisServer.start();
    const proxy = await FaultProxy.start(redis.port);
    const connection = new RedisConnection({ url: proxy.url }, { commandTimeoutMs: 1_000, replicas: 0, replicasTimeoutMs: 0 });
    try {
      await connection.connect();
      const subscriber = new RedisWakeSubscriber(connection, new Map([['wake', () => undefined]]), () => undefined, 300);
      await subscriber.start();
      const atStart = proxy.subscribers;
      proxy.blackhole('subscribers');
      await sleep(2_500);
      proxy.heal();
      const settled = await eventually(() => proxy.subscribers === 1, 5_000);
      await sleep(1_000);
      const afterHeal = proxy.subscribers;
      subscriber.stop();
      const noneLeft = await eventually(() => proxy.subscribers === 0, 3_000);
      expect({ atStart, settled, afterHeal, noneLeft }).toEqual({ atStart: 1, settled: true, afterHeal: 1, noneLeft: true });
    } finally {
      await connection.close();
      await proxy.close();
      await redis.dispose();
    }
  }, 30_000);
});
