import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { INestApplication, Injectable } from '@nestjs/common';
import { DelayContext, DelayModuleOptions, DelayService, OnDelayExpired } from 'nestjs-delay';
import { Client } from 'pg';
import { bootDelayApp, pollUntil, sleep } from '../conformance/support/driver-fixture';
import { TestPostgresServer } from '../support/postgres-server';
import { PostgresDriver } from '../../libs/delay/src/drivers/postgres/postgres.driver';
import { Delivery } from '../../libs/delay/src/interfaces/delay-driver.interface';
import { REAL_TIME_ON_TIME_MS } from '../support/on-time';

/**
 * The postgres driver in a database shared with other roles, set up as the
 * least-privilege section of docs/drivers/postgres.md says (run as written): a
 * role that owns the schema and migrates it, a runtime role with only the
 * grants listed there, and a stranger that may connect and, as on
 * PostgreSQL 14 and older, create in `public`.
 */
const TOPIC = 'shared.work';
const OWNER = 'delay_owner';
const RUNTIME = 'delay_runtime';
const STRANGER = 'stranger';
const SCHEMA = 'nestjs_delay';

@Injectable()
class Worker {
  readonly runs: Array<{ key: string; attempt: number; dueAt: number; at: number }> = [];

  @OnDelayExpired(TOPIC, { concurrency: 8, attempts: 1 })
  work(context: DelayContext): void {
    this.runs.push({ key: context.key, attempt: context.attempt, dueAt: context.dueAt.getTime(), at: Date.now() });
    if (context.key.startsWith('fail')) throw new Error('this one dies');
  }
}

/** The SQL blocks of the least-privilege section of the PostgreSQL driver's page, in order, as a user would paste them. */
function readmeSetup(): { asSuperuser: string; asOwner: string } {
  const page = readFileSync(join(__dirname, '..', '..', 'docs', 'drivers', 'postgres.md'), 'utf8');
  const section = /<!-- least-privilege -->([\s\S]*?)<!-- \/least-privilege -->/.exec(page)?.[1];
  if (!section) throw new Error('docs/drivers/postgres.md has no least-privilege section');
  const blocks = [...section.matchAll(/```sql\n([\s\S]*?)```/g)].map((match) => match[1]);
  if (blocks.length !== 2) throw new Error(`the least-privilege section has ${blocks.length} sql blocks, expected 2`);
  return { asSuperuser: blocks[0], asOwner: blocks[1] };
}

describe('postgres: a database shared with other roles', () => {
  let server: TestPostgresServer;
  let database: string;
  const apps: INestApplication[] = [];
  const drivers: PostgresDriver[] = [];
  const clients: Client[] = [];

  const urlAs = (role: string, options?: string): string => {
    const url = new URL(server.url);
    url.username = role;
    url.pathname = `/${database}`;
    if (options) url.searchParams.set('options', options);
    return url.href;
  };
  const connectAs = async (role: string): Promise<Client> => {
    const client = new Client({ connectionString: urlAs(role), statement_timeout: 20_000 });
    client.on('error', () => undefined);
    await client.connect();
    clients.push(client);
    return client;
  };
  const asAdmin = async (sql: string): Promise<Array<Record<string, unknown>>> => {
    const client = await connectAs('postgres');
    try {
      return (await client.query(sql)).rows as Array<Record<string, unknown>>;
    } finally {
      clients.splice(clients.indexOf(client), 1);
      await client.end();
    }
  };

  function options(role: string, extra: Record<string, unknown> = {}, module: Partial<DelayModuleOptions> = {}): DelayModuleOptions {
    return { driver: { type: 'postgres', connectionString: urlAs(role), migrate: role === OWNER, ...extra }, shutdownTimeout: '1s', ...module } as DelayModuleOptions;
  }
  async function boot(role: string, extra: Record<string, unknown> = {}, module: Partial<DelayModuleOptions> = {}): Promise<{ delay: DelayService; worker: Worker }> {
    const app = await bootDelayApp(options(role, extra, module), [Worker]);
    apps.push(app);
    return { delay: app.get(DelayService), worker: app.get(Worker) };
  }
  async function bareDriver(role: string, handle?: (delivery: Delivery) => void): Promise<PostgresDriver> {
    const driver = new PostgresDriver({ type: 'postgres', connectionString: urlAs(role), migrate: role === OWNER });
    drivers.push(driver);
    await driver.connect();
    if (handle) {
      await driver.start({ topics: new Map([[TOPIC, 8]]), handle: (delivery) => (handle(delivery), Promise.resolve({ kind: 'completed' as const })) });
    }
    return driver;
  }

  beforeAll(async () => {
    server = await TestPostgresServer.start();
    database = `shared_${process.pid}`;
    await server.admin(`CREATE DATABASE ${database}`);
    const { asSuperuser, asOwner } = readmeSetup();
    // Trust authentication here: the passwords are not needed. The page's database is called app.
    await asAdmin(asSuperuser.replace(/ PASSWORD '[^']*'/g, '').replace(/DATABASE app\b/g, `DATABASE ${database}`));
    // As on PostgreSQL 14 and older (and clusters upgraded from them): every role may create in public.
    await asAdmin(`GRANT CREATE ON SCHEMA public TO PUBLIC; CREATE ROLE ${STRANGER} LOGIN`);
    // The stranger plants look-alikes of built-ins the driver uses, each a better match for some call than the
    // built-in (an untyped literal, a polymorphic argument, a mixed-type operator), and some with the built-in's own
    // signature (they win where public comes before pg_catalog in a session's search_path). Each counts its calls
    // where the stranger can see them, and then does what the built-in does.
    await asAdmin(`CREATE SCHEMA spy AUTHORIZATION ${STRANGER}; GRANT USAGE ON SCHEMA spy TO PUBLIC`);
    const stranger = await connectAs(STRANGER);
    await stranger.query(`
      CREATE TABLE spy.calls (name text, by_role text);
      GRANT INSERT ON spy.calls TO PUBLIC;
      CREATE FUNCTION spy.called(p_name text) RETURNS void LANGUAGE sql AS $$ INSERT INTO spy.calls VALUES (p_name, current_user) $$;
      CREATE FUNCTION public.nextval(text) RETURNS bigint LANGUAGE sql AS $$ SELECT spy.called('nextval'); SELECT pg_catalog.nextval($1::regclass) $$;
      CREATE FUNCTION public.unnest(text[]) RETURNS SETOF text LANGUAGE sql AS $$ SELECT spy.called('unnest(text[])'); SELECT pg_catalog.unnest($1) $$;
      CREATE FUNCTION public.unnest(bigint[]) RETURNS SETOF bigint LANGUAGE sql AS $$ SELECT spy.called('unnest(bigint[])'); SELECT pg_catalog.unnest($1) $$;
      CREATE FUNCTION public.cardinality(text[]) RETURNS integer LANGUAGE sql AS $$ SELECT spy.called('cardinality'); SELECT pg_catalog.cardinality($1) $$;
      CREATE FUNCTION public.spy_cat(text, bigint) RETURNS text LANGUAGE sql AS $$ SELECT spy.called('||'); SELECT $1 OPERATOR(pg_catalog.||) $2::text $$;
      CREATE OPERATOR public.|| (LEFTARG = text, RIGHTARG = bigint, FUNCTION = public.spy_cat);
      CREATE FUNCTION public.pg_notify(text, text) RETURNS void LANGUAGE sql AS $$ SELECT spy.called('pg_notify'); SELECT pg_catalog.pg_notify($1, $2) $$;
      CREATE FUNCTION public.clock_timestamp() RETURNS timestamptz LANGUAGE sql AS $$ SELECT spy.called('clock_timestamp'); SELECT pg_catalog.clock_timestamp() $$;
      CREATE FUNCTION public.current_setting(text) RETURNS text LANGUAGE sql AS $$ SELECT spy.called('current_setting'); SELECT pg_catalog.current_setting($1) $$;
      CREATE FUNCTION public.to_regclass(text) RETURNS regclass LANGUAGE sql AS $$ SELECT spy.called('to_regclass'); SELECT pg_catalog.to_regclass($1) $$;
      CREATE FUNCTION public.spy_int_gt(integer, integer) RETURNS boolean LANGUAGE sql AS $$ SELECT spy.called('>'); SELECT $1 OPERATOR(pg_catalog.>) $2 $$;
      CREATE OPERATOR public.> (LEFTARG = integer, RIGHTARG = integer, FUNCTION = public.spy_int_gt);
    `);
    // The owner migrates (an instance started with migrate: true), then grants what the page says.
    const owner = await bareDriver(OWNER);
    await owner.close();
    const ownerClient = await connectAs(OWNER);
    await ownerClient.query(asOwner);
    // Every session of the runtime role looks in public before pg_catalog: the strongest path a role can be given.
    await asAdmin(`ALTER ROLE ${RUNTIME} SET search_path = public, pg_catalog`);
    await asAdmin('TRUNCATE spy.calls');
  }, 90_000);

  afterAll(async () => {
    for (const client of clients.splice(0)) await client.end().catch(() => undefined);
    await server.dispose();
  });

  afterEach(async () => {
    for (const app of apps.splice(0)) await app.close();
    for (const driver of drivers.splice(0)) await driver.close();
    // Each test starts from an empty schema.
    await asAdmin(`TRUNCATE ${SCHEMA}.actions, ${SCHEMA}.dead, ${SCHEMA}.runs, ${SCHEMA}.paused_topics`);
  });

  it('runs with exactly the documented grants, and no look-alike another role planted in public ever runs as its role', async () => {
    const { delay, worker } = await boot(RUNTIME);
    // Every kind of call, on the driver's pool and in the application's transaction.
    await delay.schedule(TOPIC, 'a', { delay: 50, payload: { n: 1 } });
    await delay.scheduleMany(TOPIC, [{ key: 'b', delay: 50 }, { key: 'c', delay: 3_600_000 }, { key: 'fail-1', delay: 0 }]);
    await Promise.all([delay.schedule(TOPIC, 'g1', { delay: 60_000 }), delay.schedule(TOPIC, 'g2', { delay: 60_000 }), delay.cancel(TOPIC, 'g1'), delay.cancel(TOPIC, 'nobody')]);
    await delay.reschedule(TOPIC, 'c', { delay: 3_000_000 });
    await delay.reschedule(TOPIC, 'nobody', { delay: 1_000 });
    await delay.collect(TOPIC, 'batch', { item: 1 }, { window: '100ms' });
    await delay.get(TOPIC, 'c');
    await delay.list(TOPIC, { limit: 10 });
    await delay.count(TOPIC);
    await delay.runNow(TOPIC, 'c');
    await pollUntil(() => worker.runs.some((run) => run.key === 'c'), 'the action made due now', 10_000);
    await pollUntil(async () => (await delay.listDead(TOPIC)).items.length === 1, 'the dead action', 10_000);
    await delay.redrive(TOPIC, 'fail-1');
    await delay.pause(TOPIC);
    await delay.isPaused(TOPIC);
    await delay.resume(TOPIC);
    await delay.topics();
    await delay.health();
    const client = await connectAs(RUNTIME);
    await client.query('BEGIN');
    await delay.schedule(TOPIC, 'tx', { delay: 50, transaction: client });
    await delay.cancel(TOPIC, 'g2', { transaction: client });
    await client.query('COMMIT');
    await pollUntil(() => ['a', 'b', 'tx'].every((key) => worker.runs.some((run) => run.key === key)), 'the runs', 10_000);
    await pollUntil(() => worker.runs.some((run) => run.key === 'batch'), 'the batch', 10_000);
    expect(await asAdmin('SELECT name, by_role FROM spy.calls')).toEqual([]);
    // Every function of the driver's schema pins its search_path.
    const functions = await asAdmin(
      `SELECT p.proname, p.proconfig FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = '${SCHEMA}' ORDER BY p.proname`,
    );
    expect(functions.length).toBeGreaterThan(30);
    for (const fn of functions) expect([fn.proname, fn.proconfig]).toEqual([fn.proname, expect.arrayContaining(['search_path=pg_catalog, pg_temp'])]);
  }, 60_000);

  it('a role that can only connect cannot stall a topic or startup: advisory locks mean nothing to the driver, and its turns table is out of reach', async () => {
    const stranger = await connectAs(STRANGER);
    // The keys this driver once took turns and migrated under, and a sweep of others.
    await stranger.query(`SELECT pg_advisory_lock(1852075107, hashtext('${SCHEMA} ${TOPIC}')), pg_advisory_lock(1852075107, hashtext('${SCHEMA}'))`);
    await stranger.query(`SELECT pg_advisory_lock(x'6e646c79'::int, hashtext('${SCHEMA}'))`);
    await stranger.query('SELECT pg_advisory_lock(k) FROM generate_series(1, 2000) AS k');
    await expect(stranger.query(`SELECT * FROM ${SCHEMA}.turns FOR UPDATE`)).rejects.toMatchObject({ code: '42501' });
    // A new instance starts (the owner's, which migrates) and the runtime's fires on time.
    const owner = await bareDriver(OWNER);
    await owner.close();
    const { delay, worker } = await boot(RUNTIME);
    const { dueAt } = await delay.schedule(TOPIC, 'on-time', { delay: 200 });
    await pollUntil(() => worker.runs.some((run) => run.key === 'on-time'), 'the run', 10_000);
    // (The driver's turns wait at most 2.5 s each: an advisory lock that stalled it would show here as seconds.)
    expect(worker.runs.find((run) => run.key === 'on-time')!.at - dueAt.getTime()).toBeLessThan(2_000);
    expect((await delay.health()).topics[0]).toMatchObject({ topic: TOPIC, consumerAlive: true });
  }, 60_000);

  it("a session of the driver's own role holding a topic's turn: health says so, and the log; the topic runs again once it lets go", async () => {
    const { delay, worker } = await boot(RUNTIME);
    await delay.schedule(TOPIC, 'first', { delay: 0 });
    await pollUntil(() => worker.runs.some((run) => run.key === 'first'), 'the first run', 10_000);
    const holder = await connectAs(OWNER);
    await holder.query('BEGIN');
    await holder.query(`SELECT * FROM ${SCHEMA}.turns WHERE topic = $1 FOR UPDATE`, [TOPIC]);
    await delay.schedule(TOPIC, 'held', { delay: 0 });
    await pollUntil(async () => (await delay.health()).topics[0]?.consumerAlive === false, 'health to report the stalled topic', 20_000, 200);
    const health = await delay.health();
    expect(health.warnings?.join(' ')).toMatch(/claims of "shared\.work" have waited \d+ s for the topic's turn/);
    expect(worker.runs.some((run) => run.key === 'held')).toBe(false);
    await holder.query('COMMIT');
    await pollUntil(() => worker.runs.some((run) => run.key === 'held'), 'the run once the turn is free', 10_000);
    await pollUntil(async () => (await delay.health()).topics[0]?.consumerAlive === true, 'health to recover', 10_000, 100);
  }, 60_000);

  it('notifications carry a keyed tag only, and a flood of them (forged or replayed) costs a bounded number of claims', async () => {
    const listener = await connectAs(STRANGER);
    const heard: string[] = [];
    listener.on('notification', (message) => heard.push(message.payload ?? ''));
    await listener.query(`LISTEN ${SCHEMA}`);
    let claims = 0;
    const runs: string[] = [];
    const driver = await bareDriver(RUNTIME, (delivery) => runs.push(delivery.key));
    type Send = (sql: string, params?: readonly unknown[]) => Promise<unknown[]>;
    const connection = (driver as unknown as { connection: { queryPrepared: Send } }).connection;
    const send = connection.queryPrepared.bind(connection);
    connection.queryPrepared = (sql, params) => {
      if (sql.includes('.claim_taken(')) claims++;
      return send(sql, params);
    };
    const producer = await bareDriver(RUNTIME);
    await producer.schedule({ topic: TOPIC, key: 'heard', due: { delayMs: 60_000 }, payload: undefined, ifExists: 'replace', maxPastMs: 60_000 });
    await pollUntil(() => heard.length > 0, 'the notification', 5_000);
    expect(heard[0]).toMatch(/^[0-9a-f]{16}$/);
    // The stranger replays what it heard, and forges, 20,000 times, each in a transaction of its own.
    await sleep(300);
    const before = claims;
    const flood = listener.query(`DO $$ BEGIN FOR i IN 1..20000 LOOP PERFORM pg_notify('${SCHEMA}', CASE WHEN i % 2 = 0 THEN '${heard[0]}' ELSE '${TOPIC} ' || i::text END); COMMIT; END LOOP; END $$`);
    const floodStarted = Date.now();
    // A real action due meanwhile still runs.
    await sleep(200);
    await producer.schedule({ topic: TOPIC, key: 'during', due: { delayMs: 0 }, payload: undefined, ifExists: 'replace', maxPastMs: 60_000 });
    await flood;
    const floodMs = Date.now() - floodStarted;
    await sleep(500);
    const during = claims - before;
    await pollUntil(() => runs.includes('during'), 'the action due during the flood', 10_000);
    // At most a few claims per second per topic while notifications find nothing new (the gap grows to 250 ms).
    expect({ during, floodMs, bound: during <= 10 + Math.ceil((floodMs + 500) / 100) }).toMatchObject({ bound: true });
  }, 60_000);

  it('a cancel or reschedule of a key another open transaction is arming for the first time waits for it, and applies on top', async () => {
    const { delay, worker } = await boot(RUNTIME);
    for (const kind of ['cancel', 'reschedule'] as const) {
      const key = `first-${kind}`;
      const client = await connectAs(RUNTIME);
      await client.query('BEGIN');
      await delay.schedule(TOPIC, key, { delay: 800, transaction: client });
      let settled = false;
      const second = (kind === 'cancel' ? delay.cancel(TOPIC, key) : delay.reschedule(TOPIC, key, { delay: 3_000 })).finally(() => (settled = true));
      await sleep(400);
      // It waits for the arming's transaction, as it would for a re-arming.
      expect(settled).toBe(false);
      await client.query('COMMIT');
      const result = await second;
      if (kind === 'cancel') expect(result).toBe(true);
      else expect(result).toMatchObject({ key });
    }
    await sleep(1_500);
    // Neither ran at its first time; the rescheduled one runs at its new time.
    expect(worker.runs.filter((run) => run.key.startsWith('first-'))).toEqual([]);
    await pollUntil(() => worker.runs.some((run) => run.key === 'first-reschedule'), 'the rescheduled run', 10_000);
    expect(worker.runs.filter((run) => run.key.startsWith('first-')).map((run) => run.key)).toEqual(['first-reschedule']);
  }, 30_000);

  it('a cancel that finds no action, in a transaction left open, holds nothing: arming that key elsewhere does not wait for it', async () => {
    const { delay } = await boot(RUNTIME);
    const client = await connectAs(RUNTIME);
    await client.query('BEGIN');
    try {
      expect(await delay.cancel(TOPIC, 'absent', { transaction: client })).toBe(false);
      // On the driver's pool, while that transaction is still open: it must not wait for it (commandTimeout is 5 s).
      const started = Date.now();
      await delay.scheduleMany(TOPIC, [{ key: 'absent', delay: 60_000 }, { key: 'other', delay: 60_000 }]);
      expect(Date.now() - started).toBeLessThan(4_000);
    } finally {
      await client.query('ROLLBACK');
    }
    expect(await delay.get(TOPIC, 'absent')).toMatchObject({ key: 'absent' });
  }, 30_000);

  it('the role that owns the schema starts (migrate: true) without CREATE on the database once the schema is there', async () => {
    await asAdmin(`REVOKE CREATE ON DATABASE ${database} FROM ${OWNER}`);
    try {
      const owner = await bareDriver(OWNER);
      await owner.close();
    } finally {
      await asAdmin(`GRANT CREATE ON DATABASE ${database} TO ${OWNER}`);
    }
  }, 30_000);

  it("a row held by an open transaction of the application does not make the topic's other actions late", async () => {
    const { delay, worker } = await boot(RUNTIME);
    await delay.schedule(TOPIC, 'held', { delay: 0 });
    // The application holds the row before it is claimed (a replace in a transaction left open), due now.
    const client = await connectAs(RUNTIME);
    await client.query('BEGIN');
    await delay.schedule(TOPIC, 'held', { delay: 0, transaction: client });
    try {
      // The consumer keeps finding a due row it cannot take; meanwhile free actions come due, one after another.
      await sleep(2_500);
      const late: number[] = [];
      for (let n = 0; n < 5; n++) {
        const { dueAt } = await delay.schedule(TOPIC, `free-${n}`, { delay: 150 });
        await pollUntil(() => worker.runs.some((run) => run.key === `free-${n}`), `free-${n}`, 10_000);
        late.push(worker.runs.find((run) => run.key === `free-${n}`)!.at - dueAt.getTime());
        await sleep(150);
      }
      // Before: up to the consumer's back-off of 1 s behind the held row. A busy machine may delay one of five.
      expect({ late, onTime: late.filter((ms) => ms < 400).length >= 4 }).toMatchObject({ onTime: true });
    } finally {
      await client.query('ROLLBACK');
    }
  }, 30_000);

  it("a reply that comes back late (a statement that waited on a lock) does not make the instance's timers late", async () => {
    // A commandTimeout well past the 4 s the reschedule below waits for its lock, on a busy machine too.
    const consumer = await boot(RUNTIME, { commandTimeout: '10s' });
    // The producer runs no handler: only the consumer instance can run the action.
    const producer = await boot(RUNTIME, {}, { consume: false });
    await consumer.delay.schedule('shared.other', 'locked', { delay: 3_600_000 });
    // Another transaction holds the row: the consumer instance's reschedule reads the clock, then waits 4 s.
    const client = await connectAs(RUNTIME);
    await client.query('BEGIN');
    await client.query(`SELECT 1 FROM ${SCHEMA}.actions WHERE topic = 'shared.other' AND member = 'locked' FOR UPDATE`);
    const slow = consumer.delay.reschedule('shared.other', 'locked', { delay: 3_600_000 });
    await sleep(4_000);
    await client.query('COMMIT');
    await slow;
    // Armed by another instance: the consumer learns of it by notification and arms its timer on its clock offset.
    const { dueAt } = await producer.delay.schedule(TOPIC, 'timed', { delay: 700 });
    await pollUntil(() => consumer.worker.runs.some((run) => run.key === 'timed'), 'the run', 10_000);
    const run = consumer.worker.runs.find((r) => r.key === 'timed')!;
    expect(producer.worker.runs).toEqual([]);
    // Before: the offset taken when that reply arrived was as short as the wait (4 s), and the timer fired that much
    // late (the bound leaves a busy machine room, and still tells the two apart).
    expect(run.at - dueAt.getTime()).toBeLessThan(REAL_TIME_ON_TIME_MS);
  }, 30_000);
});
