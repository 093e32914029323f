import { DelayService } from 'nestjs-delay';
import { TestRedisServer } from '../support/redis-server';
import { faultApps } from './support/fault-app';

/**
 * waitForReplicas on a Redis whose replica is gone: every write waits out
 * WAIT's timeout and is refused as unconfirmed. That must not stall anything
 * else: reads, claims and acks do not share a connection with WAIT, so they
 * answer at once, and no connection is dropped as "silent".
 */
describe('faults: waitForReplicas with no replica', () => {
  const apps = faultApps();

  it('refuses unconfirmed writes with a clear error while reads answer at once', async () => {
    const redis = await TestRedisServer.start();
    try {
      const fa = await apps.boot({ type: 'redis', url: redis.url, waitForReplicas: { replicas: 1, timeout: '1500ms' } });
      const delay: DelayService = fa.delay;
      const writes = Promise.allSettled(Array.from({ length: 20 }, (_, n) => delay.schedule('fault.basic', `w${n}`, { delay: '1h' })));
      // Issued while the writes' WAITs are pending: it must not queue behind them.
      const readStarted = Date.now();
      const count = await delay.count('fault.basic');
      const readTook = Date.now() - readStarted;
      const results = await writes;
      const reasons = results.map((result) => (result.status === 'rejected' ? String((result.reason as Error).message) : 'resolved'));
      expect({
        refusedAsUnconfirmed: reasons.filter((reason) => reason.includes('replica(s) confirmed it within 1500 ms')).length,
        readAnsweredBeforeTheWaits: readTook < 1_500,
        countSeenMeanwhile: count >= 0,
      }).toEqual({ refusedAsUnconfirmed: 20, readAnsweredBeforeTheWaits: true, countSeenMeanwhile: true });
      // The writes were applied on the master (that is what "unconfirmed" means): the error says so, and count sees them.
      expect(await delay.count('fault.basic')).toBe(20);
    } finally {
      await apps.closeAll();
      await redis.dispose();
    }
  }, 30_000);
});
