import { Injectable } from '@nestjs/common';
import { DelayContext, DelayEvent, DelayService, OnDelayExpired } from 'nestjs-delay';
import { pollUntil, sleep } from '../conformance/support/driver-fixture';
import { redisAppSuite } from './support/redis-app-suite';

const SHARED = 'redis.pause.shared';
const ORDERED = 'redis.pause.ordered';

interface Run {
  readonly instance: number;
  readonly topic: string;
  readonly key: string;
  readonly dueAt: number;
  readonly startedAt: number;
}

/** Every run of every instance, in the order the handlers started. */
const runs: Run[] = [];
let instances = 0;
/** Runs of keys starting with "hold" wait for this. */
let releaseHeld: () => void = () => undefined;
let held = new Promise<void>((resolve) => (releaseHeld = resolve));

@Injectable()
class SharedWorker {
  readonly instance = ++instances;

  @OnDelayExpired(SHARED, { concurrency: 4 })
  async shared({ topic, key, dueAt }: DelayContext): Promise<void> {
    runs.push({ instance: this.instance, topic, key, dueAt: dueAt.getTime(), startedAt: Date.now() });
    if (key.startsWith('hold')) await held;
  }
}

@Injectable()
class OrderedWorker {
  @OnDelayExpired(ORDERED, { concurrency: 1 })
  ordered({ topic, key, dueAt }: DelayContext): void {
    runs.push({ instance: 0, topic, key, dueAt: dueAt.getTime(), startedAt: Date.now() });
  }
}

/**
 * Pause and resume on Redis, for every instance sharing the prefix. The
 * driver methods and the claim script's check of the paused key make these
 * pass; RedisTopicControl alone is covered by topic-control.e2e-spec.ts.
 */
describe('pause and resume (Redis driver, two instances)', () => {
  const suite = redisAppSuite();

  beforeEach(() => {
    runs.length = 0;
    held = new Promise<void>((resolve) => (releaseHeld = resolve));
  });
  afterEach(() => releaseHeld());

  it('pause stops claims on both instances within a second, lets the running handler finish, and resume runs what waited', async () => {
    const options = { driver: { type: 'redis' as const, url: suite.url(), prefix: 'pause-two' }, shutdownTimeout: 500 };
    const a = (await suite.boot(options, [SharedWorker])).get(DelayService);
    const b = (await suite.boot(options, [SharedWorker])).get(DelayService);
    const events: DelayEvent[] = [];
    a.events$.subscribe((event) => events.push(event));

    await a.schedule(SHARED, 'hold-1', { delay: 0 });
    await pollUntil(() => runs.some((run) => run.key === 'hold-1'), 'the held action to start', 3_000);
    // A steady stream due over the next 1.5 s: both instances claim some while the topic runs.
    await a.scheduleMany(SHARED, Array.from({ length: 30 }, (_, n) => ({ key: `s-${String(n).padStart(2, '0')}`, delay: 50 * n })));
    await sleep(300);
    const before = runs.length;
    expect(before).toBeGreaterThan(1);

    await b.pause(SHARED);
    const pausedAt = Date.now();
    expect(await a.isPaused(SHARED)).toBe(true);
    expect(await b.isPaused(SHARED)).toBe(true);
    await sleep(2_000);
    // Claims stopped on both instances within a second of the pause.
    expect(runs.filter((run) => run.startedAt > pausedAt + 1_000)).toEqual([]);
    const waiting = await a.list(SHARED, { limit: 1000 });
    expect(waiting.items.length).toBeGreaterThan(0);
    expect(waiting.items.every((item) => item.paused)).toBe(true);
    expect(await b.get(SHARED, waiting.items[waiting.items.length - 1].key)).toMatchObject({ paused: true });
    expect((await a.topics()).find((summary) => summary.topic === SHARED)).toMatchObject({ paused: true, running: 1 });
    const health = await a.health();
    expect(health.topics.find((topic) => topic.topic === SHARED)).toMatchObject({ paused: true, consuming: true, consumerAlive: true });
    expect(health.topics.find((topic) => topic.topic === SHARED)?.lagMs).toBeGreaterThan(500);

    // The handler that was running when the topic was paused finishes normally.
    releaseHeld();
    await pollUntil(async () => (await a.get(SHARED, 'hold-1')) === null, 'the held action to complete', 3_000);

    const stalled = runs.length;
    await sleep(300);
    expect(runs.length).toBe(stalled);
    await a.resume(SHARED);
    await pollUntil(async () => (await a.count(SHARED)) === 0, 'everything that waited to run after resume', 5_000);
    const keys = runs.map((run) => run.key);
    expect(new Set(keys).size).toBe(31);
    expect(new Set(runs.map((run) => run.instance)).size).toBe(2);
    expect(events.filter((event) => event.topic === SHARED && (event.type === 'paused' || event.type === 'resumed')).map((event) => event.type)).toEqual(['resumed']);
    expect(await a.isPaused(SHARED)).toBe(false);
  });

  it('resume runs the actions that fell due meanwhile in due order', async () => {
    const options = { driver: { type: 'redis' as const, url: suite.url(), prefix: 'pause-order', claimBatch: 1 } };
    const delay = (await suite.boot(options, [OrderedWorker])).get(DelayService);
    await delay.pause(ORDERED);
    // Scheduled out of order; due 10-200 ms from now, two on the same due time.
    const now = Date.now();
    await delay.scheduleMany(ORDERED, [
      { key: 'e', at: now + 200 },
      { key: 'b', at: now + 50 },
      { key: 'd', at: now + 150 },
      { key: 'a', at: now + 10 },
      { key: 'c2', at: now + 100 },
      { key: 'c1', at: now + 100 },
    ]);
    await sleep(600);
    expect(runs).toEqual([]);
    await delay.resume(ORDERED);
    await pollUntil(() => runs.length === 6, 'the six actions after resume', 3_000);
    expect(runs.map((run) => run.key)).toEqual(['a', 'b', 'c1', 'c2', 'd', 'e']);
  });
});
