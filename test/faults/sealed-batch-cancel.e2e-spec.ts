import { TestRedisServer } from '../support/redis-server';
import { eventually, FAULT, faultApps, sleep } from './support/fault-app';

/**
 * A batch that filled up (maxItems) is due at once, but has not started when
 * its key is cancelled. cancel says true, the batch never runs, and get and
 * count agree that nothing is left, whether or not a newer batch was opened
 * under the key after it filled.
 */
describe('faults: cancel of a batch sealed by maxItems that has not started', () => {
  let redis: TestRedisServer;
  const apps = faultApps();

  beforeAll(async () => {
    redis = await TestRedisServer.start();
  });
  afterAll(async () => {
    await apps.closeAll();
    await redis.dispose();
  });

  it.each([
    { shape: 'only the sealed batch', extra: 0 },
    { shape: 'the sealed batch and a newer open one', extra: 1 },
  ])('$shape: cancel is true, nothing runs, get is null and count is 0', async ({ shape, extra }) => {
    const prefix = `sealed-${process.pid}-${extra}`;
    // No consumer yet: the sealed batch cannot start before the cancel.
    const producer = await apps.boot({ type: 'redis', url: redis.url, prefix }, { consume: false });
    const statuses = [];
    for (let n = 0; n < 3 + extra; n++) statuses.push(await producer.delay.collect(FAULT.batch, 'order', { n }, { window: '1m', maxItems: 3 }));
    const sealed = statuses[2].flushed;

    const cancelled = await producer.delay.cancel(FAULT.batch, 'order');
    // Before any consumer: what is left must read as nothing, both ways.
    const gotBefore = await producer.delay.get(FAULT.batch, 'order');
    const countBefore = await producer.delay.count(FAULT.batch);
    const worker = await apps.boot({ type: 'redis', url: redis.url, prefix });
    // A consumer now runs the topic; a due batch would start within a few hundred ms.
    const ran = await eventually(() => worker.handlers.ledger.runs.length > 0, 1_500);
    await sleep(100);
    const got = await worker.delay.get(FAULT.batch, 'order');
    const count = await worker.delay.count(FAULT.batch);
    expect({
      shape,
      sealed,
      cancelled,
      gotBefore,
      countBefore,
      ran,
      runs: worker.handlers.ledger.runs.map((run) => run.items?.length),
      got,
      count,
    }).toEqual({ shape, sealed: true, cancelled: true, gotBefore: null, countBefore: 0, ran: false, runs: [], got: null, count: 0 });
  }, 20_000);
});
