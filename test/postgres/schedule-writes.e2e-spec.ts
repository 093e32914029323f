// Migration 5's writes: `schedule` (and so scheduleMany and the gathered
// schedules) writes a call of distinct keys that all replace with one
// INSERT, and every other call as before; and the reads it makes before its
// write (`earliest_waiting`, the open-batch checks) stay index reads once
// the table has grown past the size their cached plans were made at. Each
// test has a schema of its own.
import { Client } from 'pg';
import { ActionKindConflictError } from '../../libs/delay/src/errors/action-kind-conflict.error';
import { postgresMigrations } from '../../libs/delay/src/drivers/postgres/postgres-migrations';
import { PostgresDriver } from '../../libs/delay/src/drivers/postgres/postgres.driver';
import { ScheduleManyCommand, ScheduleResult } from '../../libs/delay/src/interfaces/delay-driver.interface';
import { TestPostgresServer } from '../support/postgres-server';

const TOPIC = 'pgwrites.t';
const MAX_PAST_MS = 60_000;
const HORIZON_MS = 30 * 24 * 3_600_000;

type Entry = ScheduleManyCommand['entries'][number];

function entry(key: string, payload: string, ifExists: Entry['ifExists'] = 'replace'): Entry {
  return { key, due: { delayMs: 60_000 }, payload, ifExists };
}

function brief(results: readonly ScheduleResult[]): string[] {
  return results.map((result) => `${result.action.key} ${result.outcome} ${result.action.payload ?? '-'}`);
}

describe('postgres: schedule writes (migration 5)', () => {
  let server: TestPostgresServer;
  const drivers: PostgresDriver[] = [];
  const clients: Client[] = [];
  let schemas = 0;
  let schema: string;

  beforeAll(async () => {
    server = await TestPostgresServer.start();
  }, 60_000);

  afterAll(async () => {
    await server.dispose();
  });

  beforeEach(() => {
    schema = `writes_${process.pid}_${++schemas}`;
  });

  afterEach(async () => {
    for (const driver of drivers.splice(0)) await driver.close();
    for (const client of clients.splice(0)) await client.end();
  });

  async function driver(): Promise<PostgresDriver> {
    const made = new PostgresDriver({ type: 'postgres', connectionString: server.url, schema });
    drivers.push(made);
    await made.connect();
    return made;
  }

  async function client(): Promise<Client> {
    const made = new Client({ connectionString: server.url });
    await made.connect();
    clients.push(made);
    return made;
  }

  /** Applies the migrations up to `version` (all when not given) on one connection. */
  async function migrate(on: Client, version = Infinity): Promise<void> {
    for (const migration of postgresMigrations(schema).filter((m) => m.version <= version)) {
      await on.query('BEGIN');
      await on.query(migration.sql);
      await on.query('COMMIT');
    }
  }

  /** One call of the schedule function on this connection: 100 new keys, due in an hour, replacing. */
  async function scheduleHundred(on: Client, first: number): Promise<void> {
    const keys = Array.from({ length: 100 }, (_, n) => `k-${String(first + n).padStart(7, '0')}`);
    await on.query(
      `SELECT * FROM ${schema}.schedule($1::text, $2::text[], $3::boolean[], $4::bigint[], $5::text[], $6::boolean[], $7::text[], $8::bigint, $9::bigint, $10::text)`,
      [TOPIC, keys, keys.map(() => false), keys.map(() => 3_600_000), keys.map(() => '{}'), keys.map(() => false), keys.map(() => null), MAX_PAST_MS, HORIZON_MS, null],
    );
  }

  it("reads what it must through the indexes once the table has grown past the size its plans were made at", async () => {
    const session = await client();
    await migrate(session);
    // Plans cached while the table is empty (PL/pgSQL keeps a generic plan after five calls), as after a TRUNCATE.
    for (let call = 0; call < 8; call++) await scheduleHundred(session, call * 100);
    await session.query(
      `INSERT INTO ${schema}.actions (topic, member, key, token, due_at, payload)
       SELECT $1, 'g-' || n, 'g-' || n, nextval('${schema}.tokens'), ${schema}.clock_ms(NULL) + 7200000 + n, '{}' FROM generate_series(1, 20000) n`,
      [TOPIC],
    );
    const plans: string[] = [];
    session.on('notice', (notice) => plans.push(notice.message ?? ''));
    await session.query("LOAD 'auto_explain'");
    await session.query('SET auto_explain.log_min_duration = 0');
    await session.query('SET auto_explain.log_nested_statements = on');
    await session.query('SET client_min_messages = log');
    await scheduleHundred(session, 10_000);
    await session.query('SET client_min_messages = notice');
    const nested = plans.filter((plan) => plan.includes(`${schema}.actions`));
    expect(nested.length).toBeGreaterThanOrEqual(3);
    // Not a read of every row of the topic: a sequential or bitmap scan of actions.
    for (const plan of nested) expect(plan).not.toMatch(/(Seq Scan|Bitmap Heap Scan) on actions/);
    expect(nested.some((plan) => /Index Scan using actions_due on actions/.test(plan))).toBe(true);
  });

  it('scheduleMany of distinct keys that replace: one statement, created or replaced per entry, in order', async () => {
    const pg = await driver();
    await pg.schedule({ topic: TOPIC, key: 'b', due: { delayMs: 60_000 }, payload: 'old', ifExists: 'replace', maxPastMs: MAX_PAST_MS });
    const results = await pg.scheduleMany({ topic: TOPIC, entries: [entry('a', 'A'), entry('b', 'B'), entry('c', 'C')], maxPastMs: MAX_PAST_MS });
    expect(brief(results)).toEqual(['a created A', 'b replaced B', 'c created C']);
    const rows = await server.admin(`SELECT member, payload, attempt, count(*) OVER (PARTITION BY xmin::text) AS together FROM ${schema}.actions ORDER BY member`, [], true);
    expect(rows.map((row) => `${String(row.member)} ${String(row.payload)} ${Number(row.attempt)} ${Number(row.together)}`)).toEqual(['a A 1 3', 'b B 1 3', 'c C 1 3']);
  });

  it('scheduleMany: a key given twice, or an entry that keeps, is written entry by entry as before', async () => {
    const pg = await driver();
    const twice = await pg.scheduleMany({ topic: TOPIC, entries: [entry('x', '1'), entry('y', '2'), entry('x', '3')], maxPastMs: MAX_PAST_MS });
    expect(brief(twice)).toEqual(['x created 1', 'y created 2', 'x replaced 3']);
    const kept = await pg.scheduleMany({ topic: TOPIC, entries: [entry('x', '4', 'keep'), entry('z', '5')], maxPastMs: MAX_PAST_MS });
    expect(brief(kept)).toEqual(['x kept 3', 'z created 5']);
  });

  it('scheduleMany: a key with an open batch refuses the whole call with ActionKindConflictError, nothing written', async () => {
    const pg = await driver();
    await pg.collect({ topic: TOPIC, key: 'open', item: '"i"', windowMs: 60_000, maxWaitMs: undefined, slide: false, maxItems: 10 });
    const refused = pg.scheduleMany({ topic: TOPIC, entries: [entry('fresh', 'F'), entry('open', 'O')], maxPastMs: MAX_PAST_MS });
    await expect(refused).rejects.toBeInstanceOf(ActionKindConflictError);
    await expect(refused).rejects.toMatchObject({ key: 'open' });
    expect(await pg.get(TOPIC, 'fresh')).toBeNull();
  });

  it('a schema at version 3 with pending actions is brought to the latest version, and its actions and writes stay as they were', async () => {
    const session = await client();
    await migrate(session, 3);
    await scheduleHundred(session, 0);
    const pg = await driver();
    const versions = await server.admin(`SELECT max(version)::integer AS v FROM ${schema}.migrations`, [], true);
    expect(Number(versions[0].v)).toBe(postgresMigrations(schema).at(-1)?.version);
    expect(await pg.count(TOPIC)).toBe(100);
    const results = await pg.scheduleMany({ topic: TOPIC, entries: [entry('k-0000000', 'again'), entry('new', 'N')], maxPastMs: MAX_PAST_MS });
    expect(brief(results)).toEqual(['k-0000000 replaced again', 'new created N']);
    expect(await pg.count(TOPIC)).toBe(101);
  });
});
