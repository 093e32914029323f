import { describeTally, eventually, FAULT, faultApps, report } from './support/fault-app';
import { proxiedRedis } from './support/proxied-redis';
import { driverScript } from './support/driver-scripts';

/**
 * The connection drops after Redis ran a claim but before its reply arrived.
 * The claimed actions must still run, soon (not a whole lease later), and
 * the lost claim must not cost an attempt: with `attempts: 1`, nothing may
 * be dead-lettered without its handler having run.
 */
describe('faults: a lost claim reply', () => {
  const apps = faultApps();
  const rig = proxiedRedis('file', () => apps.closeAll());

  it('with attempts: 1, every claimed action still runs once, within seconds, as attempt 1, and none is dead-lettered', async () => {
    const prefix = `lost-claim-${process.pid}`;
    // A lease far longer than the wait below: recovery must not come from the lease expiring.
    const lease = '20s';
    const producer = await apps.boot({ type: 'redis', url: rig.redis.url, prefix, lease }, { consume: false });
    const keys = Array.from({ length: 30 }, (_, n) => `c${n}`);
    for (const key of keys) producer.handlers.ledger.armed(FAULT.once, key, (await producer.delay.schedule(FAULT.once, key, { delay: 1 })).dueAt);

    // The worker's first claim of this topic runs in Redis, and its reply is lost.
    const claimsOfTopic = driverScript('claim');
    const lost = rig.proxy.dropReplies((words) => claimsOfTopic(words) && words.some((word) => word.includes(`{${FAULT.once}}`)), 1);
    const worker = await apps.boot({ type: 'redis', url: rig.proxy.url, prefix, lease });
    const ledger = producer.handlers.ledger;
    worker.handlers.ledger = ledger;

    const allRan = await eventually(() => ledger.tally().lost === 0, 6_000);
    const dead = await producer.delay.countDead(FAULT.once);
    const pending = await producer.delay.count(FAULT.once);
    const tally = ledger.tally();
    report(`lost claim reply (${lost.length} lost): ${describeTally(tally)}; dead-lettered ${dead}; still pending ${pending}`);
    expect({
      claimRepliesLost: lost.length,
      allRan,
      lost: tally.lost,
      firedTwice: tally.firedTwice,
      attempts: [...new Set(ledger.runs.map((run) => run.attempt))],
      deadLettered: dead,
      pending,
    }).toEqual({ claimRepliesLost: 1, allRan: true, lost: 0, firedTwice: 0, attempts: [1], deadLettered: 0, pending: 0 });
  }, 30_000);
});
