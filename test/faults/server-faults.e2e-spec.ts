import IORedis from 'ioredis';
import { Random } from '../instances/support/random';
import { TestRedisServer } from '../support/redis-server';
import { COMMAND_TIMEOUT_MS, describeTally, eventually, FAULT, FaultApp, faultApps, sleep, report } from './support/fault-app';
import { FaultTally } from './support/fault-ledger';
import { faultRandom } from './support/fault-seed';
import { scheduleLoad } from './support/workload';

const BOUND_MS = COMMAND_TIMEOUT_MS + 2_000;

/** The counts every fault test asserts, with the seed, so a failure names the run to replay. */
function verdict(random: Random, tally: FaultTally, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    seed: random.seed,
    lost: tally.lost,
    early: tally.early,
    firedAfterCancel: tally.firedAfterCancel,
    unknownRuns: tally.unknownRuns,
    details: tally.details.filter((line) => !line.includes('times: attempts')).slice(0, 12),
    ...extra,
  };
}

const clean = { lost: 0, early: 0, firedAfterCancel: 0, unknownRuns: 0, details: [] };

/** Runs whose arming had run before (a duplicate) although the first run started after `after`. */
function duplicatesStartedAfter(fa: FaultApp, after: number): number {
  const seen = new Map<string, number>();
  let count = 0;
  for (const run of fa.handlers.ledger.runs) {
    const id = `${run.topic}\u0000${run.key}\u0000${run.dueAt}`;
    const first = seen.get(id);
    if (first === undefined) seen.set(id, run.startedAt);
    else if (first > after) count++;
  }
  return count;
}

/** Faults of the redis-server itself: CLIENT KILL, kill -9 and restart, with and without persistence. */
describe('faults: the Redis server', () => {
  const apps = faultApps();

  it('a storm of CLIENT KILLs under load loses nothing and hangs no call (seed 811)', async () => {
    const random = faultRandom(811);
    const redis = await TestRedisServer.start();
    try {
      const fa = await apps.boot({ type: 'redis', url: redis.url });
      const ledger = fa.handlers.ledger;
      fa.handlers.hold = () => sleep(random.int(0, 20));
      // For 3 s, every 40-150 ms, CLIENT KILL of the app's command connection, and now and then of its subscriber (seeded);
      // longer (up to 20 s) until more than 10 connections were killed: on a busy machine the app takes longer to
      // reconnect, and more of the kills find no connection to kill.
      let storming = true;
      let kills = 0;
      let lastKill = 0;
      // One admin connection for the whole storm (SKIPME spares it), so kills come as fast as asked.
      const admin = new IORedis(redis.url);
      admin.on('error', () => undefined);
      const kill = async (type: string): Promise<number> => Number(await admin.call('CLIENT', 'KILL', 'TYPE', type, 'SKIPME', 'yes'));
      const storm = (async () => {
        const until = Date.now() + 3_000;
        const longest = Date.now() + 20_000;
        while (Date.now() < until || (kills <= 10 && Date.now() < longest)) {
          await sleep(random.int(40, 150));
          kills += await kill('normal');
          if (random.chance(0.3)) kills += await kill('pubsub');
          lastKill = Date.now();
        }
        storming = false;
        admin.disconnect();
      })();
      // Meanwhile, waves of 100 schedules, 40 at a time, each call retried when it is rejected.
      const load = { acknowledged: 0, rejected: 0, hung: 0, lastDueAt: 0, cancelled: 0 };
      for (let wave = 0; storming; wave++) {
        const done = await scheduleLoad(fa, ledger, random, { topic: FAULT.narrow, count: 100, prefix: `k${wave}-`, minMs: 0, maxMs: 1_500, parallel: 40, boundMs: BOUND_MS, tries: 5, retryPauseMs: 30 });
        load.acknowledged += done.acknowledged;
        load.rejected += done.rejected;
        load.hung += done.hung;
        load.cancelled += done.cancelled;
        load.lastDueAt = Math.max(load.lastDueAt, done.lastDueAt);
        await sleep(random.int(20, 120));
      }
      await storm;
      await eventually(() => ledger.tally().lost === 0, Math.max(0, load.lastDueAt - Date.now()) + 6_000);
      const drained = await eventually(async () => (await fa.delay.count(FAULT.narrow)) === 0, 5_000);
      const tally = ledger.tally();
      report(`CLIENT KILL storm (seed ${random.seed}): ${kills} connections killed; ${describeTally(tally)}; cancelled ${load.cancelled}; calls rejected ${load.rejected}, hung ${load.hung}`);
      expect(verdict(random, tally, { hungCalls: load.hung, drained, acknowledged: load.acknowledged > 0, lateDuplicates: duplicatesStartedAfter(fa, lastKill) })).toEqual({
        seed: random.seed,
        ...clean,
        hungCalls: 0,
        drained: true,
        acknowledged: true,
        lateDuplicates: 0,
      });
      expect(kills).toBeGreaterThan(10);
    } finally {
      await apps.closeAll();
      await redis.dispose();
    }
  }, 60_000);

  // A kill lands at a different point of the claim/ack traffic with each seed.
  it.each([812, 8121])('kill -9 and restart of Redis with AOF while handlers run: every acknowledged action runs, none early (seed %i)', async (seed) => {
    const random = faultRandom(seed);
    const redis = await TestRedisServer.start({ appendonly: true });
    try {
      const fa = await apps.boot({ type: 'redis', url: redis.url });
      const ledger = fa.handlers.ledger;
      fa.handlers.hold = () => sleep(random.int(50, 400));
      // Three slots: a run whose outcome call was lost with the connection holds one of only three. 60 runs
      // of up to 400 ms, three at a time, finish well within the time the test waits.
      const load = scheduleLoad(fa, ledger, random, { topic: FAULT.narrow, count: 60, prefix: 'a', minMs: 0, maxMs: 2_500, parallel: 20, boundMs: BOUND_MS, tries: 30 });
      await sleep(random.int(600, 1_000));
      await redis.kill();
      const killedAt = Date.now();
      await sleep(random.int(200, 600));
      await redis.boot();
      const done = await load;
      await eventually(() => ledger.tally().lost === 0, Math.max(0, done.lastDueAt - Date.now()) + 6_000);
      const drained = await eventually(async () => (await fa.delay.count(FAULT.narrow)) === 0, 5_000);
      const tally = ledger.tally();
      report(`kill -9 + restart with AOF (seed ${random.seed}): ${describeTally(tally)}; cancelled ${done.cancelled}; calls rejected ${done.rejected}, hung ${done.hung}`);
      expect(verdict(random, tally, { hungCalls: done.hung, drained, lateDuplicates: duplicatesStartedAfter(fa, killedAt) })).toEqual({ seed: random.seed, ...clean, hungCalls: 0, drained: true, lateDuplicates: 0 });
    } finally {
      await apps.closeAll();
      await redis.dispose();
    }
  }, 60_000);

  it('Redis restarted empty (no persistence) while handlers run: the loss is reported, and no old run changes an arming made after the restart (seed 813)', async () => {
    const random = faultRandom(813);
    const redis = await TestRedisServer.start();
    try {
      const fa = await apps.boot({ type: 'redis', url: redis.url });
      const ledger = fa.handlers.ledger;
      const topics = [FAULT.basic, FAULT.once] as const;
      const keys = Array.from({ length: 20 }, (_, n) => `k${n}`);
      // Before: each key due at once; its run holds until after the restart, then resolves or throws (a retry, or a burial with one attempt).
      let restarted = false;
      let oldRunsLeft = 0;
      fa.handlers.hold = async (run) => {
        if (run.startedAt > restartAt) return;
        oldRunsLeft++;
        try {
          while (!restarted) await sleep(20);
          await sleep(random.int(200, 1_200));
          if (run.key.endsWith('1') || run.key.endsWith('3') || run.key.endsWith('7')) throw new Error('an old run fails after the restart');
        } finally {
          oldRunsLeft--;
        }
      };
      let restartAt = Number.MAX_SAFE_INTEGER;
      for (const topic of topics) for (const key of keys) ledger.armed(topic, key, (await fa.delay.schedule(topic, key, { delay: 1, payload: 'before' })).dueAt, 'before the restart');
      // And some that are not due yet: Redis forgets them, which is expected and must be reported.
      for (const key of keys) ledger.armed(FAULT.basic, `later-${key}`, (await fa.delay.schedule(FAULT.basic, `later-${key}`, { delay: 60_000 })).dueAt, 'pending at the restart');
      const allStarted = await eventually(() => fa.handlers.running >= topics.length * keys.length, 5_000);

      restartAt = Date.now();
      await redis.kill();
      await redis.boot({ appendonly: false });
      restarted = true;

      // After: the same keys armed again, in the same order, due in 2.5 s: the old runs settle meanwhile.
      const afterRestart: Array<{ topic: string; key: string; dueAt: number }> = [];
      for (const topic of topics) {
        for (const key of keys) {
          const pending = await eventually(async () => {
            const armed = await fa.delay.schedule(topic, key, { delay: 2_500, payload: 'after' });
            ledger.armed(topic, key, armed.dueAt, 'after the restart');
            afterRestart.push({ topic, key, dueAt: armed.dueAt.getTime() });
            return true;
          }, 5_000);
          expect({ scheduledAfterRestart: pending, topic, key }).toEqual({ scheduledAfterRestart: true, topic, key });
        }
      }
      ledger.forgive('Redis restarted without persistence', (topic, key) => key.startsWith('later-'));
      const oldRunsSettled = await eventually(() => oldRunsLeft === 0, 5_000);
      const lastDue = Math.max(...afterRestart.map((arming) => arming.dueAt));
      await eventually(() => ledger.tally().lost === 0, Math.max(0, lastDue - Date.now()) + 4_000);
      await sleep(300);
      const tally = ledger.tally();
      const newRuns = ledger.runs.filter((run) => afterRestart.some((arming) => arming.topic === run.topic && arming.key === run.key && arming.dueAt === run.dueAt));
      const storeResets = fa.events.filter((event) => (event.type as string) === 'storeReset');
      const deadAfter = await fa.delay.countDead(FAULT.once).catch(() => -1);
      report(`restart without persistence (seed ${random.seed}): ${describeTally(tally)}; storeReset events ${storeResets.length}; dead-lettered ${deadAfter}`);
      expect(
        verdict(random, tally, {
          allOldRunsStarted: allStarted,
          oldRunsSettled,
          // Each arming made after the restart runs once, as attempt 1, at or after its due time.
          newArmingsRunOnce: newRuns.length === afterRestart.length && newRuns.every((run) => run.attempt === 1),
          deadLettered: deadAfter,
          storeResetReported: storeResets.length > 0,
        }),
      ).toEqual({ seed: random.seed, ...clean, allOldRunsStarted: true, oldRunsSettled: true, newArmingsRunOnce: true, deadLettered: 0, storeResetReported: true });
      expect(storeResets[0]).toMatchObject({ topic: '*', key: '' });
    } finally {
      await apps.closeAll();
      await redis.dispose();
    }
  }, 60_000);
});
