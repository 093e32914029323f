import { Injectable } from '@nestjs/common';
import IORedis from 'ioredis';
import { DelayContext, DelayService, OnDelayExpired } from 'nestjs-delay';
import { RedisConnection } from '../../libs/delay/src/drivers/redis/redis-connection';
import { RedisTopicControl } from '../../libs/delay/src/drivers/redis/redis-topic-control';
import { topicKeys } from '../../libs/delay/src/drivers/redis/redis-keys';
import { pollUntil, sleep } from '../conformance/support/driver-fixture';
import { TestRedisServer } from '../support/redis-server';
import { redisAppSuite } from './support/redis-app-suite';

const CONSUMED = 'control.consumed';

@Injectable()
class Runner {
  readonly runs: Array<{ key: string; dueAt: number; firedAt: number; attempt: number }> = [];

  @OnDelayExpired(CONSUMED, { attempts: 1 })
  run({ key, dueAt, firedAt, attempt }: DelayContext): void {
    this.runs.push({ key, dueAt: dueAt.getTime(), firedAt: firedAt.getTime(), attempt });
    if (key.startsWith('fail')) throw new Error('failed on purpose');
  }
}

/**
 * The Redis topic operations on their own (RedisTopicControl, the scripts
 * behind it), against apps that share a prefix: the listing across
 * instances, run-now, the paused mark and its wake, the health snapshot.
 */
describe('Redis topic control', () => {
  const suite = redisAppSuite();
  const connections: RedisConnection[] = [];

  afterEach(async () => {
    for (const connection of connections.splice(0)) await connection.close();
  });

  async function control(prefix: string, url = suite.url()): Promise<RedisTopicControl> {
    const connection = new RedisConnection({ url }, { commandTimeoutMs: 2_000, replicas: 0, replicasTimeoutMs: 0 });
    connections.push(connection);
    await connection.connect();
    return new RedisTopicControl(connection, prefix);
  }

  it('lists the topics of every instance under the prefix, with counts, and none of another prefix', async () => {
    const producer = (await suite.boot({ driver: { type: 'redis', url: suite.url(), prefix: 'tc-list' }, consume: false }, [])).get(DelayService);
    const consumer = (await suite.boot({ driver: { type: 'redis', url: suite.url(), prefix: 'tc-list' } }, [Runner])).get(DelayService);
    const elsewhere = (await suite.boot({ driver: { type: 'redis', url: suite.url(), prefix: 'tc-list2' }, consume: false }, [])).get(DelayService);
    await producer.scheduleMany('control.a', [
      { key: 'a1', delay: '1h' },
      { key: 'a2', delay: '2h' },
    ]);
    await consumer.collect('control.b', 'batch', { n: 1 }, { window: '1h' });
    await consumer.schedule(CONSUMED, 'fail-1', { delay: 0 });
    await elsewhere.schedule('control.elsewhere', 'e1', { delay: '1h' });
    await pollUntil(async () => (await consumer.countDead(CONSUMED)) === 1, 'the failing action to die', 3_000);
    const tc = await control('tc-list');
    await tc.pause('control.paused-only');

    expect(await tc.topics()).toEqual(
      expect.arrayContaining([
        { topic: 'control.a', waiting: 2, running: 0, dead: 0, paused: false },
        { topic: 'control.b', waiting: 1, running: 0, dead: 0, paused: false },
        { topic: CONSUMED, waiting: 0, running: 0, dead: 1, paused: false },
        { topic: 'control.paused-only', waiting: 0, running: 0, dead: 0, paused: true },
      ]),
    );
    expect((await tc.topics()).map((summary) => summary.topic).sort()).toEqual(['control.a', 'control.b', CONSUMED, 'control.paused-only'].sort());
    // Emptied topics drop out.
    await producer.cancel('control.a', 'a1');
    await producer.cancel('control.a', 'a2');
    await tc.resume('control.paused-only');
    expect((await tc.topics()).map((summary) => summary.topic).sort()).toEqual(['control.b', CONSUMED].sort());
  });

  it('runNow makes a waiting action due now, and a consumer on another connection runs it at once', async () => {
    const app = await suite.boot({ driver: { type: 'redis', url: suite.url(), prefix: 'tc-run' } }, [Runner]);
    const delay = app.get(DelayService);
    const runner = app.get(Runner);
    await delay.schedule(CONSUMED, 'n1', { delay: '1h', payload: { order: 3 } });
    const tc = await control('tc-run');

    const before = Date.now();
    expect(await tc.runNow(topicKeys('tc-run', CONSUMED), 'n1')).toBe(true);
    await pollUntil(() => runner.runs.length === 1, 'the run-now action to run', 3_000);
    expect(runner.runs[0].key).toBe('n1');
    expect(runner.runs[0].attempt).toBe(1);
    // Due at the moment of runNow, by Redis's clock (the same machine's here), not in an hour.
    expect(runner.runs[0].dueAt).toBeGreaterThanOrEqual(before - 1_000);
    expect(runner.runs[0].dueAt).toBeLessThan(before + 60_000);
    expect(await tc.runNow(topicKeys('tc-run', CONSUMED), 'n1')).toBe(false);
    expect(await tc.runNow(topicKeys('tc-run', CONSUMED), 'nobody')).toBe(false);
  });

  it('runNow on an open batch makes it due; payload and items are kept', async () => {
    const producer = (await suite.boot({ driver: { type: 'redis', url: suite.url(), prefix: 'tc-batch' }, consume: false }, [])).get(DelayService);
    await producer.collect('control.batch', 'b', { n: 1 }, { window: '1h' });
    await producer.collect('control.batch', 'b', { n: 2 }, { window: '1h' });
    const tc = await control('tc-batch');
    const before = Date.now();
    expect(await tc.runNow(topicKeys('tc-batch', 'control.batch'), 'b')).toBe(true);
    const pending = await producer.get('control.batch', 'b');
    expect(pending?.items).toEqual([{ n: 1 }, { n: 2 }]);
    expect(pending?.dueAt.getTime()).toBeLessThan(before + 60_000);
  });

  it('pause sets the mark once; resume removes it and wakes the topic channel', async () => {
    const tc = await control('tc-pause');
    const raw: IORedis = suite.raw();
    const subscriber = raw.duplicate();
    const wakes: string[] = [];
    try {
      await subscriber.subscribe('tc-pause:{control.p}:wake');
      subscriber.on('message', (_channel: string, message: string) => wakes.push(message));

      expect(await tc.isPaused('control.p')).toBe(false);
      expect(await tc.pause('control.p')).toBe(true);
      expect(await tc.pause('control.p')).toBe(false);
      expect(await tc.isPaused('control.p')).toBe(true);
      expect(await raw.exists(topicKeys('tc-pause', 'control.p').paused)).toBe(1);
      expect(wakes).toEqual([]);

      expect(await tc.resume('control.p')).toBe(true);
      expect(await tc.resume('control.p')).toBe(false);
      expect(await tc.isPaused('control.p')).toBe(false);
      await pollUntil(() => wakes.length === 1, 'the wake of resume', 2_000);
      expect(Math.abs(Number(wakes[0]) - Date.now())).toBeLessThan(60_000);
    } finally {
      subscriber.disconnect();
    }
  });

  it('health: up with a round trip, the lag of a topic with unclaimed due actions, and down while Redis is stopped', async () => {
    const server = await TestRedisServer.start();
    try {
      const producer = (await suite.boot({ driver: { type: 'redis', url: server.url, prefix: 'tc-health' }, consume: false }, [])).get(DelayService);
      await producer.schedule('control.lagging', 'l1', { delay: 0 });
      await producer.schedule('control.lagging', 'l2', { delay: 100 });
      const tc = await control('tc-health', server.url);
      await sleep(300);

      const up = await tc.health([
        { topic: 'control.lagging', alive: true },
        { topic: 'control.empty', alive: false },
      ]);
      expect(up.up).toBe(true);
      expect(up.roundTripMs).toBeGreaterThanOrEqual(0);
      expect(up.roundTripMs).toBeLessThan(2_000);
      const lagging = up.topics.find((topic) => topic.topic === 'control.lagging');
      expect(lagging).toMatchObject({ consuming: true, consumerAlive: true, paused: false });
      // l1 fell due at schedule time: it has waited at least the 300 ms slept since.
      expect(lagging?.lagMs).toBeGreaterThanOrEqual(250);
      expect(lagging?.lagMs).toBeLessThan(60_000);
      expect(up.topics.find((topic) => topic.topic === 'control.empty')).toEqual({ topic: 'control.empty', consuming: true, consumerAlive: false, lagMs: 0, paused: false });

      await server.stop();
      const started = performance.now();
      const down = await tc.health([{ topic: 'control.lagging', alive: true }], 1_000);
      expect(performance.now() - started).toBeLessThan(5_000);
      expect(down.up).toBe(false);
      expect(down.topics).toEqual([{ topic: 'control.lagging', consuming: true, consumerAlive: false, lagMs: 0, paused: false }]);

      await server.boot();
      await pollUntil(async () => (await tc.health([], 1_000)).up, 'health to report up again', 10_000, 100);
    } finally {
      await server.dispose();
    }
  });
});
