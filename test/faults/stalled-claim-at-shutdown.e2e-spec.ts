import { eventually, FAULT, FaultApp, faultApps, FaultDriverConfig, report, within } from './support/fault-app';
import { FaultLedger } from './support/fault-ledger';
import { proxiedRedis } from './support/proxied-redis';
import { driverScript } from './support/driver-scripts';

/**
 * Redis stalls (SIGSTOP) while a claim of due actions is on its way, and the
 * instance shuts down meanwhile: drain stops waiting for the claim after
 * `shutdownTimeout` (short), while the claim still settles within
 * `commandTimeout` (long). Redis comes back before that: the claim ran, and
 * what it took must not be left to its lease (with `attempts: 1` a second
 * instance would then bury it), nor run by an instance that is closing and
 * can no longer record its outcome.
 */
const LEASE = '5s';
const COMMAND_TIMEOUT = '5s';
const KEYS = Array.from({ length: 10 }, (_, n) => `k${n}`);

describe('faults: Redis stalls with a claim in flight while the instance shuts down', () => {
  const apps = faultApps();
  const rig = proxiedRedis('test', () => apps.closeAll());

  async function instance(prefix: string, ledger: FaultLedger, how: { proxied: boolean; consume: boolean }, extra: Partial<FaultDriverConfig> = {}): Promise<FaultApp> {
    const url = how.proxied ? rig.proxy.url : rig.redis.url;
    const app = await apps.boot({ type: 'redis', url, prefix, lease: LEASE, commandTimeout: COMMAND_TIMEOUT, ...extra }, { consume: how.consume, shutdownTimeout: '300ms' });
    app.handlers.ledger = ledger;
    return app;
  }

  /**
   * Arms the actions of KEYS due in a second, and stops Redis at the worker's claim of them: before the proxy passes
   * it on (it then waits in the socket, unanswered). One sent just before the last is due runs once Redis is back,
   * and takes it then. Returns when Redis was stopped (0 until then).
   */
  async function stallAtTheClaim(producer: FaultApp, ledger: FaultLedger): Promise<() => number> {
    let dueAt = 0;
    for (const key of KEYS) {
      const { dueAt: at } = await producer.delay.schedule(FAULT.once, key, { delay: 1_000 });
      ledger.armed(FAULT.once, key, at);
      dueAt = Math.max(dueAt, at.getTime());
    }
    const claimsOfTopic = driverScript('claim');
    let pausedAt = 0;
    rig.proxy.onCommand((words) => {
      if (pausedAt === 0 && Date.now() > dueAt - 100 && claimsOfTopic(words) && words.some((word) => word.includes(`{${FAULT.once}}`))) {
        pausedAt = Date.now();
        rig.redis.pause();
      }
      return false;
    }, 'before');
    return () => pausedAt;
  }

  it('the claim answered after drain gave up on it: every action runs once, as attempt 1, within the lease of the close; none dead', async () => {
    const prefix = `stalled-claim-${process.pid}`;
    const ledger = new FaultLedger();
    const producer = await instance(prefix, ledger, { proxied: false, consume: false });
    const worker = await instance(prefix, ledger, { proxied: true, consume: true });
    const pausedAt = await stallAtTheClaim(producer, ledger);
    let quitAt = 0;
    rig.proxy.onCommand((words) => {
      if (words[0] === 'quit' && quitAt === 0) quitAt = Date.now();
      return false;
    }, 'before');
    expect(await eventually(() => pausedAt() > 0, 5_000)).toBe(true);
    const closing = within(worker.app.close(), 20_000, 'the worker app.close()');
    // Redis comes back once drain gave up on the claim (shutdownTimeout: 300 ms): when close sends QUIT, or 2 s after
    // the close began if drain waits for the claim (it settles within commandTimeout, 5 s).
    await eventually(() => quitAt > 0, 2_000);
    const resumedAt = Date.now();
    rig.redis.resume();
    await closing;
    const closedAt = Date.now();
    await instance(prefix, ledger, { proxied: false, consume: true });
    const allRan = await eventually(() => ledger.tally().lost === 0, 8_000);
    const settled = await eventually(async () => (await producer.delay.count(FAULT.once)) === 0, 8_000);
    const dead = await producer.delay.countDead(FAULT.once);
    const perKey = [...new Set(KEYS.map((key) => ledger.runsOf(FAULT.once, key).length))];
    const attempts = [...new Set(ledger.runsOf(FAULT.once).map((run) => run.attempt))];
    const lastStart = ledger.runs.length > 0 ? Math.max(...ledger.runs.map((run) => run.startedAt)) - closedAt : -1;
    const ranWhileClosing = ledger.runs.filter((run) => run.startedAt < closedAt).length;
    report(
      `stalled claim at shutdown: resumed ${resumedAt - pausedAt()} ms after the stall, closed ${closedAt - resumedAt} ms after that; ` +
        `${ledger.runs.length} runs (${ranWhileClosing} by the closing instance, the last ${lastStart} ms after the close); dead ${dead}`,
    );
    expect({ allRan, settled, perKey, attempts, dead }).toEqual({ allRan: true, settled: true, perKey: [1], attempts: [1], dead: 0 });
  }, 45_000);

  it('Redis stays stopped for the whole shutdown: app.close() still settles within shutdownTimeout + 3 x commandTimeout (the claim, the ask, the QUIT)', async () => {
    const prefix = `stalled-claim-stays-${process.pid}`;
    const ledger = new FaultLedger();
    // The worker's bound: commandTimeout 2 s (1 s was too short to connect at boot on a busy machine).
    const fast = { lease: '2s', commandTimeout: '2s' } as const;
    const producer = await instance(prefix, ledger, { proxied: false, consume: false }, { lease: '2s' });
    const worker = await instance(prefix, ledger, { proxied: true, consume: true }, fast);
    const pausedAt = await stallAtTheClaim(producer, ledger);
    expect(await eventually(() => pausedAt() > 0, 5_000)).toBe(true);
    const closeStarted = Date.now();
    try {
      await within(worker.app.close(), 20_000, 'the worker app.close()');
    } finally {
      rig.redis.resume();
    }
    const took = Date.now() - closeStarted;
    report(`Redis stopped for the whole shutdown: app.close() took ${took} ms (shutdownTimeout 300 ms, commandTimeout 2000 ms)`);
    // A busy machine's margin on top of the bound.
    expect(took).toBeLessThan(300 + 3 * 2_000 + 1_500);
  }, 45_000);
});
