import { INestApplication, Injectable } from '@nestjs/common';
import { DelayContext, DelayModuleOptions, DelayService, OnDelayExpired } from 'nestjs-delay';
import { Client } from 'pg';
import { bootDelayApp, pollUntil, sleep } from '../conformance/support/driver-fixture';
import { TestPostgresServer } from '../support/postgres-server';
import { postgresMigrations } from '../../libs/delay/src/drivers/postgres/postgres-migrations';

/**
 * A consuming instance vacuums the driver's busiest tables once they hold
 * 1,000 dead rows (every completed run leaves one in actions), unless
 * `vacuum: false`; it vacuums only tables its role may vacuum. Manual
 * vacuums are counted apart from autovacuum's (pg_stat_user_tables.
 * vacuum_count), so what is counted here is the driver's; autovacuum is
 * off on these tables all the same, so that it cannot clean them first.
 */
const TOPIC = 'vacuum.work';
const ACTIONS = 1_500;

@Injectable()
class Worker {
  runs = 0;

  @OnDelayExpired(TOPIC, { concurrency: 50, attempts: 1 })
  work(_context: DelayContext): void {
    this.runs++;
  }
}

describe('postgres: the driver vacuums its busiest tables', () => {
  let server: TestPostgresServer;
  let client: Client;
  const apps: INestApplication[] = [];

  beforeAll(async () => {
    server = await TestPostgresServer.start();
    client = new Client({ connectionString: server.url });
    await client.connect();
  }, 60_000);
  afterAll(async () => {
    for (const app of apps.splice(0)) await app.close();
    await client.end();
    await server.dispose();
  });

  /** An instance on `schema` (as the server's superuser unless `driver` says otherwise), autovacuum off on its tables. */
  async function boot(schema: string, driver: { vacuum?: boolean; connectionString?: string; migrate?: boolean; commandTimeout?: string } = {}): Promise<INestApplication> {
    const options = { driver: { type: 'postgres', connectionString: server.url, schema, ...driver }, shutdownTimeout: '1s' };
    const app = await bootDelayApp(options as DelayModuleOptions, [Worker]);
    apps.push(app);
    for (const table of ['actions', 'runs', 'series', 'series_runs']) await client.query(`ALTER TABLE ${schema}.${table} SET (autovacuum_enabled = false)`);
    return app;
  }

  async function churn(app: INestApplication): Promise<INestApplication> {
    const delay = app.get(DelayService);
    for (let from = 0; from < ACTIONS; from += 500) {
      await delay.scheduleMany(TOPIC, Array.from({ length: 500 }, (_, i) => ({ key: `k${from + i}`, delay: 0 })));
    }
    const worker = app.get(Worker);
    await pollUntil(() => worker.runs >= ACTIONS, `${ACTIONS} runs`, 60_000);
    return app;
  }

  async function serverVersion(): Promise<number> {
    return Number((await client.query(`SELECT current_setting('server_version_num') AS v`)).rows[0].v);
  }

  async function manualVacuums(schema: string): Promise<number> {
    const { rows } = await client.query(`SELECT vacuum_count FROM pg_stat_user_tables WHERE schemaname = $1 AND relname = 'actions'`, [schema]);
    return Number(rows[0].vacuum_count);
  }

  it('vacuums the actions table once its runs have left 1,000 dead rows there', async () => {
    await churn(await boot('vac_on'));
    // The dead rows reach the server's statistics within a second or so; the instance looks every second.
    await pollUntil(async () => (await manualVacuums('vac_on')) >= 1, 'a vacuum of vac_on.actions by the driver', 30_000, 200);
    const { rows } = await client.query(`SELECT n_dead_tup FROM pg_stat_user_tables WHERE schemaname = 'vac_on' AND relname = 'actions'`);
    expect(Number(rows[0].n_dead_tup)).toBeLessThan(1_000);
  }, 120_000);

  it('with vacuum: false it leaves the tables to autovacuum', async () => {
    const delay = (await churn(await boot('vac_off', { vacuum: false }))).get(DelayService);
    // A server process reports its dead rows once a second while busy, 10 s after it went idle: a trickle of runs
    // keeps the instance's connections busy until the statistics show them. Then three of the instance's looks.
    let trickle = 0;
    await pollUntil(async () => {
      await delay.schedule(TOPIC, `trickle-${trickle++}`, { delay: 0 });
      const { rows } = await client.query(`SELECT n_dead_tup FROM pg_stat_user_tables WHERE schemaname = 'vac_off' AND relname = 'actions'`);
      return Number(rows[0].n_dead_tup) >= 1_000;
    }, 'the dead rows in the statistics', 30_000, 100);
    await sleep(3_000);
    expect(await manualVacuums('vac_off')).toBe(0);
  }, 120_000);

  it('under a transaction left open, a vacuum that removes nothing is not repeated every second', async () => {
    const app = await boot('vac_held');
    // A snapshot held from before the runs: their dead rows cannot be removed while it is open.
    const held = new Client({ connectionString: server.url });
    await held.connect();
    try {
      await held.query(`BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT count(*) FROM vac_held.actions`);
      await churn(app);
      await pollUntil(async () => (await manualVacuums('vac_held')) >= 1, 'a first vacuum of vac_held.actions', 30_000, 200);
      // Looked at every second: without the wait after a vacuum that left the table as it was, four more.
      await sleep(4_000);
      expect(await manualVacuums('vac_held')).toBeLessThanOrEqual(2);
    } finally {
      await held.query('ROLLBACK');
      await held.end();
    }
  }, 120_000);

  it('an instance whose role does not own the tables vacuums them on PostgreSQL 17+ when it holds MAINTAIN on them (the optional grant of the least-privilege setup), and not without it', async () => {
    for (const migration of postgresMigrations('vac_keeper')) await client.query(`BEGIN;\n${migration.sql}\nCOMMIT;`);
    const version = await serverVersion();
    // The least-privilege grants of docs/drivers/postgres.md, and on 17+ its optional MAINTAIN on the four busy tables.
    await client.query(`CREATE ROLE vacuum_keeper LOGIN; GRANT USAGE ON SCHEMA vac_keeper TO vacuum_keeper;
      GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA vac_keeper TO vacuum_keeper;
      GRANT USAGE ON ALL SEQUENCES IN SCHEMA vac_keeper TO vacuum_keeper; GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA vac_keeper TO vacuum_keeper`);
    if (version >= 170000) await client.query(`GRANT MAINTAIN ON vac_keeper.actions, vac_keeper.runs, vac_keeper.series, vac_keeper.series_runs TO vacuum_keeper`);
    const url = new URL(server.url);
    url.username = 'vacuum_keeper';
    await churn(await boot('vac_keeper', { connectionString: url.href, migrate: false }));
    if (version >= 170000) {
      await pollUntil(async () => (await manualVacuums('vac_keeper')) >= 1, 'a vacuum by the instance holding MAINTAIN', 20_000);
    } else {
      // No MAINTAIN before 17: the instance lists nothing and vacuums nothing, once the dead rows reached the statistics.
      await pollUntil(async () => Number((await client.query(`SELECT n_dead_tup FROM pg_stat_user_tables WHERE schemaname = 'vac_keeper' AND relname = 'actions'`)).rows[0].n_dead_tup) >= 1_000, 'dead rows in the statistics', 20_000);
      await sleep(3_000);
      expect(await manualVacuums('vac_keeper')).toBe(0);
    }
  }, 120_000);

  it('shutdown cancels a vacuum in flight instead of waiting for it to end', async () => {
    // Every page the instance's vacuums read makes them sleep 100 ms or more (cost-based delay, set for its connections
    // only): a vacuum of the actions table then takes tens of seconds, and commandTimeout (60 s here) does not cut it.
    // Look-alikes of the two built-ins the cancel uses, in a schema its connections search before pg_catalog: called
    // unqualified, the vacuum or its cancel would fail.
    await client.query(`CREATE SCHEMA vac_spy;
      CREATE FUNCTION vac_spy.pg_backend_pid() RETURNS integer LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'look-alike pg_backend_pid ran'; END $$;
      CREATE FUNCTION vac_spy.pg_cancel_backend(integer) RETURNS boolean LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'look-alike pg_cancel_backend ran'; END $$`);
    const url = new URL(server.url);
    url.searchParams.set('options', '-c vacuum_cost_delay=100 -c vacuum_cost_limit=1 -c search_path=vac_spy,pg_catalog,public');
    const app = await churn(await boot('vac_stop', { connectionString: url.href, commandTimeout: '60s' }));
    const vacuumOfActions = async (): Promise<number> =>
      (await client.query(`SELECT count(*)::int AS n FROM pg_stat_progress_vacuum WHERE relid = 'vac_stop.actions'::regclass`)).rows[0].n;
    await pollUntil(async () => (await vacuumOfActions()) === 1, 'the instance vacuuming vac_stop.actions', 30_000, 50);
    await sleep(500);
    expect(await vacuumOfActions()).toBe(1);

    const startedAt = performance.now();
    await app.close();
    apps.splice(apps.indexOf(app), 1);
    // Far less than the vacuum still had to go, or commandTimeout (without the cancel, close waits for one of them).
    expect(performance.now() - startedAt).toBeLessThan(10_000);
    // And the server no longer runs it.
    expect(await vacuumOfActions()).toBe(0);
    expect(await manualVacuums('vac_stop')).toBe(0);
  }, 120_000);

  it('lists for vacuuming only tables the calling role may vacuum: those it owns, and on PostgreSQL 17+ those it holds MAINTAIN on', async () => {
    for (const migration of postgresMigrations('vac_roles')) await client.query(`BEGIN;\n${migration.sql}\nCOMMIT;`);
    await client.query(`CREATE ROLE vacuum_stranger LOGIN; GRANT USAGE ON SCHEMA vac_roles TO vacuum_stranger; GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA vac_roles TO vacuum_stranger;
      GRANT SELECT ON ALL TABLES IN SCHEMA vac_roles TO vacuum_stranger`);
    const asOwner = (await client.query(`SELECT table_name FROM vac_roles.vacuum_candidates(0) ORDER BY 1`)).rows.map((row) => String(row.table_name));
    expect(asOwner).toEqual(['actions', 'runs', 'series', 'series_runs']);
    const url = new URL(server.url);
    url.username = 'vacuum_stranger';
    const stranger = new Client({ connectionString: url.href });
    await stranger.connect();
    try {
      expect((await stranger.query(`SELECT table_name FROM vac_roles.vacuum_candidates(0)`)).rows).toEqual([]);
      if ((await serverVersion()) >= 170000) {
        // PostgreSQL 17+: MAINTAIN lets a role that does not own the tables vacuum them, and they are listed to it.
        await client.query(`GRANT MAINTAIN ON vac_roles.actions, vac_roles.series TO vacuum_stranger`);
        expect((await stranger.query(`SELECT table_name FROM vac_roles.vacuum_candidates(0) ORDER BY 1`)).rows.map((row) => String(row.table_name))).toEqual(['actions', 'series']);
        const notices: string[] = [];
        stranger.on('notice', (notice) => notices.push(notice.message ?? ''));
        await stranger.query('VACUUM (SKIP_LOCKED) vac_roles.actions');
        expect(notices).toEqual([]);
      } else {
        // Older servers have no MAINTAIN: the function does not name it there (no error), and lists nothing more.
        expect((await stranger.query(`SELECT count(*)::int AS n FROM vac_roles.vacuum_candidates(0)`)).rows).toEqual([{ n: 0 }]);
      }
    } finally {
      await stranger.end();
    }
  });
});
