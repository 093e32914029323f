import { FaultProxy } from '../support/fault-proxy';
import { describeTally, eventually, FAULT, faultApps, sleep, report } from './support/fault-app';
import { proxiedRedis } from './support/proxied-redis';
import { faultRandom } from './support/fault-seed';

/**
 * The worker's pub/sub connection dies silently (an idle-timeout NAT or load
 * balancer: no RST, nothing arrives), while the worker is idle with no timer
 * armed. Actions another client schedules must still run within a bounded
 * time (the wakeCheck period, 1 s here, plus slack), not never.
 */
describe('faults: a silently dead subscriber connection on an idle worker', () => {
  const apps = faultApps();
  const rig = proxiedRedis('test', () => apps.closeAll());

  const cases = [
    { fault: 'black-holed both ways', seed: 821, cut: (p: FaultProxy) => p.blackhole('subscribers') },
    { fault: 'half-open (nothing reaches the worker)', seed: 822, cut: (p: FaultProxy) => p.halfOpen('subscribers') },
  ];

  it.each(cases)('subscriber $fault: actions scheduled elsewhere still run within seconds (seed $seed)', async ({ seed, cut }) => {
    const random = faultRandom(seed);
    const prefix = `silent-${process.pid}-${seed}`;
    const worker = await apps.boot({ type: 'redis', url: rig.proxy.url, prefix });
    const subscribed = await eventually(() => rig.proxy.subscribers > 0, 3_000);
    cut(rig.proxy);
    await sleep(200);

    // Another client (its own connection, not through the rig.proxy) schedules work while the worker idles.
    const producer = await apps.boot({ type: 'redis', url: rig.redis.url, prefix }, { consume: false });
    const ledger = worker.handlers.ledger;
    let lastDue = 0;
    for (let n = 0; n < 15; n++) {
      const pending = await producer.delay.schedule(FAULT.basic, `s${n}`, { delay: random.int(100, 800) });
      ledger.armed(FAULT.basic, `s${n}`, pending.dueAt);
      lastDue = Math.max(lastDue, pending.dueAt.getTime());
    }
    // wakeCheck is 1 s: allow it three times over, and a second more for a loaded machine.
    const bound = 4_000;
    const allRan = await eventually(() => ledger.tally().lost === 0, lastDue - Date.now() + bound);
    const tally = ledger.tally();
    const latest = Math.max(0, ...ledger.runs.map((run) => run.startedAt - run.dueAt));
    report(`silent subscriber (seed ${random.seed}): ${describeTally(tally)}; latest run ${latest} ms after its due time`);
    expect({ seed: random.seed, subscribed, allRan, lost: tally.lost, early: tally.early }).toEqual({ seed: random.seed, subscribed: true, allRan: true, lost: 0, early: 0 });
  }, 30_000);
});
