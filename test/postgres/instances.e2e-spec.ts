import { INestApplication, Injectable } from '@nestjs/common';
import { DelayContext, DelayService, OnDelayExpired } from 'nestjs-delay';
import { bootDelayApp, pollUntil, sleep } from '../conformance/support/driver-fixture';
import { TestPostgresServer } from '../support/postgres-server';
import { REAL_TIME_ON_TIME_MS } from '../support/on-time';

const TOPIC = 'pginst.random';

interface Fired {
  readonly instance: number;
  readonly key: string;
  readonly payload: unknown;
  readonly dueAt: number;
  readonly firedAt: number;
}

const fired: Fired[] = [];
let instances = 0;

@Injectable()
class Worker {
  readonly instance = ++instances;

  @OnDelayExpired(TOPIC, { concurrency: 20 })
  run(context: DelayContext): void {
    fired.push({ instance: this.instance, key: context.key, payload: context.payload, dueAt: context.dueAt.getTime(), firedAt: Date.now() });
  }
}

/** A small seeded generator, so a failure can be replayed. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state * 1_664_525 + 1_013_904_223) >>> 0;
    return state / 2 ** 32;
  };
}

/**
 * Three instances on one schema, random schedules, re-arms and cancels made
 * from all of them: every key whose last write armed it runs exactly once,
 * with the last payload, on time; a cancelled key never runs.
 */
describe('postgres: three instances, random writes', () => {
  let server: TestPostgresServer;
  const apps: INestApplication[] = [];

  beforeAll(async () => {
    server = await TestPostgresServer.start();
  }, 60_000);
  afterAll(async () => {
    for (const app of apps.splice(0)) await app.close();
    await server.dispose();
  });

  it.each([1, 2])('seed %i: each final arming runs once, on time; cancelled keys never run', async (seed) => {
    for (const app of apps.splice(0)) await app.close();
    fired.length = 0;
    const schema = `inst_${process.pid}_${seed}`;
    for (let n = 0; n < 3; n++) {
      apps.push(await bootDelayApp({ driver: { type: 'postgres', connectionString: server.url, schema, wakeCheck: '30s' }, shutdownTimeout: '1s' }, [Worker]));
    }
    const services = apps.map((app) => app.get(DelayService));
    const next = random(seed);
    const final = new Map<string, { payload: number; dueAt: number } | null>();
    // Armings a later write replaced or cancelled only after they were due: those may have run (once) before it.
    const mayHaveRun: Array<{ key: string; payload: number; dueAt: number }> = [];
    const keys = Array.from({ length: 60 }, (_, n) => `key-${n}`);
    // Writes to one key are made one after another; keys go in parallel from all instances.
    await Promise.all(
      keys.map(async (key) => {
        for (let op = 0; op < 4; op++) {
          const delay = services[Math.floor(next() * services.length)];
          const before = final.get(key);
          if (next() < 0.2) {
            await delay.cancel(TOPIC, key);
            final.set(key, null);
          } else {
            const payload = Math.floor(next() * 1_000_000);
            const pending = await delay.schedule(TOPIC, key, { delay: 700 + Math.floor(next() * 1_300), payload });
            final.set(key, { payload, dueAt: pending.dueAt.getTime() });
          }
          // On a busy machine the writes of a key can outlast an arming's delay: due before the write that replaced it
          // returned, it may have run first.
          if (before && before.dueAt <= Date.now()) mayHaveRun.push({ key, ...before });
        }
      }),
    );
    const armed = [...final].filter(([, value]) => value !== null);
    await pollUntil(() => armed.every(([key]) => fired.some((run) => run.key === key)), 'every final arming to run', 10_000, 20);
    await pollUntil(async () => (await services[0].count(TOPIC)) === 0, 'the acks', 5_000, 20);
    await sleep(500);
    // Every run is a final arming's, or one of an arming that was due before a later write replaced or cancelled it.
    const isFinal = (run: Fired): boolean => final.get(run.key)?.payload === run.payload && final.get(run.key)?.dueAt === run.dueAt;
    const early = fired.filter((run) => !isFinal(run));
    expect(early.filter((run) => !mayHaveRun.some((arming) => arming.key === run.key && arming.payload === run.payload && arming.dueAt === run.dueAt))).toEqual([]);
    // Each of those ran once at most, each final arming exactly once; cancelled keys only ever ran such an arming.
    expect(new Set(early.map((run) => `${run.key} ${run.dueAt} ${String(run.payload)}`)).size).toBe(early.length);
    expect(fired.filter(isFinal).map((run) => run.key).sort()).toEqual(armed.map(([key]) => key).sort());
    for (const [key, value] of armed) {
      const run = fired.find((candidate) => candidate.key === key && isFinal(candidate));
      expect([key, run?.payload, run?.dueAt]).toEqual([key, value?.payload, value?.dueAt]);
      // On time: never early, and late by no more than a busy machine explains.
      expect(run?.firedAt).toBeGreaterThanOrEqual(value?.dueAt ?? Infinity);
      expect((run?.firedAt ?? Infinity) - (value?.dueAt ?? 0)).toBeLessThanOrEqual(REAL_TIME_ON_TIME_MS);
    }
    // All three instances took part.
    expect(new Set(fired.map((run) => run.instance)).size).toBeGreaterThan(1);
  }, 60_000);
});
