import { INestApplication } from '@nestjs/common';
import { DelayService } from 'nestjs-delay';
import { bootDelayApp, pollUntil, sleep } from '../conformance/support/driver-fixture';
import { Probe, TOPIC } from '../conformance/support/probe';
import { TestRedisServer } from '../support/redis-server';

/** Several applications on one Redis, told apart by their key prefix, never see each other's actions. */
describe('Redis driver: several apps on one Redis with different prefixes', () => {
  let redis: TestRedisServer;
  const apps: INestApplication[] = [];

  beforeAll(async () => {
    redis = await TestRedisServer.start();
  });
  afterAll(async () => {
    await redis.dispose();
  });
  afterEach(async () => {
    for (const app of apps.splice(0)) {
      app.get(Probe).openAllGates();
      await app.close();
    }
  });

  async function boot(prefix: string, consume = true): Promise<{ delay: DelayService; probe: Probe }> {
    const app = await bootDelayApp({ driver: { type: 'redis', url: redis.url, prefix }, consume, shutdownTimeout: '1s' }, [Probe]);
    apps.push(app);
    return { delay: app.get(DelayService), probe: app.get(Probe) };
  }

  it('keeps pending, running and dead actions apart, and each app runs only its own', async () => {
    const a = await boot('shop-a');
    const b = await boot('shop-b');
    // Same prefix as A, producing only: the positive control that a shared prefix is shared.
    const aProducer = await boot('shop-a', false);

    await a.delay.schedule(TOPIC.basic, 'order-1', { delay: 150, payload: 'from a' });
    await b.delay.schedule(TOPIC.basic, 'order-1', { delay: 150, payload: 'from b' });
    await a.delay.schedule(TOPIC.basic, 'only-a', { delay: 60_000 });

    expect(await a.delay.count(TOPIC.basic)).toBe(2);
    expect(await b.delay.count(TOPIC.basic)).toBe(1);
    expect((await b.delay.list(TOPIC.basic)).items.map((action) => [action.key, action.payload])).toEqual([['order-1', 'from b']]);
    expect(await b.delay.get(TOPIC.basic, 'only-a')).toBeNull();
    expect(await b.delay.cancel(TOPIC.basic, 'only-a')).toBe(false);
    expect(await b.delay.reschedule(TOPIC.basic, 'only-a', { delay: 10 })).toBeNull();
    expect(await aProducer.delay.get(TOPIC.basic, 'only-a')).toMatchObject({ key: 'only-a', state: 'waiting' });
    expect(await aProducer.delay.count(TOPIC.basic)).toBe(2);

    await pollUntil(() => a.probe.calls.length === 1 && b.probe.calls.length === 1, 'both order-1 runs', 2_000);
    await sleep(150);
    expect(a.probe.calls.map((call) => call.payload)).toEqual(['from a']);
    expect(b.probe.calls.map((call) => call.payload)).toEqual(['from b']);
    expect(aProducer.probe.calls).toEqual([]);

    // Dead sets are per prefix too.
    b.probe.when(TOPIC.retry, 'fails', () => {
      throw new Error('b only');
    });
    await b.delay.schedule(TOPIC.retry, 'fails', { delay: 10 });
    await pollUntil(async () => (await b.delay.countDead(TOPIC.retry)) === 1, 'the b action to die', 2_000);
    expect(await a.delay.countDead(TOPIC.retry)).toBe(0);
    expect(await a.delay.redrive(TOPIC.retry, 'fails')).toBe(false);
    expect(a.probe.callsOf(TOPIC.retry)).toEqual([]);
  });
});
