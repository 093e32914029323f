// The Redis driver gathers the recurring steps (advanceSeries) made in one
// tick for one shard, as a claim's ticks make them, into one
// advance-series-many call. Each caller still gets exactly what its step
// alone would have got: its occurrences created, skipped by the overlap
// policy with the blocker named, or nothing when its condition no longer
// holds.
import { RedisDriver } from '../../libs/delay/src/drivers/redis/redis.driver';
import { AdvanceSeriesCommand } from '../../libs/delay/src/interfaces/delay-driver.interface';
import { redisAppSuite } from './support/redis-app-suite';

const TOPIC = 'steps.every';

/** A tick's payload (see series-state.ts): every second, `last` the latest instant reached. */
const tick = (last: number): string => `@1|i|rs|0||||${last.toString(36)}|`;

describe('Redis driver: the recurring steps of one tick', () => {
  const suite = redisAppSuite();
  const drivers: RedisDriver[] = [];

  afterEach(async () => {
    for (const driver of drivers.splice(0)) await driver.close();
  });

  async function driver(prefix: string): Promise<RedisDriver> {
    const made = new RedisDriver({ type: 'redis', url: suite.url(), prefix });
    drivers.push(made);
    await made.connect();
    return made;
  }

  it('go in one script call; each gets its own result (created, skipped with its blocker, not applied)', async () => {
    const redis = await driver('steps');
    const raw = suite.raw();
    const at = Date.now() + 3_600_000;
    const keys = Array.from({ length: 20 }, (_, n) => `s${n}`);
    const step = (key: string, n: number, overrides: Partial<AdvanceSeriesCommand>): AdvanceSeriesCommand => ({
      topic: TOPIC,
      key,
      expect: { absent: true },
      overlap: 'skip',
      occurrences: [],
      next: { due: { atMs: at + n }, payload: tick(0) },
      ...overrides,
    });
    const armed = await Promise.all(keys.map((key, n) => redis.advanceSeries(step(key, n, {}))));
    expect(armed.every((result) => result.applied)).toBe(true);
    // s1 gets an occurrence that is still waiting when the steps below run.
    const first = await redis.advanceSeries(
      step('s1', 1, { expect: { payload: tick(0) }, occurrences: [{ key: 's1\u001e1', due: { atMs: at }, payload: '"one"' }], next: { due: { atMs: at + 1 }, payload: tick(1) } }),
    );
    expect(first.created).toEqual(['s1\u001e1']);
    await raw.config('RESETSTAT');
    const results = await Promise.all(
      keys.map((key, n) =>
        redis.advanceSeries(
          step(key, n, {
            expect: { payload: n === 2 ? 'not its payload' : tick(n === 1 ? 1 : 0) },
            occurrences: [{ key: `${key}\u001e2`, due: { atMs: at + 10 }, payload: `"${key}"` }],
            next: { due: { atMs: at + 100 + n }, payload: tick(2) },
          }),
        ),
      ),
    );
    const stats = String(await raw.info('commandstats'));
    const calls = (command: string): number => Number(new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(stats)?.[1] ?? 0);
    // One script call for the 20 steps (evalsha, or eval the first time this server sees the script).
    expect(calls('evalsha') + calls('eval')).toBe(1);
    expect(results[0]).toEqual({ applied: true, created: ['s0\u001e2'], skipped: [], cancelled: [], nextDueAt: at + 100 });
    expect(results[1]).toMatchObject({ applied: true, created: [], skipped: ['s1\u001e2'], blockedBy: { occurrenceKey: 's1\u001e1', state: 'waiting', dueAt: at } });
    expect(results[2]).toEqual({ applied: false, created: [], skipped: [], cancelled: [] });
    results.slice(3).forEach((result, n) => expect(result).toEqual({ applied: true, created: [`${keys[n + 3]}\u001e2`], skipped: [], cancelled: [], nextDueAt: at + 103 + n }));
    expect((await redis.get(TOPIC, 's0'))?.dueAt).toBe(at + 100);
    expect((await redis.get(TOPIC, 's2'))?.dueAt).toBe(at + 2);
    expect((await redis.get(TOPIC, 's5\u001e2'))?.payload).toBe('"s5"');
    expect(await redis.count(TOPIC)).toBe(20 + 1 + 18);
  });

  it('leave in the order made beside gathered schedules: a step, then a schedule of the same key in the same tick, reach Redis in that order', async () => {
    const redis = await driver('order');
    const at = Date.now() + 3_600_000;
    const step = redis.advanceSeries({ topic: TOPIC, key: 'k', expect: { absent: true }, overlap: 'skip', occurrences: [], next: { due: { atMs: at }, payload: tick(0) } });
    const schedule = redis.schedule({ topic: TOPIC, key: 'k', due: { delayMs: 60_000 }, payload: undefined, ifExists: 'replace', maxPastMs: 0 });
    const [stepped, scheduled] = await Promise.all([step, schedule]);
    // In order: the step finds the key absent and arms it; the schedule then replaces it (out of order, the step
    // would find the schedule's arming and not apply).
    expect(stepped.applied).toBe(true);
    expect(scheduled.outcome).toBe('replaced');
    expect((await redis.get(TOPIC, 'k'))?.dueAt).toBe(scheduled.action.dueAt);
  });
});

