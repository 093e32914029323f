import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import IORedis from 'ioredis';
import { DelayService } from 'nestjs-delay';
import { redisAppSuite } from './support/redis-app-suite';

const TOPIC = 'path.orders';

/** Counts the writes the client's socket makes to the operating system from now on (one writev for many buffered chunks counts once). */
function countWrites(client: IORedis): { readonly count: number } {
  type Flush = (...args: unknown[]) => unknown;
  const socket = (client as unknown as { stream: { _write: Flush; _writev?: Flush } }).stream;
  const counter = { count: 0 };
  const write = socket._write.bind(socket);
  socket._write = (...args: unknown[]): unknown => {
    counter.count++;
    return write(...args);
  };
  const writev = socket._writev?.bind(socket);
  if (writev !== undefined) {
    socket._writev = (...args: unknown[]): unknown => {
      counter.count++;
      return writev(...args);
    };
  }
  return counter;
}

describe('Redis driver: the schedule path', () => {
  const suite = redisAppSuite();

  it('writes the schedules issued in one tick together, and each gets its own answer', async () => {
    const client = new IORedis(suite.url());
    try {
      const app = await suite.boot({ driver: { type: 'redis', client, prefix: 'batch' }, consume: false }, []);
      const delay = app.get(DelayService);
      await delay.count(TOPIC);
      const writes = countWrites(client);
      const keys = Array.from({ length: 100 }, (_, n) => `order-${n}`);
      const results = await Promise.all(keys.map((key, n) => delay.schedule(TOPIC, key, { delay: 60_000 + n, payload: { n } })));
      // One script call per schedule, in far fewer writes than calls.
      expect(writes.count).toBeLessThanOrEqual(5);
      expect(results.map((action) => action.key)).toEqual(keys);
      expect(results.map((action) => action.payload)).toEqual(keys.map((_, n) => ({ n })));
      expect(await delay.count(TOPIC)).toBe(100);
      // What each call returned is what Redis stored.
      for (const n of [0, 57, 99]) expect(await delay.get(TOPIC, keys[n])).toEqual(results[n]);
    } finally {
      await client.quit();
    }
  });

  it('returns what it stored, created, replaced and kept, without the script sending the envelope back', async () => {
    const app = await suite.boot({ driver: { type: 'redis', url: suite.url(), prefix: 'reply' }, consume: false }, []);
    const delay = app.get(DelayService);
    const created = await delay.schedule(TOPIC, 'a', { delay: 45_000, payload: { v: 1 } });
    expect(created).toEqual(await delay.get(TOPIC, 'a'));
    const at = Date.now() + 90_000;
    const replaced = await delay.schedule(TOPIC, 'a', { at, payload: { v: 2 } });
    expect(replaced).toMatchObject({ dueAt: new Date(at), payload: { v: 2 }, attempt: 1, state: 'waiting' });
    expect(replaced).toEqual(await delay.get(TOPIC, 'a'));
    const kept = await delay.schedule(TOPIC, 'a', { delay: 1_000, payload: { v: 3 }, ifExists: 'keep' });
    expect(kept).toEqual(replaced);
    const none = await delay.schedule(TOPIC, 'b', { delay: 45_000 });
    expect(none.payload).toBeUndefined();
    expect(none).toEqual(await delay.get(TOPIC, 'b'));
  });

  it('scheduleMany: a key given twice sees its first arming, as two calls would', async () => {
    const app = await suite.boot({ driver: { type: 'redis', url: suite.url(), prefix: 'twice' }, consume: false }, []);
    const delay = app.get(DelayService);
    await delay.schedule(TOPIC, 'old', { delay: 50_000, payload: { v: 'old' } });
    const results = await delay.scheduleMany(TOPIC, [
      { key: 'k', delay: 40_000, payload: { v: 1 } },
      { key: 'old', delay: 30_000, payload: { v: 'new' }, ifExists: 'keep' },
      { key: 'k', delay: 20_000, payload: { v: 2 }, ifExists: 'keep' },
      { key: 'k', delay: 10_000, payload: { v: 3 } },
    ]);
    expect(results.map((action) => action.payload)).toEqual([{ v: 1 }, { v: 'old' }, { v: 1 }, { v: 3 }]);
    expect(results[2]).toEqual(results[0]);
    expect(await delay.get(TOPIC, 'k')).toEqual(results[3]);
    expect(await delay.get(TOPIC, 'old')).toEqual(results[1]);
  });

  it('scheduleMany makes its Redis calls per call, not per entry, and 1,000 entries land as given', async () => {
    const app = await suite.boot({ driver: { type: 'redis', url: suite.url(), prefix: 'calls' }, consume: false }, []);
    const delay = app.get(DelayService);
    await delay.count(TOPIC);
    const raw = new IORedis(suite.url());
    try {
      // Runs of three share a due time (a batch often does), and every due time differs from the next run's.
      const entries = Array.from({ length: 1_000 }, (_, n) => ({ key: `order-${n}`, delay: 60_000 + Math.floor(n / 3), payload: { n } }));
      await raw.config('RESETSTAT');
      const results = await delay.scheduleMany(TOPIC, entries);
      const stats = String(await raw.info('commandstats'));
      const calls = (command: string): number => Number(new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(stats)?.[1] ?? 0);
      // 2,000 field-value pairs go in two calls of 1,000 arguments (Lua passes a bounded number of values).
      // HSET: those two, plus at most two for the topic's entry in the shard-layout registry (a first arming announces it).
      expect([calls('hmget'), calls('zadd'), calls('hget')]).toEqual([1, 2, 0]);
      expect(calls('hset')).toBeGreaterThanOrEqual(2);
      expect(calls('hset')).toBeLessThanOrEqual(4);
      expect(results.map((action) => action.key)).toEqual(entries.map((entry) => entry.key));
      const scores = await raw.zrange(`calls:{${TOPIC}}:due`, '0', '-1', 'WITHSCORES');
      const dueOf = new Map<string, number>();
      for (let n = 0; n < scores.length; n += 2) dueOf.set(scores[n], Number(scores[n + 1]));
      expect(dueOf.size).toBe(1_000);
      for (const action of results) expect(dueOf.get(action.key)).toBe(action.dueAt.getTime());
      // The envelope (token|attempt|dueAt|payload, times in base 36) holds the same due time as the ZSET.
      const envelopes = await raw.hgetall(`calls:{${TOPIC}}:env`);
      for (const action of results) expect(parseInt(envelopes[action.key].split('|')[2], 36)).toBe(action.dueAt.getTime());
      for (const n of [0, 499, 500, 999]) expect(await delay.get(TOPIC, `order-${n}`)).toEqual(results[n]);
    } finally {
      await raw.quit();
    }
  });

  it('scheduleMany: a running key re-armed earlier in the same call is no longer running for a later keep', async () => {
    const app = await suite.boot({ driver: { type: 'redis', url: suite.url(), prefix: 'lease' }, consume: false }, []);
    const delay = app.get(DelayService);
    await delay.schedule(TOPIC, 'r', { delay: 50_000, payload: { v: 'old' } });
    const raw = new IORedis(suite.url());
    try {
      // As a claim would: the key holds a lease, so its handler counts as running.
      await raw.zadd(`lease:{${TOPIC}}:active`, Date.now() + 60_000, 'r');
      const results = await delay.scheduleMany(TOPIC, [
        { key: 'r', delay: 40_000, payload: { v: 'kept' }, ifExists: 'keep' },
        { key: 'r', delay: 30_000, payload: { v: 'new' } },
        { key: 'r', delay: 20_000, payload: { v: 'kept again' }, ifExists: 'keep' },
      ]);
      expect(results.map((action) => [action.payload, action.state])).toEqual([
        [{ v: 'old' }, 'running'],
        [{ v: 'new' }, 'waiting'],
        [{ v: 'new' }, 'waiting'],
      ]);
      expect(await raw.zscore(`lease:{${TOPIC}}:active`, 'r')).toBeNull();
      expect(await delay.get(TOPIC, 'r')).toEqual(results[1]);
    } finally {
      await raw.quit();
    }
  });

  it('mints a token past the last one when the server clock is behind it', async () => {
    const app = await suite.boot({ driver: { type: 'redis', url: suite.url(), prefix: 'tok' }, consume: false }, []);
    const delay = app.get(DelayService);
    const raw = suite.raw();
    const seqKey = `tok:{${TOPIC}}:seq`;
    // A counter an hour ahead of the clock: the last token minted before the clock stepped back.
    const ahead = (Date.now() + 3_600_000) * 1000;
    await raw.set(seqKey, String(ahead));
    await delay.schedule(TOPIC, 'one', { delay: 60_000 });
    await delay.scheduleMany(TOPIC, [{ key: 'two', delay: 60_000 }, { key: 'three', delay: 60_000 }]);
    const env = await raw.hgetall(`tok:{${TOPIC}}:env`);
    const token = (key: string): number => parseInt(env[key].split('|')[0], 36);
    expect([token('one'), token('two'), token('three')]).toEqual([ahead + 1, ahead + 2, ahead + 3]);
    expect(await raw.get(seqKey)).toBe(String(ahead + 3));

    // Many tokens in one call, across digits that roll over ('9' to 'a', 'z' to the next place).
    const rolling = parseInt(`${(ahead + 10).toString(36).slice(0, -2)}zx`, 36);
    await raw.set(seqKey, String(rolling));
    const keys = Array.from({ length: 80 }, (_, n) => `many-${n}`);
    await delay.scheduleMany(TOPIC, keys.map((key) => ({ key, delay: 60_000 })));
    const many = await raw.hgetall(`tok:{${TOPIC}}:env`);
    const tokens = keys.map((key) => many[key].split('|')[0]);
    expect(tokens).toEqual(keys.map((_, n) => (rolling + 1 + n).toString(36)));
    expect(await raw.get(seqKey)).toBe(String(rolling + 80));
  });
  it('encodes times and tokens in base 36 exactly as JavaScript does, at every length', async () => {
    // The encoder every script includes; run here on its own, against toString(36).
    const encoding = readFileSync(join(__dirname, '../../libs/delay/src/drivers/redis/lua/include/encoding.lua'), 'utf8');
    const lua = `${encoding}\nlocal out = {}\nfor i = 1, #ARGV do out[i] = b36(tonumber(ARGV[i])) end\nreturn out`;
    const values = [0, 1, 9, 10, 35, 36, 1295, 1296, Date.now(), Date.now() * 1000 + 999, Number.MAX_SAFE_INTEGER];
    for (let digits = 1; digits <= 10; digits++) values.push(36 ** digits - 1, 36 ** digits, 36 ** digits + 1);
    let seed = 20261123;
    for (let n = 0; n < 200; n++) {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      values.push(Math.floor((seed / 2 ** 31) * 10 ** (1 + (n % 16))));
    }
    const raw = new IORedis(suite.url());
    try {
      const encoded = (await raw.eval(lua, 0, ...values.map((value) => String(value)))) as string[];
      expect(encoded).toEqual(values.map((value) => value.toString(36)));
      await expect(raw.eval(lua, 0, '-1')).rejects.toThrow('a time before 1970 cannot be stored');
    } finally {
      await raw.quit();
    }
  });
});
