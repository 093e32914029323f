// The postgres driver across real processes: each instance is a Node process
// of its own (test/instances/worker/worker.ts with driver 'postgres'), on one
// schema of the suite's PostgreSQL. They report every handler start and end;
// the checks are the Redis multi-instance tests' (test/instances/support/history.ts).
import { checkKeyHistory, OpRecord } from '../instances/support/history';
import { Fleet, Instance, report, sleep, summary } from '../instances/support/instances';
import type { ScheduleItem } from '../instances/support/protocol';
import { Random } from '../instances/support/random';
import { TestPostgresServer } from '../support/postgres-server';

const TOPIC = 'pgproc.action';
const SEED = Number(process.env.DELAY_RANDOM_SEED ?? 20_261_126);
/** Generous on a loaded 2-core machine; a missed wake-up shows as seconds, or never. */
const LATE_LIMIT_MS = 3_000;

describe('postgres: instances in separate processes', () => {
  let server: TestPostgresServer;
  let fleet: Fleet | undefined;
  let schemas = 0;

  beforeAll(async () => {
    server = await TestPostgresServer.start();
  }, 60_000);

  afterEach(async () => {
    await fleet?.dispose();
    fleet = undefined;
  });

  afterAll(async () => {
    await server.dispose();
  });

  /** A fleet on a schema of its own (the worker takes `prefix` as the schema). */
  function newFleet(): Fleet & { readonly schema: string } {
    const schema = `proc_${process.pid}_${++schemas}`;
    const created = Object.assign(new Fleet({ url: server.url, prefix: schema, topic: TOPIC }), { schema });
    fleet = created;
    return created;
  }

  it(`3 processes, 2,000 actions over a few seconds, cancels near their due time: each runs once, never early, never after an acknowledged cancel (seed ${SEED})`, async () => {
    const current = newFleet();
    // The first migrates the schema; the others find it done.
    const first = await current.spawn('p1', { driver: 'postgres', consume: true, concurrency: 50 });
    const instances: Instance[] = [first, ...(await current.spawnAll(['p2', 'p3'], { driver: 'postgres', consume: true, concurrency: 50 }))];
    const random = new Random(SEED);
    // Due from 4 s on: all are scheduled by then, so lateness is measured from the due time.
    const base = Date.now() + 4_000;
    const items: ScheduleItem[] = Array.from({ length: 2_000 }, (_, n) => ({ key: `a${n}`, at: base + random.int(0, 3_500), payload: { armId: `a${n}#0` } }));
    const records = new Map<string, OpRecord[]>(items.map((item) => [item.key, []]));
    // Each process schedules a third of them, over its own connections.
    await Promise.all(
      instances.map(async (instance, n) => {
        const mine = items.filter((_, i) => i % instances.length === n);
        const reply = await instance.call({ op: 'scheduleMany', items: mine, parallel: 8 }, 30_000);
        for (const item of mine) {
          records.get(item.key)?.push({
            key: item.key,
            index: 0,
            kind: 'replace',
            producer: instance.name,
            armId: item.payload?.armId,
            at: item.at,
            issuedAt: reply.issuedAt,
            returnedAt: reply.returnedAt,
            // scheduleMany replies with a count: the action each call returned is the one it asked for.
            result: { key: item.key, dueAt: item.at ?? 0, attempt: 1, state: 'waiting', armId: item.payload?.armId },
          });
        }
      }),
    );
    const scheduledBy = Date.now();
    // A fifth are cancelled from a random process, from 60 ms before to 20 ms after their due time.
    const cancels = items.filter(() => random.chance(0.2)).map((item) => ({ item, at: (item.at ?? 0) + random.int(-60, 20), by: instances[random.int(0, 2)] }));
    await Promise.all(
      cancels.map(async ({ item, at, by }) => {
        await sleep(at - Date.now());
        const reply = await by.call({ op: 'cancel', key: item.key });
        records.get(item.key)?.push({ key: item.key, index: 1, kind: 'cancel', producer: by.name, issuedAt: reply.issuedAt, returnedAt: reply.returnedAt, result: reply.value });
      }),
    );
    await current.until(async () => (await first.count()) === 0, 15_000, 'every action to run');
    await current.until(() => current.ends.length === current.starts.length, 10_000, 'the running handlers to return');
    await sleep(600);

    const violations: string[] = [];
    let runs = 0;
    let neverRan = 0;
    let raced = 0;
    const lateness: number[] = [];
    for (const [key, ops] of records) {
      const verdict = checkKeyHistory(key, ops, current.startsOf(key), LATE_LIMIT_MS);
      violations.push(...verdict.violations);
      runs += verdict.runs;
      neverRan += verdict.neverRan;
      raced += verdict.startedAfterRemovalReturned;
      lateness.push(...verdict.lateness);
    }
    const found = cancels.length - [...records.values()].filter((ops) => ops[1]?.result === false).length;
    const late = summary(lateness);
    report(
      `postgres, 3 processes, seed ${SEED}: 2000 actions scheduled in ${scheduledBy - base + 4_000} ms, ${cancels.length} cancels near the due time (${found} found it pending, ${neverRan} before it ran), ` +
        `${runs} runs, ${raced} handler(s) entered after the cancel returned but claimed before it; claim lateness ms p50 ${late.p50} p99 ${late.p99} max ${late.max}; split ${JSON.stringify(current.split())}`,
    );
    expect(violations).toEqual([]);
    expect(current.starts).toHaveLength(runs);
    expect(runs).toBe(2_000 - neverRan);
    // Cancels did land both before and after the run.
    expect(neverRan).toBeGreaterThan(0);
    expect(cancels.length - neverRan).toBeGreaterThan(0);
    expect(Object.values(current.split()).filter((count) => count > 0)).toHaveLength(3);
  }, 60_000);

  it("kill -9 of the process running a handler: another process runs it once the lease ('2s') expires, as attempt 2; the default lease is '30s'", async () => {
    const LEASE_MS = 2_000;
    const current = newFleet();
    const [one, two] = await current.spawnAll(['c1', 'c2'], { driver: 'postgres', consume: true, lease: '2s', wakeCheck: '1s' });
    const byName = new Map([one, two].map((instance) => [instance.name, instance]));
    await one.call({ op: 'schedule', key: 'slow', delay: 200, payload: { armId: 'slow-1', holdMs: 10_000, holdAttempts: 1 } });
    await current.until(() => current.startsOf('slow').length === 1, 10_000, 'the first run of "slow"');
    const victim = byName.get(current.startsOf('slow')[0].instance);
    const survivor = victim === one ? two : one;
    // Longer than a lease: the running process renews it, so nobody takes the action over.
    await sleep(LEASE_MS + 500);
    expect(current.startsOf('slow')).toHaveLength(1);

    const killedAt = Date.now();
    await victim?.kill();
    await current.until(() => current.endsOf('slow').length === 1, LEASE_MS * 3 + 5_000, 'the rerun of "slow" to complete');
    const rerun = current.startsOf('slow')[1];
    const after = rerun.at - killedAt;
    await sleep(LEASE_MS + 500);
    expect(current.startsOf('slow').map((start) => ({ instance: start.instance, attempt: start.attempt }))).toEqual([
      { instance: victim?.name, attempt: 1 },
      { instance: survivor.name, attempt: 2 },
    ]);
    expect(current.endsOf('slow')).toEqual([expect.objectContaining({ instance: survivor.name, attempt: 2 })]);
    expect(rerun.dueAt).toBe(current.startsOf('slow')[0].dueAt);
    // Taken over once the lease ran out: the last renewal (every lease / 3) leased it at least 2/3 of a lease past the kill.
    expect(after).toBeGreaterThanOrEqual(LEASE_MS / 2);
    expect(after).toBeLessThanOrEqual(LEASE_MS + 4_000);
    expect(await survivor.count()).toBe(0);

    // With no lease option a claim leases the action for 30 s: the lease ends about 30 s after the claim.
    await survivor.close();
    const plain = await current.spawn('c3', { driver: 'postgres', consume: true });
    await plain.call({ op: 'schedule', key: 'default-lease', delay: 100, payload: { armId: 'dl-1', holdMs: 10_000 } });
    await current.until(() => current.startsOf('default-lease').length === 1, 10_000, 'the run of "default-lease"');
    const [row] = await server.admin(
      `SELECT r.lease_until - floor(extract(epoch FROM clock_timestamp()) * 1000) AS left_ms FROM ${current.schema}.runs r WHERE 'default-lease' = ANY (r.members)`,
      [],
      true,
    );
    const leftMs = Number(row.left_ms);
    report(`postgres, kill -9 mid-handler (lease 2s): rerun as attempt 2 ${after} ms after the kill; default lease: ${leftMs} ms left on the claim`);
    expect(leftMs).toBeGreaterThan(20_000);
    expect(leftMs).toBeLessThanOrEqual(30_000);
  }, 60_000);
});
