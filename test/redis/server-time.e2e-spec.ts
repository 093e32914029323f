import { DelayService } from 'nestjs-delay';
import { pollUntil } from '../conformance/support/driver-fixture';
import { Probe, TOPIC } from '../conformance/support/probe';
import { redisAppSuite } from './support/redis-app-suite';
import { REAL_TIME_ON_TIME_MS } from '../support/on-time';

const HOUR = 3_600_000;

/** Everything jest can fake except Date: timers keep running in real time, only the wall clock lies. */
const ALL_BUT_DATE = [
  'hrtime',
  'nextTick',
  'performance',
  'queueMicrotask',
  'requestAnimationFrame',
  'cancelAnimationFrame',
  'requestIdleCallback',
  'cancelIdleCallback',
  'setImmediate',
  'clearImmediate',
  'setInterval',
  'clearInterval',
  'setTimeout',
  'clearTimeout',
] as const;

/**
 * The Redis driver takes every time from the Redis server (TIME), so an
 * instance whose clock is an hour off still schedules, and fires, on time.
 */
describe("Redis driver: due times come from Redis's TIME, not the process clock", () => {
  const suite = redisAppSuite();
  afterEach(() => {
    jest.useRealTimers();
  });

  async function serverTime(): Promise<number> {
    const [seconds, micros] = await suite.raw().time();
    return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
  }

  it.each([
    ['an hour fast', HOUR],
    ['an hour slow', -HOUR],
  ])('schedules and fires on Redis time while the process clock is %s', async (_label, skewMs) => {
    const app = await suite.boot({ driver: { type: 'redis', url: suite.url(), prefix: `skew${skewMs > 0 ? 'fast' : 'slow'}` }, shutdownTimeout: '1s' }, [Probe]);
    const delay = app.get(DelayService);
    const probe = app.get(Probe);

    jest.useFakeTimers({ doNotFake: [...ALL_BUT_DATE] });
    jest.setSystemTime(Date.now() + skewMs);
    const before = await serverTime();
    expect(Math.abs(Date.now() - before - skewMs)).toBeLessThan(60_000);

    const pending = await delay.schedule(TOPIC.basic, 'k', { delay: 200, payload: 'p' });
    const after = await serverTime();
    expect(pending.dueAt.getTime()).toBeGreaterThanOrEqual(before + 200);
    expect(pending.dueAt.getTime()).toBeLessThanOrEqual(after + 200);

    const moved = await delay.reschedule(TOPIC.basic, 'k', { delay: 300 });
    expect(moved?.dueAt.getTime()).toBeGreaterThanOrEqual(after + 300);
    expect(moved?.dueAt.getTime()).toBeLessThanOrEqual((await serverTime()) + 300);

    // It fires about 300 ms later in real time: the consumer's timer is on Redis time too.
    const started = performance.now();
    await pollUntil(() => probe.calls.length > 0, 'the run', 300 + REAL_TIME_ON_TIME_MS + 1_000);
    expect(performance.now() - started).toBeLessThan(300 + REAL_TIME_ON_TIME_MS);
    const [call] = probe.calls;
    expect(call.dueAt).toBe(moved?.dueAt.getTime());
    expect(call.firedAt).toBeGreaterThanOrEqual(call.dueAt);
    expect(call.firedAt).toBeLessThanOrEqual((await serverTime()) + 5);
  });
});
