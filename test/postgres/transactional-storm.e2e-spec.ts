// Transactional handlers under a fault storm: 2-3 instances in processes of
// their own (test/postgres/support/ledger-worker.ts) run a handler that is
// not idempotent (one ledger row per run, no unique key, and a follow-up
// action), while the test kill -9s instances and starts new ones, cuts the
// instances' connections with pg_terminate_backend, crashes the server
// (SIGKILL of PostgreSQL and its backends, then a boot that recovers from the
// WAL: what pg_ctl restart -m immediate does) and loses the reply of
// handlers' COMMITs (the suite's TCP fault proxy, which every instance
// connects through). Transactional, every action's ledger row is there once
// and its follow-up exists exactly for the run that wrote it; the same storm
// with the plain handler leaves duplicates, so the check can fail.
// Seeded (FAULT_SEED replays a run); the seed is in every assertion's subject.
import { join } from 'node:path';
import { Fleet, Instance, report, sleep } from '../instances/support/instances';
import type { ScheduleItem } from '../instances/support/protocol';
import { Random as Draw, seededRandom } from '../support/seeded-random';
import { TestPostgresServer } from '../support/postgres-server';
import { TcpFaultProxy } from './support/tcp-fault-proxy';

const TOPIC = 'storm.credit';
const FOLLOW_UP = 'storm.follow-up';
const LEDGER_WORKER = join(__dirname, 'support', 'ledger-worker.ts');
const fromEnv = process.env.FAULT_SEED;
const SEED = fromEnv !== undefined && fromEnv !== '' ? Number(fromEnv) : 20_261_128;
/**
 * DELAY_STORM_FORCE_PLAIN=1 runs the transactional test's storm with the plain handler: its assertions must then
 * fail (a check of the check).
 */
const FORCE_PLAIN = process.env.DELAY_STORM_FORCE_PLAIN === '1';
/** Short, so the runs of a killed instance come back soon; the handlers' timeout is longer than a lease. */
const LEASE = '2s';
const HANDLER_TIMEOUT = '3s';
/** Every this many keys, the first run holds after its writes until it is given up (timeout or kill). */
const HOLD_EVERY = 25;

type Fault = 'kill' | 'terminate' | 'crash' | 'lost-commit';

interface StormResult {
  readonly seed: number;
  readonly keys: readonly string[];
  /** Ledger rows, by key: the run (instance#n) and attempt of each. */
  readonly rows: ReadonlyMap<string, ReadonlyArray<{ run: string; attempt: number }>>;
  /** Pending follow-ups, by key: the run whose transaction scheduled it. */
  readonly followUps: ReadonlyMap<string, string>;
  readonly pending: number;
  readonly dead: number;
  /** Runs that made their writes (reported 'start'), by run id. */
  readonly written: ReadonlySet<string>;
  /** The last output of instances that ended without being killed. */
  readonly crashed: readonly string[];
  readonly summary: string;
}

describe('postgres: transactional handlers under a fault storm (kill -9, pg_terminate_backend, server crash, lost COMMIT reply)', () => {
  let server: TestPostgresServer;
  let fleet: Fleet | undefined;
  let proxy: TcpFaultProxy | undefined;
  let schemas = 0;

  beforeAll(async () => {
    server = await TestPostgresServer.start();
  }, 60_000);
  afterEach(async () => {
    await fleet?.dispose();
    fleet = undefined;
    await proxy?.close();
    proxy = undefined;
  });
  afterAll(() => server.dispose());

  /** One storm on a schema and ledger of its own; returns what the database holds once nothing is pending. */
  async function storm(options: { transactional: boolean; seed: number; actions: number; spreadMs: number; faults: readonly Fault[] }): Promise<StormResult> {
    const { transactional, seed, actions, spreadMs } = options;
    const random: Draw = seededRandom(seed);
    const int = (min: number, max: number): number => min + Math.floor(random() * (max - min + 1));
    const schema = `storm_${process.pid}_${++schemas}`;
    const table = `public.${schema}_ledger`;
    // A plain table: nothing in it stops a second row for a key.
    await server.admin(`CREATE TABLE ${table} (key text NOT NULL, attempt integer NOT NULL, pid integer NOT NULL, run text NOT NULL)`, [], true);
    const faultProxy = await TcpFaultProxy.start(server.port);
    proxy = faultProxy;
    const url = new URL(server.url);
    url.port = String(faultProxy.port);
    const current = new Fleet({ url: url.href, prefix: schema, topic: TOPIC, entry: LEDGER_WORKER });
    fleet = current;
    let spawned = 0;
    const spawnOne = (): Promise<Instance> =>
      current.spawn(`w${++spawned}`, {
        driver: 'postgres',
        consume: true,
        lease: LEASE,
        wakeCheck: '1s',
        concurrency: 20,
        ledger: { table, followUpTopic: FOLLOW_UP, transactional, timeout: HANDLER_TIMEOUT, seed: int(1, 2 ** 31) },
      });
    // The first migrates the schema; the others find it done.
    const live: Instance[] = [await spawnOne()];
    live.push(...(await Promise.all([spawnOne(), spawnOne()])));

    // Due over spreadMs from `base`; k0 is due first and holds.
    const base = Date.now() + 1_500;
    const keys = Array.from({ length: actions }, (_, n) => `k${n}`);
    const items: ScheduleItem[] = keys.map((key, n) => ({
      key,
      at: n === 0 ? base : base + int(0, spreadMs),
      ...(n % HOLD_EVERY === 0 ? { payload: { holdMs: 60_000, holdAttempts: 1 } } : {}),
    }));
    await live[0].call({ op: 'scheduleMany', items, parallel: 8 }, 30_000);

    // The faults start once k0's first run has written: in the plain variant that row is committed and its run never
    // completes (it holds until its timeout or its instance's kill), so k0 is run again and written twice, whatever
    // the timing. In the transactional one, that run is rolled back.
    await current.until(() => current.startsOf('k0').length > 0, 15_000, "k0's first run to make its writes");
    const inFlight = (instance: Instance): number => {
      const ended = new Set(current.ends.filter((end) => end.instance === instance.name).map((end) => end.armId));
      return current.starts.filter((start) => start.instance === instance.name && !ended.has(start.armId)).length;
    };
    const done: string[] = [];
    let killsMidRun = 0;
    let terminated = 0;
    let lostCommits = 0;
    let downMs = 0;
    for (const fault of options.faults) {
      await sleep(int(200, 900));
      if (fault === 'kill') {
        // A random instance, among those with runs that wrote and have not returned if there are any (the kill then
        // lands between a run's writes and its commit); a new one takes its place.
        const busy = live.filter((instance) => inFlight(instance) > 0);
        const pool = busy.length > 0 ? busy : live;
        const victim = pool[int(0, pool.length - 1)];
        if (busy.length > 0) killsMidRun++;
        await victim.kill();
        live.splice(live.indexOf(victim), 1);
        live.push(await spawnOne());
        done.push(`kill ${victim.name}`);
      } else if (fault === 'terminate') {
        // The driver's connections, its handlers' pool and the plain handler's pool.
        const n = await server.terminateBackends("application_name LIKE 'nestjs-delay%'");
        terminated += n;
        done.push(`terminate ${n}`);
      } else if (fault === 'crash') {
        const at = Date.now();
        await server.kill();
        await sleep(int(200, 800));
        await server.boot();
        downMs = Date.now() - at;
        done.push(`crash ${downMs} ms`);
      } else if (!transactional) {
        // The plain handler's writes commit one by one: it sends no COMMIT of its own to lose.
        done.push('lost COMMIT skipped');
      } else {
        // The next two COMMITs the server runs answer into a reset connection: only the handlers' transactions
        // commit now (the migrations' COMMITs ran when their instances started, before this).
        const lost = faultProxy.resetOnReply('COMMIT', 2);
        await current.until(() => lost.at.length === 2, 15_000, 'two COMMIT replies to be lost');
        lostCommits += lost.at.length;
        done.push('lost COMMIT x2');
      }
    }
    const stormEnded = Date.now();

    const pendingOf = async (topic: string): Promise<number> => Number((await server.admin(`SELECT count(*)::int AS n FROM ${schema}.actions WHERE topic = $1`, [topic], true))[0].n);
    // Liveness only: every action is run to completion despite the storm.
    await current.until(async () => (await pendingOf(TOPIC)) === 0, 40_000, 'every action to complete');
    // The live instances' handlers have returned (a run given up may still be sleeping); then nothing is left to write.
    await current.until(() => live.every((instance) => inFlight(instance) === 0), 10_000, 'the running handlers to return');
    const drainedMs = Date.now() - stormEnded;
    // An instance that ended by itself crashed: the others took its runs over, but that is a failure of its own.
    const crashed = live.filter((instance) => !instance.alive).map((instance) => instance.tail());
    await current.dispose();

    const rows = new Map<string, Array<{ run: string; attempt: number }>>();
    for (const row of await server.admin(`SELECT key, attempt, run FROM ${table} ORDER BY key, attempt`, [], true)) {
      const key = String(row.key);
      rows.set(key, [...(rows.get(key) ?? []), { run: String(row.run), attempt: Number(row.attempt) }]);
    }
    const followUps = new Map<string, string>();
    for (const row of await server.admin(`SELECT key, payload FROM ${schema}.actions WHERE topic = $1`, [FOLLOW_UP], true)) {
      followUps.set(String(row.key), (JSON.parse(String(row.payload)) as { run: string }).run);
    }
    const dead = Number((await server.admin(`SELECT count(*)::int AS n FROM ${schema}.dead WHERE topic = $1`, [TOPIC], true))[0].n);
    const written = new Set(current.starts.map((start) => start.armId ?? ''));
    const rowCount = [...rows.values()].reduce((sum, list) => sum + list.length, 0);
    const committedRuns = new Set([...rows.values()].flat().map((row) => row.run));
    const leftNoRow = [...written].filter((run) => !committedRuns.has(run)).length;
    const summary =
      `${transactional ? 'transactional' : 'plain'} storm, seed ${seed}: ${actions} actions over ${spreadMs} ms, ${spawned} instances started; faults: ${done.join(', ')} ` +
      `(${killsMidRun} kill(s) with written runs in flight, ${terminated} connections terminated, ${lostCommits} COMMIT replies lost, server down ${downMs} ms); ` +
      `${written.size} runs wrote (${leftNoRow} of them left no row), ${rowCount} ledger rows for ${rows.size} keys, ${[...rows.values()].filter((list) => list.length > 1).length} key(s) with 2+ rows, ` +
      `${followUps.size} follow-ups, pending ${await pendingOf(TOPIC)}, dead ${dead}; drained ${drainedMs} ms after the last fault`;
    report(summary);
    return { seed, keys, rows, followUps, pending: await pendingOf(TOPIC), dead, written, crashed, summary };
  }

  it(`transactional: every action's ledger row once, its follow-up exactly for the run that committed, nothing lost, nothing for a rolled-back run (seed ${SEED})`, async () => {
    const result = await storm({
      transactional: !FORCE_PLAIN,
      seed: SEED,
      actions: 300,
      spreadMs: 12_000,
      faults: ['lost-commit', 'kill', 'terminate', 'kill', 'crash', 'terminate', 'kill', 'terminate'],
    });
    const { rows, followUps } = result;
    const notOnce = result.keys.filter((key) => rows.get(key)?.length !== 1).map((key) => `${key}: ${rows.get(key)?.length ?? 0} rows`);
    // The follow-up of a key exists iff a run of it committed, and it is that run's: a rolled-back run's follow-up is
    // gone with its ledger row.
    const followUpMismatches = [...new Set([...rows.keys(), ...followUps.keys()])]
      .filter((key) => rows.get(key)?.length !== 1 || followUps.get(key) !== rows.get(key)?.[0]?.run)
      .map((key) => `${key}: rows ${JSON.stringify(rows.get(key) ?? [])}, follow-up of ${followUps.get(key) ?? 'none'}`);
    // Runs that wrote and left nothing: rolled back (the held first runs among them, whose instance was killed or whose timeout ran out).
    const committed = new Set([...rows.values()].flat().map((row) => row.run));
    const rolledBack = [...result.written].filter((run) => !committed.has(run)).length;
    expect({ seed: result.seed, notOnce: notOnce.slice(0, 20), followUpMismatches: followUpMismatches.slice(0, 20), pending: result.pending, dead: result.dead, crashed: result.crashed }).toEqual({
      seed: SEED,
      notOnce: [],
      followUpMismatches: [],
      pending: 0,
      dead: 0,
      crashed: [],
    });
    // Every committed run reported its writes, and the storm did roll back runs that had written.
    expect([...committed].filter((run) => !result.written.has(run))).toEqual([]);
    expect({ seed: result.seed, rolledBack: rolledBack > 0 }).toEqual({ seed: SEED, rolledBack: true });
  }, 100_000);

  it(`plain (not transactional): the same handler under kill -9, pg_terminate_backend and a server crash writes some action twice (seed ${SEED + 1})`, async () => {
    // No lost COMMIT reply here: the plain handler's writes commit one by one, it sends no COMMIT of its own.
    const result = await storm({ transactional: false, seed: SEED + 1, actions: 150, spreadMs: 6_000, faults: ['kill', 'terminate', 'crash', 'kill'] });
    const twice = result.keys.filter((key) => (result.rows.get(key)?.length ?? 0) > 1);
    // Certain, not likely: k0's first run wrote its row and held until it was given up, so k0 ran again (nothing is
    // pending, nothing dead) and wrote again.
    expect({ seed: result.seed, k0Rows: (result.rows.get('k0')?.length ?? 0) > 1, pending: result.pending, dead: result.dead, crashed: result.crashed }).toEqual({
      seed: SEED + 1,
      k0Rows: true,
      pending: 0,
      dead: 0,
      crashed: [],
    });
    expect(twice.length).toBeGreaterThan(0);
  }, 60_000);
});
