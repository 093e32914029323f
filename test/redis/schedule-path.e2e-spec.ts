import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import IORedis from 'ioredis';
import { ActionKindConflictError, DelayService, DriverUnavailableError, DueTimeOutOfRangeError } from 'nestjs-delay';
import { RedisDriver } from '../../libs/delay/src/drivers/redis/redis.driver';
import { ScheduleCommand, ScheduleResult } from '../../libs/delay/src/interfaces/delay-driver.interface';
import { TestRedisServer } from '../support/redis-server';
import { redisAppSuite } from './support/redis-app-suite';

const TOPIC = 'path.orders';

/** Counts the writes the client's socket makes to the operating system from now on (one writev for many buffered chunks counts once). */
/** Calls of each command since the last CONFIG RESETSTAT (INFO commandstats). */
async function commandCalls(raw: IORedis): Promise<(command: string) => number> {
  const stats = String(await raw.info('commandstats'));
  return (command) => Number(new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(stats)?.[1] ?? 0);
}

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

  describe('schedule calls of one tick are gathered into one script call', () => {
    const TRACE = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    const command = (key: string, due: ScheduleCommand['due'], extra: Partial<ScheduleCommand> = {}): ScheduleCommand => ({
      topic: TOPIC,
      key,
      due,
      payload: JSON.stringify({ key }),
      ifExists: 'replace',
      maxPastMs: 60_000,
      ...extra,
    });

    async function connectedDriver(url: string, prefix: string): Promise<RedisDriver> {
      const driver = new RedisDriver({ type: 'redis', url, prefix, commandTimeout: '500ms' });
      await driver.connect();
      return driver;
    }

    it('each call keeps its own outcome, refusal and trace, as if sent alone and in order', async () => {
      const prefix = 'gather';
      const driver = await connectedDriver(suite.url(), prefix);
      const raw = suite.raw();
      try {
        await driver.schedule(command('kept', { delayMs: 50_000 }));
        await driver.schedule(command('running', { delayMs: 50_000 }));
        await driver.schedule(command('replaced', { delayMs: 50_000 }));
        await driver.collect({ topic: TOPIC, key: 'batch', item: '1', windowMs: 50_000, maxWaitMs: undefined, slide: false, maxItems: 10 });
        // As a claim would: 'running' holds a lease.
        await raw.zadd(`${prefix}:{${TOPIC}}:active`, Date.now() + 60_000, 'running');
        await raw.config('RESETSTAT');
        const pastAt = Date.now() - 3_600_000;
        const calls = [
          driver.schedule(command('new', { delayMs: 40_000 }, { trace: TRACE })),
          driver.schedule(command('kept', { delayMs: 1_000 }, { ifExists: 'keep' })),
          driver.schedule(command('running', { delayMs: 1_000 }, { ifExists: 'keep' })),
          driver.schedule(command('replaced', { atMs: Date.now() + 30_000 })),
          driver.schedule(command('past', { atMs: pastAt })),
          driver.schedule(command('far', { delayMs: driver.horizonMs + 60_000 })),
          driver.schedule(command('batch', { delayMs: 1_000 })),
          // A key given twice in one tick: the second sees the first's arming, as a second call would.
          driver.schedule(command('twice', { delayMs: 20_000 }, { payload: '"first"' })),
          driver.schedule(command('twice', { delayMs: 10_000 }, { payload: '"second"', ifExists: 'keep' })),
          driver.schedule(command('last', { delayMs: 40_000 }, { payload: undefined })),
        ];
        const settled = await Promise.allSettled(calls);
        const calledNow = await commandCalls(raw);
        // One script call for the ten: schedule.lua ran not once.
        expect(calledNow('evalsha') + calledNow('eval')).toBe(1);
        expect(calledNow('hmget')).toBe(1);
        const value = (n: number): ScheduleResult => {
          const outcome = settled[n];
          if (outcome.status === 'rejected') throw new Error(`call ${n} was refused: ${String(outcome.reason)}`);
          return outcome.value;
        };
        const reason = (n: number): unknown => (settled[n].status === 'rejected' ? (settled[n] as PromiseRejectedResult).reason : undefined);
        expect([0, 1, 2, 3, 7, 8, 9].map((n) => [value(n).action.key, value(n).outcome, value(n).action.state])).toEqual([
          ['new', 'created', 'waiting'],
          ['kept', 'kept', 'waiting'],
          ['running', 'kept', 'running'],
          ['replaced', 'replaced', 'waiting'],
          ['twice', 'created', 'waiting'],
          ['twice', 'kept', 'waiting'],
          ['last', 'created', 'waiting'],
        ]);
        const essentials = (action: ScheduleResult['action'] | null): unknown => action && [action.key, action.dueAt, action.payload, action.attempt, action.state];
        expect(essentials(value(8).action)).toEqual(essentials(value(7).action));
        expect(value(8).action.payload).toBe('"first"');
        expect(value(9).action.payload).toBeUndefined();
        expect(reason(4)).toBeInstanceOf(DueTimeOutOfRangeError);
        expect((reason(4) as DueTimeOutOfRangeError).dueAt).toBe(pastAt);
        expect(reason(5)).toBeInstanceOf(DueTimeOutOfRangeError);
        expect((reason(5) as Error).message).toContain('horizon');
        expect(reason(6)).toBeInstanceOf(ActionKindConflictError);
        // What each armed call returned is what Redis holds; refused calls wrote nothing.
        for (const n of [0, 1, 2, 3, 8, 9]) expect(essentials(await driver.get(TOPIC, value(n).action.key))).toEqual(essentials(value(n).action));
        expect(await driver.get(TOPIC, 'past')).toBeNull();
        expect(await driver.get(TOPIC, 'far')).toBeNull();
        expect((await driver.get(TOPIC, 'batch'))?.items).toEqual(['1']);
        const envelopes = await raw.hgetall(`${prefix}:{${TOPIC}}:env`);
        // Each new arming carries its own call's trace context, and only its own.
        expect(envelopes.new.split('|')[0]).toMatch(new RegExp(`~${TRACE}$`));
        expect(envelopes.last.split('|')[0]).not.toContain('~');
        expect(await raw.zscore(`${prefix}:{${TOPIC}}:active`, 'running')).not.toBeNull();
      } finally {
        await driver.close();
      }
    });

    it('keeps the order of calls: a cancel or a read made after a schedule in the same tick comes after it', async () => {
      const app = await suite.boot({ driver: { type: 'redis', url: suite.url(), prefix: 'order' }, consume: false }, []);
      const delay = app.get(DelayService);
      // The topic's layout is known (the first call on a topic looks it up first).
      await delay.schedule(TOPIC, 'warm', { delay: 60_000 });
      const armed = Array.from({ length: 5 }, (_, n) => delay.schedule(TOPIC, `o-${n}`, { delay: 60_000 }));
      const cancelled = delay.cancel(TOPIC, 'o-2');
      const read = delay.get(TOPIC, 'o-4');
      const counted = delay.count(TOPIC);
      await Promise.all(armed);
      expect(await cancelled).toBe(true);
      expect((await read)?.key).toBe('o-4');
      // warm and o-0..o-4, less o-2.
      expect(await counted).toBe(5);
      expect(await delay.get(TOPIC, 'o-2')).toBeNull();
    });

    it('gathered calls end exactly as the same calls made one at a time (random sequences, 5 seeds)', async () => {
      const raw = suite.raw();
      const KEYS = ['a', 'b', 'c', 'd', 'e', 'run', 'batch'];
      for (const seed of [11, 12, 13, 14, 15]) {
        let state = seed;
        const random = (below: number): number => {
          state = (state * 1103515245 + 12345) % 2 ** 31;
          return Math.floor((state / 2 ** 31) * below);
        };
        const base = Date.now() + 600_000;
        const calls: ScheduleCommand[] = Array.from({ length: 60 }, (_, n) => {
          const kind = random(10);
          const due: ScheduleCommand['due'] = kind === 0 ? { atMs: Date.now() - 2 * 86_400_000 } : kind === 1 ? { delayMs: 10 ** 15 } : { atMs: base + random(5) * 1_000 };
          return command(KEYS[random(KEYS.length)], due, { ifExists: random(2) === 0 ? 'keep' : 'replace', payload: random(4) === 0 ? undefined : JSON.stringify({ n }) });
        });
        const run = async (prefix: string, gathered: boolean): Promise<unknown> => {
          const driver = await connectedDriver(suite.url(), prefix);
          try {
            await driver.schedule(command('a', { atMs: base }));
            await driver.schedule(command('run', { atMs: base }));
            await raw.zadd(`${prefix}:{${TOPIC}}:active`, base, 'run');
            await driver.collect({ topic: TOPIC, key: 'batch', item: '1', windowMs: 600_000, maxWaitMs: undefined, slide: false, maxItems: 10 });
            const outcomes: Array<PromiseSettledResult<ScheduleResult>> = [];
            if (gathered) outcomes.push(...(await Promise.allSettled(calls.map((call) => driver.schedule(call)))));
            else for (const call of calls) outcomes.push(...(await Promise.allSettled([driver.schedule(call)])));
            const readable = outcomes.map((outcome) =>
              outcome.status === 'fulfilled'
                ? [outcome.value.outcome, outcome.value.action.key, outcome.value.action.payload, outcome.value.action.dueAt, outcome.value.action.state]
                : (outcome.reason as { code?: string }).code,
            );
            // What is stored: every envelope without its token, the due and active sets (the batch's
            // times come from the moment it was opened, so only its item count is compared).
            const envelopes = Object.entries(await raw.hgetall(`${prefix}:{${TOPIC}}:env`))
              .map(([key, envelope]) => [key, key === 'batch' ? envelope.split('|')[3] : envelope.split('|').slice(1).join('|')])
              .sort();
            const scores = await raw.zrange(`${prefix}:{${TOPIC}}:due`, '0', '-1', 'WITHSCORES');
            const due: string[] = [];
            for (let n = 0; n < scores.length; n += 2) if (scores[n] !== 'batch') due.push(scores[n], scores[n + 1]);
            const active = await raw.zrange(`${prefix}:{${TOPIC}}:active`, '0', '-1');
            return { readable, envelopes, due, active };
          } finally {
            await driver.close();
          }
        };
        const alone = await run(`alone-${seed}`, false);
        const together = await run(`together-${seed}`, true);
        expect({ seed, ...(together as object) }).toEqual({ seed, ...(alone as object) });
      }
    });

    it('calls gathered when the driver is closed in the same tick are still sent, before the connection ends', async () => {
      const driver = await connectedDriver(suite.url(), 'closing');
      await driver.schedule(command('warm', { delayMs: 60_000 }));
      const calls = [driver.schedule(command('c-1', { delayMs: 60_000 })), driver.schedule(command('c-2', { delayMs: 60_000 }))];
      const closed = driver.close();
      expect((await Promise.all(calls)).map((result) => result.outcome)).toEqual(['created', 'created']);
      await closed;
      expect(await suite.raw().hkeys(`closing:{${TOPIC}}:env`)).toEqual(expect.arrayContaining(['c-1', 'c-2']));
    });

    it('a gathered call that gets no answer fails each of its callers within the command timeout', async () => {
      const server = await TestRedisServer.start();
      const driver = await connectedDriver(server.url, 'silent');
      try {
        await driver.schedule(command('warm', { delayMs: 60_000 }));
        server.pause();
        const startedAt = Date.now();
        const settled = await Promise.allSettled(Array.from({ length: 20 }, (_, n) => driver.schedule(command(`s-${n}`, { delayMs: 60_000 }))));
        const elapsedMs = Date.now() - startedAt;
        expect(settled.map((outcome) => outcome.status)).toEqual(Array.from({ length: 20 }, () => 'rejected'));
        for (const outcome of settled) expect((outcome as PromiseRejectedResult).reason).toBeInstanceOf(DriverUnavailableError);
        // 500 ms bound: settled well before twice that (a loaded machine is slow, not that slow).
        expect(elapsedMs).toBeLessThan(5_000);
        server.resume();
        // The connection still works once the server answers again.
        await expect(driver.schedule(command('after', { delayMs: 60_000 }))).resolves.toMatchObject({ outcome: 'created' });
      } finally {
        server.resume();
        await driver.close();
        await server.dispose();
      }
    });
  });
});
