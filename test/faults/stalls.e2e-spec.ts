import { DelayService, DriverUnavailableError } from 'nestjs-delay';
import { COMMAND_TIMEOUT_MS, eventually, FAULT, faultApps, sleep, report } from './support/fault-app';
import { proxiedRedis } from './support/proxied-redis';
import { watchTimerLateness } from '../support/timer-lateness';

/** What a loaded machine may add to the configured bound before a call counts as late. */
const SLACK_MS = 1_500;
/** Long enough that a call waiting for the end of the stall is clearly past the bound. */
const STALL_MS = 4_500;

interface Settled {
  readonly call: string;
  readonly outcome: 'resolved' | 'unavailable' | string;
  readonly withinBound: boolean;
  readonly ms: number;
  /** The DriverUnavailableError's message, when it rejected with one. */
  readonly message?: string;
}

/** Every public call of the service once, each timed from its start until it settles (or the stall ends). */
async function callEverything(delay: DelayService): Promise<Settled[]> {
  const calls: Array<[string, () => Promise<unknown>]> = [
    ['schedule', () => delay.schedule(FAULT.basic, 'stalled', { delay: 60_000 })],
    ['scheduleMany', () => delay.scheduleMany(FAULT.basic, [{ key: 'stalled-many', delay: 60_000 }])],
    ['cancel', () => delay.cancel(FAULT.basic, 'kept')],
    ['reschedule', () => delay.reschedule(FAULT.basic, 'kept', { delay: 90_000 })],
    ['get', () => delay.get(FAULT.basic, 'kept')],
    ['list', () => delay.list(FAULT.basic)],
    ['count', () => delay.count(FAULT.basic)],
    ['collect', () => delay.collect(FAULT.batch, 'stalled-batch', { n: 1 }, { window: '1m' })],
    ['countDead', () => delay.countDead(FAULT.basic)],
  ];
  const bound = COMMAND_TIMEOUT_MS + SLACK_MS;
  return Promise.all(
    calls.map(async ([call, run]) => {
      const started = performance.now();
      // A busy machine delays the library's own timeout by as much as it delays any timer (see watchTimerLateness).
      const lateness = watchTimerLateness();
      let timer: NodeJS.Timeout | undefined;
      const cap = new Promise<string>((resolve) => {
        timer = setTimeout(() => resolve('still pending at the end of the stall'), STALL_MS);
      });
      let message: string | undefined;
      const outcome = await Promise.race([
        run().then(
          () => 'resolved',
          (error: unknown) => {
            if (!(error instanceof DriverUnavailableError)) return `rejected with ${String(error)}`;
            message = error.message;
            return 'unavailable';
          },
        ),
        cap,
      ]);
      clearTimeout(timer);
      const ms = Math.round(performance.now() - started);
      return { call, outcome, withinBound: ms - lateness() <= bound, ms, message };
    }),
  );
}

/**
 * Redis stops answering, with its sockets open: a SIGSTOP of the server, or
 * a partition on the way to it. Every call settles within the configured
 * commandTimeout (plus slack for a loaded machine), resolving or rejecting
 * with DriverUnavailableError; once the fault ends, the app works again.
 */
describe('faults: Redis stops answering', () => {
  const apps = faultApps();
  const rig = proxiedRedis('file', () => apps.closeAll());

  // With the connection open and silent, a call can only end by its timeout, and its error says so.
  const stalls: Array<{ fault: string; timesOut: boolean; begin: () => void; end: () => void }> = [
    { fault: 'SIGSTOP of redis-server', timesOut: true, begin: () => rig.redis.pause(), end: () => rig.redis.resume() },
    { fault: 'a network partition (nothing passes, nothing answers)', timesOut: true, begin: () => rig.proxy.blackhole(), end: () => rig.proxy.heal() },
    {
      fault: 'a partition, then a reset during it',
      timesOut: false,
      begin: () => {
        rig.proxy.blackhole();
        setTimeout(() => rig.proxy.reset(), 300).unref();
      },
      end: () => rig.proxy.heal(),
    },
  ];

  it.each(stalls)('$fault: every call settles within commandTimeout, and the app works again after', async ({ timesOut, begin, end }) => {
    const fa = await apps.boot({ type: 'redis', url: rig.proxy.url });
    await fa.delay.schedule(FAULT.basic, 'kept', { delay: 60_000 });
    const began = Date.now();
    begin();
    let settled: Settled[];
    try {
      settled = await callEverything(fa.delay);
    } finally {
      await sleep(STALL_MS - (Date.now() - began));
      end();
    }
    const late = settled.filter((entry) => !entry.withinBound || (entry.outcome !== 'resolved' && entry.outcome !== 'unavailable'));
    report(`${settled.map((entry) => `${entry.call} ${entry.outcome} in ${entry.ms} ms`).join('; ')}`);
    expect(late).toEqual([]);
    if (timesOut) {
      // "names the call and the bound": the bound as configured (1s), in some spelling.
      const unnamed = settled.filter((entry) => entry.outcome === 'unavailable' && !/\b1 ?s\b|\b1000 ?ms\b|\b1 second\b/i.test(entry.message ?? ''));
      expect(unnamed.map((entry) => ({ call: entry.call, message: entry.message }))).toEqual([]);
    }

    // After the fault: calls work and a new action fires.
    // (Calls that timed out may or may not have been applied meanwhile: only that calls answer again is asserted.)
    const recovered = await eventually(async () => (await fa.delay.count(FAULT.basic)) >= 0, 5_000);
    const after = await eventually(async () => {
      fa.handlers.ledger.armed(FAULT.basic, 'after', (await fa.delay.schedule(FAULT.basic, 'after', { delay: 100 })).dueAt);
      return true;
    }, 5_000);
    const fired = await eventually(() => fa.handlers.ledger.runsOf(FAULT.basic, 'after').length > 0, 4_000);
    expect({ recovered, after, fired }).toEqual({ recovered: true, after: true, fired: true });
  }, 30_000);
});
