// Recurring schedules across real processes on one PostgreSQL: the scenario of
// test/instances/recurring.e2e-spec.ts (test/instances/support/recurring-fleet.ts)
// on the postgres driver. Three consumers, 200 schedules every 1, 2 or 3 s
// (missed 'all', overlap 'allow', so every scheduled instant must run), a
// kill -9 of a consumer and a kill -9 and restart of PostgreSQL in the middle.
import { Fleet, sleep } from '../instances/support/instances';
import { runRecurringFleet } from '../instances/support/recurring-fleet';
import { TestPostgresServer } from '../support/postgres-server';

/** The run's length, kept short for the suite's budget (2 shared cores). */
const RUN_MS = 30_000;

describe('postgres: recurring schedules across processes', () => {
  let server: TestPostgresServer;
  let fleet: Fleet | undefined;

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

  it(`200 schedules every 1-3 s on 3 instances for ${RUN_MS / 1000} s, a kill -9 and a PostgreSQL kill -9 and restart: no occurrence twice, none missed`, async () => {
    // The worker takes `prefix` as the schema.
    fleet = new Fleet({ url: server.url, prefix: `recproc_${process.pid}`, topic: 'unused.one-off' });
    await runRecurringFleet({
      fleet,
      options: { driver: 'postgres', lease: '2s' },
      restartStore: async () => {
        await server.kill();
        await sleep(1_500);
        await server.boot();
      },
      topic: 'reports.recurring',
      schedules: 200,
      runMs: RUN_MS,
      settleMs: 4_000,
      label: 'postgres recurring',
    });
  }, 180_000);
});
