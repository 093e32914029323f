import { INestApplication, Injectable } from '@nestjs/common';
import { DelayContext, DelayModuleOptions, DelayService, OnDelayExpired, postgresMigrations } from 'nestjs-delay';
import { Client, Pool } from 'pg';
import { bootDelayApp, pollUntil, sleep } from '../conformance/support/driver-fixture';
import { TestPostgresServer } from '../support/postgres-server';
import { DriverUnavailableError } from '../../libs/delay/src/errors/driver-unavailable.error';
import { PostgresDriver } from '../../libs/delay/src/drivers/postgres/postgres.driver';
import { postgresStatements } from '../../libs/delay/src/drivers/postgres/postgres-statements';
import { readClaimReply } from '../../libs/delay/src/drivers/postgres/postgres-claim-reply';
import { REAL_TIME_ON_TIME_MS } from '../support/on-time';

/** The claim's one-row reply as the rows it stood for: the head (member null), then one row per action taken. */
function claimRows(rows: ReadonlyArray<Record<string, unknown>>): Array<Record<string, unknown>> {
  const { head, taken } = readClaimReply(rows);
  return [{ ...head, member: null }, ...taken];
}

const TOPIC = 'pgops.work';

/** Runs of keys starting with "slow" take this long. */
let slowMs = 0;

@Injectable()
class Worker {
  readonly runs: Array<{ key: string; attempt: number; startedAt: number }> = [];

  @OnDelayExpired(TOPIC, { concurrency: 4 })
  async work(context: DelayContext): Promise<void> {
    this.runs.push({ key: context.key, attempt: context.attempt, startedAt: Date.now() });
    if (context.key.startsWith('slow')) await sleep(slowMs);
  }
}

/**
 * Operations and schema handling on the postgres driver: pause and resume
 * across instances, runNow, topics and health; migrations applied once by
 * instances starting together, `migrate: false` on a schema set up from
 * postgresMigrations(), and a clear refusal when the schema is missing.
 */
describe('postgres: operations and migrations', () => {
  let server: TestPostgresServer;
  const apps: INestApplication[] = [];
  let schemas = 0;

  beforeAll(async () => {
    server = await TestPostgresServer.start();
  }, 60_000);
  afterAll(() => server.dispose());
  afterEach(async () => {
    for (const app of apps.splice(0)) await app.close();
  });

  function options(schema: string, extra: Partial<{ migrate: boolean; wakeCheck: string; lease: string; pooler: 'session' | 'transaction' }> = {}): DelayModuleOptions {
    return { driver: { type: 'postgres', connectionString: server.url, schema, ...extra }, shutdownTimeout: '1s' };
  }

  async function boot(schema: string, extra: Parameters<typeof options>[1] = {}): Promise<{ delay: DelayService; worker: Worker }> {
    const app = await bootDelayApp(options(schema, extra), [Worker]);
    apps.push(app);
    return { delay: app.get(DelayService), worker: app.get(Worker) };
  }

  const fresh = (): string => `ops_${process.pid}_${++schemas}`;

  /** A schema with `keys` due now on TOPIC, written by a driver that consumes nothing (the test claims by hand); `more` writes more with it. */
  async function seedDue(schema: string, keys: readonly string[], more?: (driver: PostgresDriver) => Promise<unknown>): Promise<void> {
    const driver = new PostgresDriver({ type: 'postgres', connectionString: server.url, schema });
    await driver.connect();
    try {
      await driver.scheduleMany({
        topic: TOPIC,
        entries: keys.map((key) => ({ key, due: { delayMs: 0 }, payload: undefined, ifExists: 'replace' as const })),
        maxPastMs: 60_000,
      });
      await more?.(driver);
    } finally {
      await driver.close();
    }
  }

  it('pause holds every instance; resume runs what waited, and wakes the consumers at once', async () => {
    const schema = fresh();
    // A long safety re-check: the runs after resume can only be prompt if resume woke the consumers.
    const a = await boot(schema, { wakeCheck: '30s' });
    const b = await boot(schema, { wakeCheck: '30s' });
    await a.delay.pause(TOPIC);
    await a.delay.pause(TOPIC);
    expect(await b.delay.isPaused(TOPIC)).toBe(true);
    await b.delay.scheduleMany(TOPIC, [{ key: 'p1', delay: 50 }, { key: 'p2', delay: 100 }]);
    await sleep(600);
    expect([...a.worker.runs, ...b.worker.runs]).toEqual([]);
    expect((await a.delay.get(TOPIC, 'p1'))?.paused).toBe(true);
    expect(await a.delay.topics()).toEqual([{ topic: TOPIC, waiting: 2, running: 0, dead: 0, paused: true }]);

    const resumedAt = Date.now();
    await b.delay.resume(TOPIC);
    await b.delay.resume(TOPIC);
    // The two calls' round trips (slow on a busy machine), then at most REAL_TIME_ON_TIME_MS: far less than wakeCheck.
    const bound = Date.now() - resumedAt + REAL_TIME_ON_TIME_MS;
    expect(await a.delay.isPaused(TOPIC)).toBe(false);
    await pollUntil(() => a.worker.runs.length + b.worker.runs.length === 2, 'both runs after resume', bound + 1_000);
    const runs = [...a.worker.runs, ...b.worker.runs];
    expect(runs.map((run) => run.key).sort()).toEqual(['p1', 'p2']);
    for (const run of runs) expect(run.startedAt - resumedAt).toBeLessThan(bound);
    await pollUntil(async () => (await a.delay.topics()).length === 0, 'the topic to empty', 3_000);
  });

  it('runNow makes a waiting action due now; health reports the lag of a topic left unclaimed', async () => {
    const schema = fresh();
    const { delay, worker } = await boot(schema, { wakeCheck: '30s' });
    await delay.schedule(TOPIC, 'later', { delay: 3_600_000, payload: 'p' });
    expect(await delay.runNow(TOPIC, 'nobody')).toBe(false);
    expect(await delay.runNow(TOPIC, 'later')).toBe(true);
    await pollUntil(() => worker.runs.length === 1, 'the run made due now', 3_000);

    const health = await delay.health();
    expect(health).toMatchObject({ driver: 'postgres', up: true, topics: [{ topic: TOPIC, consuming: true, consumerAlive: true, lagMs: 0, paused: false }] });
    await delay.pause(TOPIC);
    await delay.schedule(TOPIC, 'stuck', { delay: 0 });
    await sleep(300);
    const lagging = await delay.health();
    expect(lagging.topics[0]).toMatchObject({ topic: TOPIC, paused: true });
    expect(lagging.topics[0].lagMs).toBeGreaterThanOrEqual(200);
  });

  it('notifies only when a write makes the topic\'s earliest due time earlier', async () => {
    const schema = fresh();
    const { delay } = await boot(schema);
    const listener = new Client({ connectionString: server.url });
    const heard: string[] = [];
    await listener.connect();
    listener.on('notification', (message) => heard.push(message.payload ?? ''));
    await listener.query(`LISTEN ${schema}`);
    try {
      const first = await delay.schedule(TOPIC, 'a', { delay: 60_000 });
      await delay.schedule(TOPIC, 'b', { delay: 120_000 });
      await delay.scheduleMany(TOPIC, [{ key: 'c', delay: 90_000 }, { key: 'd', delay: 100_000 }]);
      await delay.collect(TOPIC, 'batch', 1, { window: '5m' });
      await delay.reschedule(TOPIC, 'b', { delay: 70_000 });
      const earlier = await delay.schedule(TOPIC, 'e', { delay: 30_000 });
      const moved = await delay.reschedule(TOPIC, 'd', { delay: 10_000 });
      await sleep(200);
      // Any role may LISTEN: a notification carries the topic's tag, keyed by a value only the driver's roles can
      // read, and nothing of when it is due.
      const [{ tag }] = await server.admin(`SELECT ${schema}.wake_tag($1) AS tag`, [TOPIC], true);
      expect(String(tag)).toMatch(/^[0-9a-f]{16}$/);
      expect(heard).toEqual([tag, tag, tag]);
      expect(heard.join(' ')).not.toContain(TOPIC);
      for (const due of [first.dueAt, earlier.dueAt, moved?.dueAt]) expect(heard.join(' ')).not.toContain(String(due?.getTime()));
    } finally {
      await listener.end();
    }
  });

  it("on the application's own pool: runs, borrows one client for LISTEN, and leaves the pool open at shutdown", async () => {
    const pool = new Pool({ connectionString: server.url, max: 5 });
    try {
      const app = await bootDelayApp({ driver: { type: 'postgres', pool, schema: fresh() }, shutdownTimeout: '1s' }, [Worker]);
      const delay = app.get(DelayService);
      await delay.schedule(TOPIC, 'pooled', { delay: 100 });
      await pollUntil(() => app.get(Worker).runs.length === 1, 'the run', 3_000);
      await app.close();
      expect((await pool.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
    } finally {
      await pool.end();
    }
  });

  it("prepares the claim once per connection, and survives the connection losing it; behind a transaction pooler it prepares nothing", async () => {
    for (const pooler of ['session', 'transaction'] as const) {
      // The application's own pool: one client for LISTEN (session only), one for every statement, which the test then borrows.
      const pool = new Pool({ connectionString: server.url, max: pooler === 'session' ? 2 : 1 });
      let app: INestApplication | undefined;
      try {
        app = await bootDelayApp({ driver: { type: 'postgres', pool, schema: fresh(), pooler }, shutdownTimeout: '1s' }, [Worker]);
        const worker = app.get(Worker);
        const delay = app.get(DelayService);
        await delay.schedule(TOPIC, `prepared-${pooler}`, { delay: 100 });
        await pollUntil(() => worker.runs.length === 1, 'the run', 5_000);
        const client = await pool.connect();
        let prepared: string[];
        try {
          prepared = (await client.query<{ statement: string }>('SELECT statement FROM pg_prepared_statements')).rows.map((row) => row.statement);
        } finally {
          client.release();
        }
        if (pooler === 'session') {
          expect(prepared.filter((text) => text.includes(`.claim_taken($1::`))).toHaveLength(1);
          // Something else empties the connection's prepared statements: the driver's next call on it is refused at
          // Bind (nothing ran), so it drops that connection and sends the call again on another.
          await pool.query('DEALLOCATE ALL');
          await delay.schedule(TOPIC, 'after-deallocate', { delay: 100 });
          await pollUntil(() => worker.runs.length === 2, 'a run after DEALLOCATE ALL', 5_000);
        } else {
          expect(prepared).toEqual([]);
        }
      } finally {
        // Closed before the pool ends: the pool waits for the client the driver holds for LISTEN.
        await app?.close();
        await pool.end();
      }
    }
  });

  it('a handler running longer than its lease keeps it (renewed): no other instance runs it meanwhile', async () => {
    const schema = fresh();
    // Two and a half leases long. The lease is 2 s, renewed about every 670 ms: only renewals stalled for about 1.3 s
    // (a frozen instance rather than a busy machine) would let the other instance take it, which is right then.
    slowMs = 5_000;
    const a = await boot(schema, { lease: '2s' });
    const b = await boot(schema, { lease: '2s' });
    await a.delay.schedule(TOPIC, 'slow-1', { delay: 50 });
    await pollUntil(async () => a.worker.runs.length + b.worker.runs.length >= 1 && (await a.delay.count(TOPIC)) === 0, 'the slow run and its ack', 20_000);
    expect([...a.worker.runs, ...b.worker.runs].map((run) => [run.key, run.attempt])).toEqual([['slow-1', 1]]);
  });

  it('a shutdown that times out hands the running action back: another instance runs it at once, same attempt', async () => {
    const schema = fresh();
    slowMs = 3_000;
    const doomed = await bootDelayApp({ ...options(schema), shutdownTimeout: 200 }, [Worker]);
    await doomed.get(DelayService).schedule(TOPIC, 'slow-handed-back', { delay: 0 });
    await pollUntil(() => doomed.get(Worker).runs.length === 1, 'the run', 3_000);
    const survivor = await boot(schema, { wakeCheck: '30s' });
    await doomed.close();
    await pollUntil(() => survivor.worker.runs.length === 1, 'the handed-back run', 3_000);
    expect(survivor.worker.runs.map((run) => [run.key, run.attempt])).toEqual([['slow-handed-back', 1]]);
  });

  it('a drain resumes each claim where the last ended, yet an action due earlier than that is not left for the end', async () => {
    const schema = fresh();
    slowMs = 25;
    const { delay, worker } = await boot(schema);
    // 400 runs of 25 ms, 4 at a time: a drain of a few seconds, claimed 4 by 4, each claim resuming where the last ended.
    const dueAt = new Date(Date.now() + 300);
    await delay.scheduleMany(TOPIC, Array.from({ length: 400 }, (_, n) => ({ key: `slow-${String(n).padStart(3, '0')}`, at: dueAt })));
    await pollUntil(() => worker.runs.length >= 20, 'the drain to start', 10_000);
    // Due before everything the drain has taken so far: behind every later claim's resume point.
    await delay.schedule(TOPIC, 'early', { at: new Date(dueAt.getTime() - 100) });
    await pollUntil(() => worker.runs.length === 401, 'the drain and the early action', 60_000);
    const early = worker.runs.findIndex((run) => run.key === 'early');
    // At most a second's worth of claims goes by before a claim scans from the topic's first row again (about 160 runs here).
    expect(early).toBeGreaterThan(0);
    expect(early).toBeLessThan(360);
    expect(new Set(worker.runs.map((run) => run.key)).size).toBe(401);
  }, 90_000);

  it("a drain records its completions with its next claim: one commit per claim, every action run once", async () => {
    const schema = fresh();
    const driver = new PostgresDriver({ type: 'postgres', connectionString: server.url, schema });
    await driver.connect();
    // Statements the driver sends, counted on its own connection (the real one: every statement still goes to the server).
    type Send = (sql: string, params?: readonly unknown[]) => Promise<unknown[]>;
    const connection = (driver as unknown as { connection: { query: Send; queryPrepared: Send } }).connection;
    const sent: string[] = [];
    for (const method of ['query', 'queryPrepared'] as const) {
      const send = connection[method].bind(connection);
      connection[method] = (sql, params) => {
        sent.push(sql);
        return send(sql, params);
      };
    }
    const ran: string[] = [];
    await driver.scheduleMany({
      topic: TOPIC,
      entries: Array.from({ length: 200 }, (_, n) => ({ key: `d-${n}`, due: { delayMs: 0 }, payload: undefined, ifExists: 'replace' as const })),
      maxPastMs: 60_000,
    });
    sent.length = 0;
    await server.admin(
      `CREATE TABLE ${schema}.test_changes (op text NOT NULL);
       CREATE FUNCTION ${schema}.test_count_change() RETURNS trigger LANGUAGE plpgsql AS $fn$
       BEGIN INSERT INTO ${schema}.test_changes VALUES (TG_OP); RETURN NULL; END $fn$;
       CREATE TRIGGER test_count AFTER UPDATE OR DELETE ON ${schema}.actions FOR EACH ROW EXECUTE FUNCTION ${schema}.test_count_change();`,
      [],
      true,
    );
    await driver.start({ topics: new Map([[TOPIC, 4]]), handle: (delivery) => (ran.push(delivery.key), Promise.resolve({ kind: 'completed' as const })) });
    try {
      await pollUntil(async () => ran.length >= 200 && (await driver.count(TOPIC)) === 0, 'the drain to end with every row deleted', 30_000);
      expect(ran.length).toBe(200);
      expect(new Set(ran).size).toBe(200);
      const claims = sent.filter((sql) => sql.includes(`${schema}.claim_taken($1::`)).length;
      const completions = sent.filter((sql) => sql.includes(`${schema}.complete($1::`)).length;
      // 4 slots: at least 50 claims. The last runs' completions have no claim to ride on (and a claim may find its
      // slots still held), so a few go on their own; before, every claim's runs had a DELETE of their own (50 or more).
      expect(claims).toBeGreaterThanOrEqual(50);
      expect(completions).toBeLessThanOrEqual(10);
      // A claim writes nothing to the rows it takes: the drain changed none of them (the trigger counts), only deleted
      // them. Its runs rows are all deleted once their runs are over (the last ones by the next claim, at the latest
      // the safety re-check, wakeCheck: 10 s by default).
      expect(await server.admin(`SELECT op, count(*)::integer AS n FROM ${schema}.test_changes GROUP BY op`, [], true)).toEqual([{ op: 'DELETE', n: 200 }]);
      await pollUntil(async () => Number((await server.admin(`SELECT count(*) AS n FROM ${schema}.runs`, [], true))[0].n) === 0, 'the runs rows to go', 15_000);
    } finally {
      await driver.drain(1_000);
      await driver.close();
    }
  }, 60_000);

  it("at shutdown the consumer deletes the runs rows of its finished claims itself (no claim follows to carry them)", async () => {
    const schema = fresh();
    // A long safety re-check: no claim comes after the runs below, so only the shutdown can delete their rows.
    const { delay, worker } = await boot(schema, { wakeCheck: '60s' });
    // Runs that last a second: any claim the writes' own wake-ups bring comes while they run, not after.
    slowMs = 1_000;
    await delay.scheduleMany(TOPIC, ['slow-f1', 'slow-f2', 'slow-f3'].map((key) => ({ key, delay: 0 })));
    await pollUntil(async () => worker.runs.length === 3 && (await delay.count(TOPIC)) === 0, 'the three runs and their completions', 10_000);
    expect(Number((await server.admin(`SELECT count(*) AS n FROM ${schema}.runs`, [], true))[0].n)).toBeGreaterThan(0);
    await apps.pop()?.close();
    // Well within the claims' lease (30 s): a row left behind would only go once its lease ran out.
    await pollUntil(async () => Number((await server.admin(`SELECT count(*) AS n FROM ${schema}.runs`, [], true))[0].n) === 0, 'the runs rows to go at shutdown', 5_000);
  });

  it('claims need READ COMMITTED: connections defaulting to another level are refused at connect, and a claim under it is refused', async () => {
    const schema = fresh();
    const repeatable = { connectionString: server.url, options: '-c default_transaction_isolation=repeatable\\ read' };
    const pool = new Pool(repeatable);
    try {
      const refused = new PostgresDriver({ type: 'postgres', pool, schema });
      await expect(refused.connect()).rejects.toThrow(DriverUnavailableError);
      await expect(new PostgresDriver({ type: 'postgres', pool, schema }).connect()).rejects.toThrow(/run under repeatable read by default; it needs READ COMMITTED/);
    } finally {
      await pool.end();
    }
    // The claim itself refuses to run under another level: its turns would not protect a snapshot taken before them.
    // (The refused starts created nothing: the schema comes from a start under READ COMMITTED.)
    await seedDue(schema, []);
    const client = new Client(repeatable);
    await client.connect();
    try {
      const claim = client.query(postgresStatements(schema).claim, [TOPIC, 1, 1_000, 'rr', 0, null, null, [], [], [], 1_000, true]);
      await expect(claim).rejects.toMatchObject({ code: 'NDIS1' });
    } finally {
      await client.end();
    }
    // The same from a connection string: refused at connect, with what to do.
    const url = new URL(server.url);
    url.searchParams.set('options', '-c default_transaction_isolation=serializable');
    await expect(new PostgresDriver({ type: 'postgres', connectionString: url.href, schema }).connect()).rejects.toThrow(/run under serializable by default; it needs READ COMMITTED/);
  });

  it('a start refused for its isolation level creates nothing: a database defaulting to repeatable read is left without the schema', async () => {
    const database = `rr_${process.pid}`;
    const url = await server.createDatabase(database);
    try {
      await server.admin(`ALTER DATABASE ${database} SET default_transaction_isolation = 'repeatable read'`);
      const schema = fresh();
      await expect(new PostgresDriver({ type: 'postgres', connectionString: url, schema }).connect()).rejects.toThrow(/run under repeatable read by default; it needs READ COMMITTED/);
      await expect(new PostgresDriver({ type: 'postgres', connectionString: url, schema, migrate: false }).connect()).rejects.toThrow(/run under repeatable read by default/);
      const client = new Client({ connectionString: url });
      await client.connect();
      try {
        const { rows } = await client.query('SELECT to_regnamespace($1::text) IS NOT NULL AS present', [schema]);
        expect(rows).toEqual([{ present: false }]);
      } finally {
        await client.end();
      }
    } finally {
      await server.dropDatabase(database);
    }
  });

  it('claims of one topic take turns: a claim waits for the one before it to commit (or, past its wait, takes nothing), then takes none of what that one took, and its lease starts after its turn', async () => {
    const schema = fresh();
    await seedDue(schema, ['t1', 't2', 't3', 't4']);
    const sql = postgresStatements(schema);
    const first = new Client({ connectionString: server.url });
    const second = new Client({ connectionString: server.url, statement_timeout: 10_000 });
    await first.connect();
    await second.connect();
    try {
      const args = (claimId: string, turnWaitMs = 10_000): unknown[] => [TOPIC, 2, 60_000, claimId, 0, null, null, [], [], [], turnWaitMs, true];
      // The first claim runs in a transaction left open: it has taken its rows, and has not committed.
      await first.query('BEGIN');
      const firstTook = claimRows((await first.query(sql.claim, args('first'))).rows).filter((row) => row.member !== null).map((row) => String(row.member));
      expect(firstTook).toEqual(['t1', 't2']);
      // A claim that cannot have its turn within its wait takes nothing and says so (busy); it is no error.
      const [busy, ...none] = claimRows((await second.query(sql.claim, args('busy', 50))).rows);
      expect([busy.busy, none.length]).toEqual([true, 0]);
      const secondPid = (await second.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0].pid;
      const secondClaim = second.query(sql.claim, args('second'));
      // The second claim waits for its turn (on the lock of the topic's row in turns), not skipping past it.
      await pollUntil(
        async () => (await first.query(`SELECT wait_event FROM pg_stat_activity WHERE pid = $1`, [secondPid])).rows[0]?.wait_event === 'transactionid',
        'the second claim to wait for its turn',
        5_000,
      );
      const beforeCommit = Number((await first.query(`SELECT ${schema}.clock_ms(NULL) AS now`)).rows[0].now);
      await first.query('COMMIT');
      const secondTook = claimRows((await secondClaim).rows).filter((row) => row.member !== null).map((row) => String(row.member));
      expect(secondTook).toEqual(['t3', 't4']);
      // Its lease runs from its turn, not from when it was sent: however long it waited, it holds a whole lease.
      const [record] = await server.admin(`SELECT lease_until FROM ${schema}.runs WHERE claim_id = 'second'`, [], true);
      expect(Number(record.lease_until)).toBeGreaterThanOrEqual(beforeCommit + 60_000);
    } finally {
      await first.end();
      await second.end();
    }
  });

  it("an older instance's claim (migration 1's claim, a row per action) and claim_taken take turns on one topic: neither waits past the other's commit for nothing, and no action is taken twice", async () => {
    const schema = fresh();
    await seedDue(schema, ['k1', 'k2', 'k3', 'k4', 'k5']);
    const sql = postgresStatements(schema);
    // The statement an instance of the code before migration 6 sends.
    const older = `SELECT * FROM ${schema}.claim($1::text, $2::int4, $3::int8, $4::text, $5::int4, $6::int8, $7::text, $8::text[], $9::int8[], $10::text[], $11::int8, $12::bool)`;
    const args = (claimId: string, limit: number): unknown[] => [TOPIC, limit, 60_000, claimId, 0, null, null, [], [], [], 10_000, true];
    const oldClient = new Client({ connectionString: server.url });
    const newClient = new Client({ connectionString: server.url, statement_timeout: 10_000 });
    await oldClient.connect();
    await newClient.connect();
    try {
      // The older claim holds the topic's turn in a transaction left open.
      await oldClient.query('BEGIN');
      const oldTook = (await oldClient.query(older, args('old', 2))).rows.filter((row) => row.member !== null).map((row) => String(row.member));
      expect(oldTook).toEqual(['k1', 'k2']);
      const newPid = (await newClient.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0].pid;
      const newClaim = newClient.query(sql.claim, args('new', 10));
      await pollUntil(
        async () => (await oldClient.query(`SELECT wait_event FROM pg_stat_activity WHERE pid = $1`, [newPid])).rows[0]?.wait_event === 'transactionid',
        'the new claim to wait for its turn',
        5_000,
      );
      await oldClient.query('COMMIT');
      const [head, ...newTook] = claimRows((await newClaim).rows);
      expect([head.busy, newTook.map((row) => String(row.member))]).toEqual([false, ['k3', 'k4', 'k5']]);
      // And the other way round: the new claim's runs are running for the older claim, which takes nothing.
      const again = (await oldClient.query(older, args('old-again', 10))).rows.filter((row) => row.member !== null);
      expect(again).toEqual([]);
    } finally {
      await oldClient.end();
      await newClient.end();
    }
  });

  it("claim_taken's one-row reply carries each action as it is stored: payloads with quotes, backslashes and any character, a payload of none, a batch's items and its re-filed member", async () => {
    const schema = fresh();
    const odd = 'quote " backslash \\ newline \n tab \t unit \u001f emoji \u{1F600} é';
    await seedDue(schema, [], async (driver) => {
      await driver.scheduleMany({
        topic: TOPIC,
        entries: [
          { key: 'odd', due: { delayMs: 0 }, payload: odd, ifExists: 'replace' as const },
          { key: 'none', due: { delayMs: 0 }, payload: undefined, ifExists: 'replace' as const },
        ],
        maxPastMs: 60_000,
      });
      await driver.collect({ topic: TOPIC, key: 'b', item: 'one "1"', windowMs: 1, maxWaitMs: undefined, slide: false, maxItems: 10 });
      await driver.collect({ topic: TOPIC, key: 'b', item: 'two', windowMs: 1, maxWaitMs: undefined, slide: false, maxItems: 10 });
    });
    await server.admin(`UPDATE ${schema}.actions SET due_at = 1000`);
    const claimer = new Client({ connectionString: server.url, statement_timeout: 10_000 });
    await claimer.connect();
    try {
      const [head, ...taken] = claimRows((await claimer.query(postgresStatements(schema).claim, [TOPIC, 10, 60_000, 'c', 0, null, null, [], [], [], 1_000, true])).rows);
      expect(head.busy).toBe(false);
      const stored = await server.admin(`SELECT member, token FROM ${schema}.actions ORDER BY member`, [], true);
      const byKey = new Map(taken.map((row) => [String(row.key), row]));
      expect([...byKey.keys()].sort()).toEqual(['b', 'none', 'odd']);
      expect(byKey.get('odd')).toMatchObject({ member: 'odd', payload: odd, batch: false, items: null, attempt: 1, due_at: 1000 });
      expect(byKey.get('none')).toMatchObject({ member: 'none', payload: null, batch: false });
      expect(byKey.get('b')).toMatchObject({ batch: true, items: ['one "1"', 'two'] });
      // The batch was re-filed under its own id as it was claimed: the member the reply names is the stored one.
      expect(String(byKey.get('b')?.member).startsWith('b\u001f')).toBe(true);
      for (const row of taken) expect(stored).toContainEqual({ member: row.member, token: String(row.token) });
    } finally {
      await claimer.end();
    }
  });

  it("a claim that scans past a resume point still skips every running action past it: those of other claims, and a batch re-filed by the claim that took it", async () => {
    const schema = fresh();
    await seedDue(schema, ['a1', 'a2', 'c1', 'c2'], (driver) =>
      driver.collect({ topic: TOPIC, key: 'b', item: '1', windowMs: 1, maxWaitMs: undefined, slide: false, maxItems: 10 }),
    );
    // One due time for all: the claims take them in member order, a1 a2 b c1 c2.
    await server.admin(`UPDATE ${schema}.actions SET due_at = 1000`);
    const sql = postgresStatements(schema);
    const claimer = new Client({ connectionString: server.url, statement_timeout: 10_000 });
    await claimer.connect();
    try {
      const claim = async (claimId: string, limit: number, resume: string | null): Promise<{ took: string[]; last: string | null }> => {
        const [head, ...rows] = claimRows((await claimer.query(sql.claim, [TOPIC, limit, 60_000, claimId, 0, resume === null ? null : 1000, resume, [], [], [], 1_000, resume === null])).rows);
        return { took: rows.map((row) => String(row.key)), last: head.last_member === null ? null : String(head.last_member) };
      };
      // The first claim takes a1, a2 and the open batch b, which it re-files under its own id (past "b" in member order).
      const first = await claim('first', 3, null);
      expect(first).toEqual({ took: ['a1', 'a2', 'b'], last: 'b' });
      const [record] = await server.admin(`SELECT last_member FROM ${schema}.runs WHERE claim_id = 'first'`, [], true);
      expect(String(record.last_member).startsWith('b\u001f')).toBe(true);
      // Resuming where the first ended: the re-filed batch is past that point, and running; c1 is taken.
      expect((await claim('second', 1, first.last)).took).toEqual(['c1']);
      // Resuming far behind both (another consumer's resume point): a2, b and c1 are running under claims that end past
      // it; only c2 is left to take.
      expect((await claim('third', 10, 'a1')).took).toEqual(['c2']);
    } finally {
      await claimer.end();
    }
  });

  it('what a claim that resumes reads: only the runs rows that end past its resume point, every runs row that holds ticks for the ticks, and expired leases only when it is asked to look', async () => {
    const schema = fresh();
    await seedDue(schema, ['a1', 'c2', 't1']);
    // One due time for all; t1 is a recurring tick (claimed besides the slots, from the first row).
    await server.admin(`UPDATE ${schema}.actions SET due_at = 1000, tick = (member = 't1')`);
    const sql = postgresStatements(schema);
    const claimer = new Client({ connectionString: server.url, statement_timeout: 10_000 });
    await claimer.connect();
    try {
      const claim = async (claimId: string, limit: number, ticks: number, resume: string | null, takeBack: boolean): Promise<{ head: Record<string, unknown>; took: string[] }> => {
        const [head, ...rows] = claimRows((await claimer.query(sql.claim, [TOPIC, limit, 60_000, claimId, ticks, resume === null ? null : 1000, resume, [], [], [], 1_000, takeBack])).rows);
        return { head, took: rows.map((row) => String(row.member)) };
      };
      // The tick is taken, and its claim's runs row says it holds ticks.
      expect((await claim('ticks', 0, 64, null, true)).took).toEqual(['t1']);
      expect(await server.admin(`SELECT ticks FROM ${schema}.runs WHERE claim_id = 'ticks'`, [], true)).toEqual([{ ticks: true }]);
      // A claim resuming past every row still sees it running: not taken again, none left.
      const again = await claim('ticks-again', 0, 64, 'z', false);
      expect([again.took, again.head.more_ticks]).toEqual([[], false]);
      // A runs row planted by hand that names c2 but ends before a1: a claim from the first row reads it (c2 is
      // running, only a1 is taken); a claim resuming at a1 does not read it, and takes c2.
      const [c2] = await server.admin(`SELECT token FROM ${schema}.actions WHERE member = 'c2'`, [], true);
      await server.admin(
        `INSERT INTO ${schema}.runs (topic, claim_id, lease_until, members, tokens, last_due, last_member, ticks) VALUES ($1, 'planted', 9000000000000, ARRAY['c2'], ARRAY[$2::bigint], 1000, 'a0', false)`,
        [TOPIC, c2.token],
      );
      expect((await claim('from-first', 10, 0, null, false)).took).toEqual(['a1']);
      expect((await claim('resumed', 10, 0, 'a1', false)).took).toEqual(['c2']);
      // An expired lease is taken back only by a claim asked to look.
      await server.admin(`UPDATE ${schema}.runs SET lease_until = 0 WHERE claim_id = 'ticks'`);
      expect((await claim('no-look', 0, 0, 'z', false)).head.revived).toBe(0);
      expect((await claim('look', 0, 0, null, true)).head.revived).toBe(1);
    } finally {
      await claimer.end();
    }
  });

  it('the completions a claim carries: if one is held by another transaction the claim does not wait, and leaves them all to the complete statement; an expired lease among them is completed, not revived', async () => {
    const schema = fresh();
    await seedDue(schema, ['held', 'free', 'expired']);
    const sql = postgresStatements(schema);
    const claimer = new Client({ connectionString: server.url, statement_timeout: 3_000 });
    const holder = new Client({ connectionString: server.url });
    await claimer.connect();
    await holder.connect();
    try {
      // Parameters: topic, limit, lease ms, claim id, ticks, resume point (due time, member), carried members, carried tokens, finished claims, turn wait, take back expired leases.
      const claim = async (limit: number, claimId: string, carried: ReadonlyArray<Record<string, unknown>>): Promise<Array<Record<string, unknown>>> =>
        claimRows((await claimer.query(sql.claim, [TOPIC, limit, 60_000, claimId, 0, null, null, carried.map((row) => row.member), carried.map((row) => row.token), [], 1_000, true])).rows);
      const taken = [
        ...(await claim(1, 'first', [])).filter((row) => row.member !== null),
        ...(await claim(2, 'second', [])).filter((row) => row.member !== null),
      ];
      expect(taken.map((row) => row.member).sort()).toEqual(['expired', 'free', 'held']);
      // Due together, claimed in key order: the first claim took 'expired', and its lease has run out (its renewals
      // failed, say): a claim would revive that run as a crashed one's.
      expect(taken[0].member).toBe('expired');
      await claimer.query(`UPDATE ${schema}.runs SET lease_until = 0 WHERE claim_id = 'first'`);
      // Your transaction holds the row of 'held' (a cancel or replace of that key, not committed yet).
      await holder.query('BEGIN');
      await holder.query(`SELECT 1 FROM ${schema}.actions WHERE topic = $1 AND member = 'held' FOR UPDATE`, [TOPIC]);
      // The claim does not wait for it (3 s statement_timeout): the completions it carried are all left (the consumer
      // then sends them with the complete statement), and the expired run among them is not revived either.
      const [held] = await claim(1, 'third', taken);
      expect([held.completed, held.revived]).toEqual([0, 0]);
      const all = await holder.query<{ member: string }>(`SELECT member FROM ${schema}.actions WHERE topic = $1 ORDER BY member`, [TOPIC]);
      expect(all.rows.map((row) => row.member)).toEqual(['expired', 'free', 'held']);
      // The free ones, carried again: deleted, the expired one completed, not revived.
      const [head] = await claim(1, 'fourth', taken.filter((row) => row.member !== 'held'));
      expect([head.completed, head.revived]).toEqual([2, 0]);
      const left = await holder.query<{ member: string }>(`SELECT member FROM ${schema}.actions WHERE topic = $1 ORDER BY member`, [TOPIC]);
      expect(left.rows.map((row) => row.member)).toEqual(['held']);
      await holder.query('COMMIT');
      // The complete statement takes what the claim left.
      const heldRow = taken.find((row) => row.member === 'held');
      await claimer.query(sql.complete, [TOPIC, [heldRow?.member], [heldRow?.token]]);
      expect((await claimer.query(`SELECT count(*)::int AS n FROM ${schema}.actions`)).rows).toEqual([{ n: 0 }]);
    } finally {
      await holder.end();
      await claimer.end();
    }
  });

  it('reports created, replaced and kept; a key given twice in one scheduleMany sees its first arming', async () => {
    const driver = new PostgresDriver({ type: 'postgres', connectionString: server.url, schema: fresh() });
    await driver.connect();
    try {
      const base = { topic: TOPIC, key: 'k', due: { delayMs: 60_000 }, payload: '1', maxPastMs: 1_000 } as const;
      const outcomes = [
        (await driver.schedule({ ...base, ifExists: 'replace' })).outcome,
        (await driver.schedule({ ...base, ifExists: 'replace' })).outcome,
        (await driver.schedule({ ...base, ifExists: 'keep' })).outcome,
        (await driver.schedule({ ...base, key: 'k2', ifExists: 'keep' })).outcome,
      ];
      const many = await driver.scheduleMany({
        topic: TOPIC,
        maxPastMs: 1_000,
        entries: [
          { ...base, key: 'k3', payload: '"a"', ifExists: 'replace' },
          { ...base, key: 'k3', payload: '"b"', ifExists: 'keep' },
          { ...base, key: 'k3', payload: '"c"', ifExists: 'replace' },
        ],
      });
      expect(outcomes).toEqual(['created', 'replaced', 'kept', 'created']);
      expect(many.map((result) => [result.outcome, result.action.payload])).toEqual([
        ['created', '"a"'],
        ['kept', '"a"'],
        ['replaced', '"c"'],
      ]);
      expect((await driver.get(TOPIC, 'k3'))?.payload).toBe('"c"');
    } finally {
      await driver.close();
    }
  });

  it('instances starting together apply the migrations once', async () => {
    const schema = fresh();
    const [a, b, c] = await Promise.all([boot(schema), boot(schema), boot(schema)]);
    const versions = await server.admin(`SELECT version FROM ${schema}.migrations`, [], true);
    expect(versions).toEqual(postgresMigrations(schema).map((migration) => ({ version: migration.version })));
    await a.delay.schedule(TOPIC, 'k', { delay: 50 });
    await pollUntil(() => a.worker.runs.length + b.worker.runs.length + c.worker.runs.length === 1, 'one run', 3_000);
  });

  it('migrate: false refuses a missing schema at bootstrap, and runs on one set up from postgresMigrations()', async () => {
    const schema = fresh();
    await expect(bootDelayApp(options(schema, { migrate: false }), [Worker])).rejects.toThrow(/version 0.*postgresMigrations/);
    const client = new Client({ connectionString: server.url });
    await client.connect();
    try {
      for (const migration of postgresMigrations(schema)) {
        await client.query('BEGIN');
        await client.query(migration.sql);
        await client.query('COMMIT');
      }
    } finally {
      await client.end();
    }
    const { delay, worker } = await boot(schema, { migrate: false });
    await delay.schedule(TOPIC, 'managed', { delay: 50 });
    await pollUntil(() => worker.runs.length === 1, 'the run', 3_000);
  });

  it("pooler 'transaction': no LISTEN; an instance's own arming wakes it at once, another's is found within wakeCheck", async () => {
    const schema = fresh();
    // The consumer looks every 5 s (wakeCheck) when nothing wakes it.
    const consumer = await boot(schema, { pooler: 'transaction', wakeCheck: '5s' });
    const producer = await bootDelayApp({ ...options(schema, { pooler: 'transaction' }), consume: false }, []);
    apps.push(producer);
    const listening = await server.admin(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'nestjs-delay listener'`);
    expect(listening).toEqual([{ n: 0 }]);
    // Another instance's arming: no notification reaches the consumer, its next look finds it.
    await producer.get(DelayService).schedule(TOPIC, 'other', { delay: 50 });
    await pollUntil(() => consumer.worker.runs.length === 1, "the other instance's arming", 5_000 + 2_000);
    // Its own arming, just after the look that found the other's: without the wake it gives itself, the next look
    // would be about 5 s away.
    const own = Date.now();
    await consumer.delay.schedule(TOPIC, 'own', { delay: 100 });
    await pollUntil(() => consumer.worker.runs.length === 2, 'its own arming', 100 + REAL_TIME_ON_TIME_MS + 1_000);
    expect(consumer.worker.runs[1].startedAt - own).toBeLessThan(100 + REAL_TIME_ON_TIME_MS);
  });
});
