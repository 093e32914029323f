import { Injectable } from '@nestjs/common';
import { ActionKindConflictError, DelayContext, DelayService, OnDelayExpired, PendingAction } from 'nestjs-delay';
import { shardOf } from '../../libs/delay/src/drivers/redis/redis-shard-hash';
import { layoutRegistryKey, topicKeys } from '../../libs/delay/src/drivers/redis/redis-keys';
import { pollUntil, sleep } from '../conformance/support/driver-fixture';
import { redisAppSuite } from './support/redis-app-suite';

const FAIR = 'shard.fair';
const MOVE = 'shard.move';
const GONE = 'shard.gone';

interface Run {
  readonly topic: string;
  readonly key: string;
  readonly payload: unknown;
  readonly dueAt: number;
  readonly at: number;
}

/** Records every run; the fair topic's handler holds its slot a little, with 2 slots for the whole topic. */
@Injectable()
class Recorder {
  readonly runs: Run[] = [];
  running = 0;
  mostAtOnce = 0;

  @OnDelayExpired(FAIR, { concurrency: 2 })
  async fair({ topic, key, payload, dueAt }: DelayContext): Promise<void> {
    this.running++;
    this.mostAtOnce = Math.max(this.mostAtOnce, this.running);
    this.runs.push({ topic, key, payload, dueAt: dueAt.getTime(), at: Date.now() });
    await sleep(5);
    this.running--;
  }

  @OnDelayExpired(MOVE)
  move({ topic, key, payload, items, dueAt }: DelayContext): void {
    this.runs.push({ topic, key, payload: items ?? payload, dueAt: dueAt.getTime(), at: Date.now() });
  }

  @OnDelayExpired(GONE)
  gone({ topic, key, payload, dueAt }: DelayContext): void {
    this.runs.push({ topic, key, payload, dueAt: dueAt.getTime(), at: Date.now() });
  }

  of(topic: string, key?: string): Run[] {
    return this.runs.filter((run) => run.topic === topic && (key === undefined || run.key === key));
  }
}

/** Redis orders members with equal scores by their bytes. */
function byDueThenKey(a: PendingAction, b: PendingAction): number {
  return a.dueAt.getTime() - b.dueAt.getTime() || Buffer.compare(Buffer.from(a.key), Buffer.from(b.key));
}

/**
 * A topic spread over several shards on one Redis (the Cluster runs the
 * conformance suite with 8 shards): where keys land, merged reads, fair
 * claiming across shards, and changing a topic's shard count while actions
 * are pending.
 */
describe('Redis driver: topics spread over shards', () => {
  const suite = redisAppSuite();
  // Real time on a machine that may be busy: generous bounds, the assertions are about what happened.
  jest.setTimeout(30_000);

  it('puts each key in the shard its hash names; count, topics and every page read as one topic in the documented order', async () => {
    const prefix = 'sh-list';
    const app = await suite.boot({ driver: { type: 'redis', url: suite.url(), prefix, shards: 8 }, consume: false }, []);
    const delay = app.get(DelayService);
    const base = Date.now() + 3_600_000;
    const keys = Array.from({ length: 200 }, (_, n) => `order:${n}`);
    // Groups of keys share a due time, so the key order inside a due time is checked too.
    await delay.scheduleMany('shard.list', keys.map((key, n) => ({ key, at: base + (n % 23) * 1_000, payload: { n } })));

    const where = suite.raw().pipeline();
    for (const key of keys) where.hexists(topicKeys(prefix, 'shard.list', shardOf(key, 8), 8).env, key);
    expect((await where.exec())?.map(([, found]) => found)).toEqual(keys.map(() => 1));
    const tags = new Set<string>();
    let cursor = '0';
    do {
      const [next, found] = await suite.raw().scan(cursor, 'MATCH', `${prefix}:{shard.list*}:env`, 'COUNT', 1000);
      cursor = next;
      for (const key of found) tags.add(key);
    } while (cursor !== '0');
    expect(tags.size).toBe(8);

    expect(await delay.count('shard.list')).toBe(200);
    expect(await delay.topics()).toEqual([{ topic: 'shard.list', waiting: 200, running: 0, dead: 0, paused: false }]);
    const whole = await delay.list('shard.list', { limit: 1000 });
    expect(whole.items.map((action) => action.key)).toEqual([...whole.items].sort(byDueThenKey).map((action) => action.key));
    expect(new Set(whole.items.map((action) => action.key))).toEqual(new Set(keys));
    const paged: string[] = [];
    for (let offset = 0; offset < 200; offset += 37) paged.push(...(await delay.list('shard.list', { offset, limit: 37 })).items.map((action) => action.key));
    expect(paged).toEqual(whole.items.map((action) => action.key));
  });

  it('claims from every shard in turn: with 2 handler slots for the topic, no shard waits behind another', async () => {
    const prefix = 'sh-fair';
    const producer = (await suite.boot({ driver: { type: 'redis', url: suite.url(), prefix, shards: 8 }, consume: false }, [])).get(DelayService);
    const at = Date.now() + 1_000;
    const keys = Array.from({ length: 160 }, (_, n) => `k${n}`);
    const perShard = new Array<number>(8).fill(0);
    for (const key of keys) perShard[shardOf(key, 8)]++;
    expect(Math.min(...perShard)).toBeGreaterThan(5);
    await producer.scheduleMany(FAIR, keys.map((key) => ({ key, at })));
    const app = await suite.boot({ driver: { type: 'redis', url: suite.url(), prefix, shards: 8 }, consume: true }, [Recorder]);
    const recorder = app.get(Recorder);

    await pollUntil(() => recorder.of(FAIR).length === 160, 'every run', 30_000);
    // Every shard had work due at the same moment: the first 40 runs (a quarter) already come from every shard.
    const firstShards = new Set(recorder.of(FAIR).slice(0, 40).map((run) => shardOf(run.key, 8)));
    expect(firstShards.size).toBe(8);
    expect(recorder.mostAtOnce).toBeLessThanOrEqual(2);
    expect(new Set(recorder.of(FAIR).map((run) => run.key)).size).toBe(160);
    expect(recorder.of(FAIR).every((run) => run.at >= run.dueAt)).toBe(true);
  });

  it('changing the count while actions are pending: the new count finds, keeps, replaces, cancels, joins and runs what the old one armed', async () => {
    const prefix = 'sh-move';
    const old = (await suite.boot({ driver: { type: 'redis', url: suite.url(), prefix }, consume: false }, [])).get(DelayService);
    for (let n = 1; n <= 6; n++) await old.schedule(MOVE, `k${n}`, { delay: '1h', payload: { armed: 'old', n } });
    await old.collect(MOVE, 'b1', { item: 1 }, { window: '1h' });

    const app = await suite.boot({ driver: { type: 'redis', url: suite.url(), prefix, shards: 4 }, consume: true }, [Recorder]);
    const next = app.get(DelayService);
    const recorder = app.get(Recorder);
    const oneShard = topicKeys(prefix, MOVE);

    expect((await next.get(MOVE, 'k1'))?.payload).toEqual({ armed: 'old', n: 1 });
    expect(await next.count(MOVE)).toBe(7);
    expect((await next.list(MOVE)).items).toHaveLength(7);

    // cancel reaches the old count
    expect(await next.cancel(MOVE, 'k2')).toBe(true);
    expect(await old.get(MOVE, 'k2')).toBeNull();
    // keep keeps the old arming, where it is
    expect((await next.schedule(MOVE, 'k3', { delay: '1s', payload: { armed: 'new' }, ifExists: 'keep' })).payload).toEqual({ armed: 'old', n: 3 });
    // replace moves it: one action for the key, in the new count
    await next.schedule(MOVE, 'k4', { delay: 300, payload: { armed: 'new' } });
    expect(await suite.raw().hexists(oneShard.env, 'k4')).toBe(0);
    expect(await next.count(MOVE)).toBe(6);
    // an open batch keeps taking items where it was opened
    expect((await next.collect(MOVE, 'b1', { item: 2 }, { window: '1h' })).size).toBe(2);
    expect(await suite.raw().hexists(oneShard.env, 'b1')).toBe(1);
    // reschedule and runNow act in the old count; its shard is consumed by the new instance
    expect(await next.reschedule(MOVE, 'k5', { delay: 300 })).not.toBeNull();
    expect(await next.runNow(MOVE, 'k6')).toBe(true);
    expect(await next.runNow(MOVE, 'b1')).toBe(true);

    await pollUntil(() => recorder.of(MOVE).length >= 4, 'k4, k5, k6 and b1 to run', 10_000);
    await sleep(300);
    expect(recorder.of(MOVE).map((run) => run.key).sort()).toEqual(['b1', 'k4', 'k5', 'k6']);
    expect(recorder.of(MOVE, 'k4')[0].payload).toEqual({ armed: 'new' });
    expect(recorder.of(MOVE, 'b1')[0].payload).toEqual([{ item: 1 }, { item: 2 }]);
    expect(recorder.of(MOVE).every((run) => run.at >= run.dueAt)).toBe(true);
    await pollUntil(async () => (await next.count(MOVE)) === 2, 'the acks', 5_000);
    expect((await next.list(MOVE)).items.map((action) => action.key).sort()).toEqual(['k1', 'k3']);
  });

  it('a topic paused under the old count stays paused under the new one until resumed', async () => {
    const prefix = 'sh-paused';
    const old = (await suite.boot({ driver: { type: 'redis', url: suite.url(), prefix }, consume: false }, [])).get(DelayService);
    await old.schedule(MOVE, 'before', { delay: 100 });
    await old.pause(MOVE);
    const app = await suite.boot({ driver: { type: 'redis', url: suite.url(), prefix, shards: 4 }, consume: true }, [Recorder]);
    const next = app.get(DelayService);
    const recorder = app.get(Recorder);
    await next.schedule(MOVE, 'after', { delay: 100 });

    expect(await next.isPaused(MOVE)).toBe(true);
    expect((await next.get(MOVE, 'after'))?.paused).toBe(true);
    await sleep(600);
    expect(recorder.of(MOVE)).toEqual([]);

    await next.resume(MOVE);
    await pollUntil(() => recorder.of(MOVE).length === 2, 'both to run once resumed', 5_000);
    expect(await old.isPaused(MOVE)).toBe(false);
  });

  it('forgets a drained count once no instance announces it, and from then on per-key calls go to one shard', async () => {
    const prefix = 'sh-gone';
    const quick = { wakeCheck: '200ms', commandTimeout: '200ms' } as const;
    const oldApp = await suite.boot({ driver: { type: 'redis', url: suite.url(), prefix, ...quick }, consume: false }, []);
    const old = oldApp.get(DelayService);
    for (let n = 0; n < 20; n++) await old.schedule(GONE, `g${n}`, { delay: 500 });
    const app = await suite.boot({ driver: { type: 'redis', url: suite.url(), prefix, shards: 4, ...quick }, consume: true }, [Recorder]);
    const recorder = app.get(Recorder);
    const registry = layoutRegistryKey(prefix, GONE);
    expect(Object.keys(await suite.raw().hgetall(registry)).sort()).toEqual(['1', '4']);

    await oldApp.close();
    await pollUntil(() => recorder.of(GONE).length === 20, 'the old arming to run', 10_000);
    // Nobody announces 1 any more and its shard is empty: after 3 check periods and 2 command timeouts it is forgotten.
    await pollUntil(async () => !('1' in (await suite.raw().hgetall(registry))), 'the one-shard count to be forgotten', 15_000, 50);
    expect(Object.keys(await suite.raw().hgetall(registry))).toEqual(['4']);

    // Arming goes to the new count only, and runs.
    const delay = app.get(DelayService);
    await delay.schedule(GONE, 'after', { delay: 100 });
    expect(await suite.raw().exists(topicKeys(prefix, GONE).env)).toBe(0);
    await pollUntil(() => recorder.of(GONE, 'after').length === 1, 'the new arming to run', 5_000);
    expect(new Set(recorder.of(GONE).map((run) => run.key)).size).toBe(21);
  });

  it('scheduleMany over shards writes nothing when one entry is refused, whichever shard it is in', async () => {
    const prefix = 'sh-many';
    const delay = (await suite.boot({ driver: { type: 'redis', url: suite.url(), prefix, shards: 8 }, consume: false }, [])).get(DelayService);
    await delay.collect('shard.many', 'batch', { item: 1 }, { window: '1h' });
    const keys = ['a1', 'a2', 'a3', 'a4', 'batch', 'a5', 'a6'];
    expect(new Set(keys.map((key) => shardOf(key, 8))).size).toBeGreaterThan(3);

    await expect(delay.scheduleMany('shard.many', keys.map((key) => ({ key, delay: '1h' })))).rejects.toBeInstanceOf(ActionKindConflictError);
    expect(await delay.count('shard.many')).toBe(1);
    for (const key of keys.filter((key) => key !== 'batch')) expect(await delay.get('shard.many', key)).toBeNull();
  });
});
