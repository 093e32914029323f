import IORedis from 'ioredis';
import { eventually, FAULT, faultApps, report } from './support/fault-app';
import { FaultLedger } from './support/fault-ledger';
import { proxiedRedis } from './support/proxied-redis';

/**
 * The driver's script calls go two ways (redis-script-calls.ts): built
 * directly (EVALSHA, source resent on NOSCRIPT) for a plain client, through
 * the client's own script methods for one with a key prefix or
 * auto-pipelining. Both must keep scheduling, claiming and recording after
 * Redis's script cache is flushed, and across a restart of Redis that lost
 * its scripts (no persistence).
 */
describe('faults: script calls on every client shape, after SCRIPT FLUSH and a restart', () => {
  const apps = faultApps();
  const rig = proxiedRedis('file', () => apps.closeAll());

  const shapes: Array<[string, () => { options?: Record<string, unknown>; client?: IORedis }]> = [
    ['a plain client (direct calls)', () => ({ options: { host: '127.0.0.1', port: rig.redis.port } })],
    ['a client with keyPrefix (its own script methods)', () => ({ options: { host: '127.0.0.1', port: rig.redis.port, keyPrefix: 'kp:' } })],
    ['a given client with enableAutoPipelining (its own script methods)', () => ({ client: new IORedis({ host: '127.0.0.1', port: rig.redis.port, enableAutoPipelining: true, lazyConnect: true }) })],
  ];

  it.each(shapes)('%s: actions scheduled before and after a SCRIPT FLUSH run once each, and are acked', async (name, shape) => {
    const given = shape();
    const ledger = new FaultLedger();
    const prefix = `paths-${process.pid}-${name.length}`;
    try {
      const app = await apps.boot({ type: 'redis', ...given, prefix });
      app.handlers.ledger = ledger;
      const raw = new IORedis(rig.redis.port, '127.0.0.1');
      try {
        for (const round of ['before', 'after']) {
          if (round === 'after') await raw.script('FLUSH');
          const items = Array.from({ length: 20 }, (_, n) => ({ key: `${round}-${n}`, delay: 10 }));
          const many = await app.delay.scheduleMany(FAULT.once, items);
          for (const [n, item] of items.entries()) ledger.armed(FAULT.once, item.key, many[n].dueAt);
          const single = await app.delay.schedule(FAULT.once, `${round}-single`, { delay: 10 });
          ledger.armed(FAULT.once, `${round}-single`, single.dueAt);
          expect(await eventually(() => ledger.tally().lost === 0, 5_000)).toBe(true);
        }
        const acked = await eventually(async () => (await app.delay.count(FAULT.once)) === 0, 5_000);
        const tally = ledger.tally();
        report(`script calls, ${name}: ${tally.fired} runs, ${tally.firedTwice} twice; acked ${acked}`);
        expect({ acked, twice: tally.firedTwice, lost: tally.lost, dead: await app.delay.countDead(FAULT.once) }).toEqual({ acked: true, twice: 0, lost: 0, dead: 0 });
      } finally {
        raw.disconnect();
      }
    } finally {
      given.client?.disconnect();
    }
  }, 30_000);
});
