import { INestApplication } from '@nestjs/common';
import { DelayService, DriverUnavailableError } from 'nestjs-delay';
import { bootDelayApp, pollUntil, sleep } from '../conformance/support/driver-fixture';
import { Probe, TOPIC } from '../conformance/support/probe';
import { TestRedisServer } from '../support/redis-server';

/** Redis goes away and comes back: calls fail fast and typed, nothing is half-written, consuming resumes unaided. */
describe('Redis driver: losing the connection', () => {
  let redis: TestRedisServer;
  let app: INestApplication | undefined;

  beforeAll(async () => {
    redis = await TestRedisServer.start({ appendonly: true });
  });
  afterAll(async () => {
    await redis.dispose();
  });
  afterEach(async () => {
    app?.get(Probe).openAllGates();
    await app?.close();
    app = undefined;
  });

  it('rejects with DriverUnavailableError within 2 s while Redis is down, then resumes on its own once it is back', async () => {
    app = await bootDelayApp({ driver: { type: 'redis', url: redis.url, prefix: 'loss' }, shutdownTimeout: '1s' }, [Probe]);
    const delay = app.get(DelayService);
    const probe = app.get(Probe);
    const survivor = await delay.schedule(TOPIC.basic, 'survivor', { delay: 600, payload: { v: 1 } });

    await redis.kill();
    expect(probe.calls).toEqual([]);

    const calls: Array<[string, () => Promise<unknown>]> = [
      ['schedule', () => delay.schedule(TOPIC.basic, 'during-outage', { delay: 10, payload: 'lost' })],
      ['schedule replace', () => delay.schedule(TOPIC.basic, 'survivor', { delay: 10, payload: 'replaced' })],
      ['cancel', () => delay.cancel(TOPIC.basic, 'survivor')],
      ['reschedule', () => delay.reschedule(TOPIC.basic, 'survivor', { delay: 60_000 })],
      ['get', () => delay.get(TOPIC.basic, 'survivor')],
      ['list', () => delay.list(TOPIC.basic)],
      ['count', () => delay.count(TOPIC.basic)],
    ];
    for (const [name, call] of calls) {
      const started = performance.now();
      const outcome = await call().then(
        () => 'resolved',
        (error: unknown) => error,
      );
      const elapsed = performance.now() - started;
      expect({ call: name, unavailable: outcome instanceof DriverUnavailableError, code: (outcome as { code?: unknown }).code, under2s: elapsed < 2_000 }).toEqual({
        call: name,
        unavailable: true,
        code: 'ERR_DELAY_DRIVER_UNAVAILABLE',
        under2s: true,
      });
    }

    // The survivor falls due while Redis is down; it must run once Redis is back, without any help.
    await sleep(survivor.dueAt.getTime() + 100 - Date.now());
    await redis.boot();
    await pollUntil(() => probe.calls.length > 0, 'the survivor to run after the restart', 5_000);
    await pollUntil(async () => (await delay.count(TOPIC.basic).catch(() => -1)) === 0, 'its ack', 2_000);

    expect(probe.calls.map((call) => [call.key, call.payload, call.attempt, call.dueAt])).toEqual([['survivor', { v: 1 }, 1, survivor.dueAt.getTime()]]);
    // Nothing the failed calls tried was written, not even in part.
    expect(await delay.get(TOPIC.basic, 'during-outage')).toBeNull();

    // The wake channel works again too: a fresh short action fires promptly.
    await delay.schedule(TOPIC.basic, 'after', { delay: 100, payload: 'fresh' });
    await pollUntil(() => probe.calls.length === 2, 'an action scheduled after the restart', 2_000);
    expect(probe.calls[1]).toMatchObject({ key: 'after', payload: 'fresh', attempt: 1 });
  });
});
