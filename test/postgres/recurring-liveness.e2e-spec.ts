// A run of a recurring schedule killed with its process (kill -9) on
// PostgreSQL, with the default lease (30 s): the schedule runs again within
// seconds (the 5 s recurring lease), for overlap 'skip' (the default) and
// 'bufferOne'.
import { Fleet } from '../instances/support/instances';
import { exerciseKillDuringRun } from '../instances/support/recurring-liveness';
import { TestPostgresServer } from '../support/postgres-server';

describe('postgres: a killed run of a recurring schedule holds it back for seconds, not a lease', () => {
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

  it.each(['skip', 'bufferOne'] as const)('overlap %s', async (overlap) => {
    // The worker takes `prefix` as the schema.
    fleet = new Fleet({ url: server.url, prefix: `liveness_${overlap.toLowerCase()}_${process.pid}`, topic: 'unused.one-off' });
    await exerciseKillDuringRun(fleet, { driver: 'postgres' }, overlap, 'postgres');
  }, 120_000);
});
