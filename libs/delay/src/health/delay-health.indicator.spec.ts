import { HealthIndicatorService } from '@nestjs/terminus';
import { DelayService } from '../delay.service';
import { DelayHealth } from '../interfaces/delay-health.interface';
import { DelayHealthIndicator } from './delay-health.indicator';

/** An indicator over a DelayService whose health() answers what the test says. */
function indicatorFor(health: () => Promise<DelayHealth>): DelayHealthIndicator {
  return new DelayHealthIndicator({ health } as unknown as DelayService, new HealthIndicatorService());
}

const topic = (name: string, overrides: Partial<DelayHealth['topics'][number]> = {}): DelayHealth['topics'][number] => ({
  topic: name,
  consuming: true,
  consumerAlive: true,
  lagMs: 0,
  paused: false,
  ...overrides,
});

describe('DelayHealthIndicator', () => {
  it('is down within its own timeout when the driver never answers', async () => {
    const started = performance.now();
    const result = await indicatorFor(() => new Promise<DelayHealth>(() => undefined)).isHealthy('delay', { timeout: '100ms' });
    expect(result).toEqual({ delay: { status: 'down', reason: 'no answer from the delay driver within 100 ms' } });
    // Generous: what matters is that it answers, not a hang.
    expect(performance.now() - started).toBeLessThan(2_000);
  });

  it('lists every threshold crossed; a paused topic is not held to maxLag; topics narrows the check', async () => {
    const health: DelayHealth = {
      driver: 'redis',
      up: true,
      roundTripMs: 40,
      topics: [topic('a', { lagMs: 5_000 }), topic('b', { consumerAlive: false }), topic('c', { lagMs: 60_000, paused: true }), topic('d', { lagMs: 9_000 })],
    };
    const indicator = indicatorFor(async () => health);
    const all = await indicator.isHealthy('delay', { maxRoundTrip: '20ms', maxLag: '1s' });
    expect(all.delay.status).toBe('down');
    expect(all.delay.reason).toBe('round trip 40 ms is over 20 ms; a: lag 5000 ms is over 1000 ms; b: its consumer in this process is not running; d: lag 9000 ms is over 1000 ms');

    const some = await indicator.isHealthy('delay', { maxLag: '1s', topics: ['c'] });
    expect(some).toEqual({ delay: { status: 'up', driver: 'redis', roundTripMs: 40, topics: { c: { consuming: true, consumerAlive: true, lagMs: 60_000, paused: true } } } });
    expect((await indicator.isHealthy('delay', { topics: ['b'], requireConsumers: false })).delay.status).toBe('up');
  });

  it('is down when the store does not answer, with the reason', async () => {
    const result = await indicatorFor(async () => ({ driver: 'redis', up: false, roundTripMs: 0, topics: [] })).isHealthy('queue');
    expect(result.queue).toMatchObject({ status: 'down', reason: "the redis driver's store does not answer" });
  });
});
