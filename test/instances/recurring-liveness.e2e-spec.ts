// A run of a recurring schedule killed with its process (kill -9) on Redis,
// with the default lease (30 s): the schedule runs again within seconds (the
// 5 s recurring lease), for overlap 'skip' (the default) and 'bufferOne'.
import { fleetSuite } from './support/instances';
import { exerciseKillDuringRun } from './support/recurring-liveness';

describe('instances: a killed run of a recurring schedule holds it back for seconds, not a lease (Redis)', () => {
  const suite = fleetSuite();

  it.each(['skip', 'bufferOne'] as const)('overlap %s', async (overlap) => {
    await exerciseKillDuringRun(suite.fleet(`liveness-${overlap}`, 'unused.one-off'), {}, overlap, 'redis');
  }, 120_000);
});
