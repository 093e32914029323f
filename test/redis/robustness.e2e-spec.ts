import { Injectable } from '@nestjs/common';
import { DelayContext, DelayService, OnDelayExpired } from 'nestjs-delay';
import { REDIS_SCRIPTS } from '../../libs/delay/src/drivers/redis/redis-scripts.generated';
import { pollUntil } from '../conformance/support/driver-fixture';
import { redisAppSuite } from './support/redis-app-suite';

const SLOW = 'robust.slow';

/** Holds the runs of keys starting with "hold" until released; counts the others. */
@Injectable()
class Holder {
  readonly finished: string[] = [];
  private release: () => void = () => undefined;
  private readonly released = new Promise<void>((resolve) => (this.release = resolve));

  @OnDelayExpired(SLOW, { concurrency: 4 })
  async run({ key }: DelayContext): Promise<void> {
    if (key.startsWith('hold')) await this.released;
    this.finished.push(key);
  }

  letGo(): void {
    this.release();
  }
}

describe('Redis driver robustness', () => {
  const suite = redisAppSuite();

  it('keeps using a free handler slot while long handlers hold the others', async () => {
    const app = await suite.boot({ driver: { type: 'redis', url: suite.url(), prefix: 'slots' } }, [Holder]);
    const delay = app.get(DelayService);
    const running = app.get(Holder);
    try {
    // Three of four slots taken for as long as the test lasts; ten quick actions fall due behind them.
    await delay.scheduleMany(SLOW, ['hold-1', 'hold-2', 'hold-3'].map((key) => ({ key, delay: 10 })));
    await pollUntil(async () => (await delay.list(SLOW)).items.filter((action) => action.state === 'running').length === 3, 'the holders run', 2_000);
    await delay.scheduleMany(SLOW, Array.from({ length: 10 }, (_, n) => ({ key: `quick-${n}`, delay: 20 })));
    await pollUntil(() => running.finished.length === 10, 'the quick actions, through the one free slot', 3_000);
      expect(running.finished.every((key) => key.startsWith('quick'))).toBe(true);
    } finally {
      // Released before the suite closes the app, so its drain does not wait for the holders.
      running.letGo();
    }
  });

  it('refuses a due time before 1970 even when maxPast would reach it, and Redis stays responsive', async () => {
    const app = await suite.boot({ driver: { type: 'redis', url: suite.url(), prefix: 'past' }, maxPast: '100y' }, []);
    const delay = app.get(DelayService);
    await expect(delay.schedule('robust.past', 'k', { at: -1_000 })).rejects.toMatchObject({ code: 'ERR_DELAY_DUE_TIME_OUT_OF_RANGE' });
    await expect(delay.scheduleMany('robust.past', [{ key: 'k', at: -1_000 }])).rejects.toMatchObject({ code: 'ERR_DELAY_DUE_TIME_OUT_OF_RANGE' });
    expect(await suite.raw().ping()).toBe('PONG');
    expect(await delay.count('robust.past')).toBe(0);
  });

  it("keeps working after Redis's script cache is flushed: a call answered NOSCRIPT is sent again with the script's source", async () => {
    const app = await suite.boot({ driver: { type: 'redis', url: suite.url(), prefix: 'flushed' } }, [Holder]);
    const delay = app.get(DelayService);
    const running = app.get(Holder);
    await delay.scheduleMany(SLOW, [{ key: 'quick-before', delay: 10 }]);
    await pollUntil(() => running.finished.includes('quick-before'), 'the action scheduled before the flush', 3_000);
    await suite.raw().script('FLUSH');
    // The scripts the driver calls from here (scheduleMany, claim, complete) were loaded on its socket before the flush:
    // it sends each as EVALSHA, which Redis now answers NOSCRIPT.
    await delay.scheduleMany(SLOW, Array.from({ length: 5 }, (_, n) => ({ key: `quick-after-${n}`, delay: 10 })));
    await pollUntil(() => running.finished.filter((key) => key.startsWith('quick-after')).length === 5, 'the actions scheduled after the flush', 3_000);
    await pollUntil(async () => (await delay.count(SLOW)) === 0, 'their completions recorded', 3_000);
  });

  it('a retry replayed after a lost reply changes nothing (it re-arms under a new token)', async () => {
    const script = REDIS_SCRIPTS.retry;
    const keys = ['t:{r}:due', 't:{r}:env', 't:{r}:active', 't:{r}:seq', 't:{r}:runs', 't:{r}:ticks'];
    const raw = suite.raw();
    await raw.hset(keys[1], 'k', 'tok|1|0|{"a":1}');
    await raw.zadd(keys[2], Date.now() + 30_000, 'k');
    const run = (): Promise<unknown> => raw.eval(script.lua, script.numberOfKeys, ...keys, 'k', 'tok', 1_000, 't:{r}:wake', '');
    expect(await run()).toBe(1);
    const afterFirst = await raw.hget(keys[1], 'k');
    expect(await run()).toBe(0);
    expect(await raw.hget(keys[1], 'k')).toBe(afterFirst);
    expect(afterFirst).toMatch(/^[0-9a-z]+\|2\|[0-9a-z]+\|\{"a":1\}$/);
    expect(afterFirst?.startsWith('tok|')).toBe(false);
  });
});
