import IORedis from 'ioredis';
import { DelayService } from 'nestjs-delay';
import { pollUntil, sleep } from '../conformance/support/driver-fixture';
import { Probe, TOPIC } from '../conformance/support/probe';
import { redisAppSuite } from './support/redis-app-suite';

/** Commands the server ran since the last CONFIG RESETSTAT, by name, leaving out our own INFO and CONFIG. */
async function commandStats(raw: IORedis): Promise<Record<string, number>> {
  const stats: Record<string, number> = {};
  for (const line of (await raw.info('commandstats')).split('\r\n')) {
    const match = /^cmdstat_([^:]+):calls=(\d+)/.exec(line);
    if (match && match[1] !== 'info' && !match[1].startsWith('config')) stats[match[1]] = Number(match[2]);
  }
  return stats;
}

/** A consumer with nothing due sleeps: no polling, it waits for the next due time or a wake message. */
describe('Redis driver: an idle consumer', () => {
  const suite = redisAppSuite();

  it('issues no Redis command for a second while nothing is due, and still wakes for new work', async () => {
    const app = await suite.boot({ driver: { type: 'redis', url: suite.url(), prefix: 'idle' }, shutdownTimeout: '1s' }, [Probe]);
    const delay = app.get(DelayService);
    const probe = app.get(Probe);
    // Something pending an hour out: the consumer holds a timer for it, and must not poll meanwhile.
    await delay.schedule(TOPIC.basic, 'later', { delay: '1h' });
    await sleep(100);

    await suite.raw().config('RESETSTAT');
    await sleep(1_000);
    expect(await commandStats(suite.raw())).toEqual({});

    // The measurement sees commands when there are some: a new action wakes the consumer and runs.
    await delay.schedule(TOPIC.basic, 'now', { delay: 50 });
    await pollUntil(() => probe.calls.length === 1, 'the new action', 2_000);
    const busy = await commandStats(suite.raw());
    expect(Object.values(busy).reduce((sum, calls) => sum + calls, 0)).toBeGreaterThan(0);
    expect(probe.calls.map((call) => call.key)).toEqual(['now']);
  });
});
