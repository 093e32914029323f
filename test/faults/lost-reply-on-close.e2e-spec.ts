import { DriverUnavailableError } from 'nestjs-delay';
import { FaultProxy } from '../support/fault-proxy';
import { FaultLedger } from './support/fault-ledger';
import { eventually, FAULT, FaultApp, faultApps, FaultDriverConfig, report, within } from './support/fault-app';
import { proxiedRedis } from './support/proxied-redis';
import { driverScript } from './support/driver-scripts';

/**
 * A reply lost because its connection closed (Redis ran the command, the
 * socket went before the answer came back). The calls in flight on that
 * socket must fail at once, not after `commandTimeout`, and the consumer
 * must ask again on the new connection: handlers run, and outcomes are
 * recorded, within 2.5 s of the reconnect. The lease (5 s) is no longer
 * than the command timeout (5 s, the default): recovery that waited for the
 * timeout would find the lease run out, and with `attempts: 1` a second,
 * healthy instance would then send the actions to the dead set without
 * running them.
 */
const LEASE = '5s';
const COMMAND_TIMEOUT = '5s';
const RECOVERY_MS = 2_500;
const KEYS = Array.from({ length: 20 }, (_, n) => `k${n}`);

describe('faults: a reply lost with its connection', () => {
  const apps = faultApps();
  const rig = proxiedRedis('test', () => apps.closeAll());
  let prefixes = 0;

  /** An instance with the test's lease and command timeout, straight to Redis or through the proxy; every instance writes to `ledger`. */
  async function instance(prefix: string, ledger: FaultLedger, how: { proxied: boolean; consume: boolean; shutdownTimeout?: string }, extra: Partial<FaultDriverConfig> = {}): Promise<FaultApp> {
    const url = how.proxied ? rig.proxy.url : rig.redis.url;
    const options = { consume: how.consume, ...(how.shutdownTimeout ? { shutdownTimeout: how.shutdownTimeout } : {}) };
    const app = await apps.boot({ type: 'redis', url, prefix, lease: LEASE, commandTimeout: COMMAND_TIMEOUT, ...extra }, options);
    app.handlers.ledger = ledger;
    return app;
  }

  /** When the client reconnected after the proxy's last reset: the first connection accepted after it. */
  function reconnectedAt(proxy: FaultProxy): number | undefined {
    const resetAt = proxy.resetAt[proxy.resetAt.length - 1];
    return proxy.acceptedAt.find((at) => at >= resetAt);
  }

  /** Runs per key, and the attempts they ran as. */
  function runsByKey(ledger: FaultLedger): { perKey: number[]; attempts: number[] } {
    return {
      perKey: [...new Set(KEYS.map((key) => ledger.runsOf(FAULT.once, key).length))],
      attempts: [...new Set(ledger.runsOf(FAULT.once).map((run) => run.attempt))],
    };
  }

  it('claim: the instance asks again on the new connection; every handler runs once, as attempt 1, within 2.5 s of the reconnect; none dead', async () => {
    const prefix = `lost-close-claim-${process.pid}-${++prefixes}`;
    const ledger = new FaultLedger();
    const producer = await instance(prefix, ledger, { proxied: false, consume: false });
    for (const key of KEYS) ledger.armed(FAULT.once, key, (await producer.delay.schedule(FAULT.once, key, { delay: 1 })).dueAt);

    const claimsOfTopic = driverScript('claim');
    const lost = rig.proxy.dropReplies((words) => claimsOfTopic(words) && words.some((word) => word.includes(`{${FAULT.once}}`)), 1);
    await instance(prefix, ledger, { proxied: true, consume: true });
    expect(await eventually(() => lost.length === 1, 5_000)).toBe(true);
    // A second, healthy instance: it would take the actions over (as attempt 2, so dead) if their lease ran out first.
    await instance(prefix, ledger, { proxied: false, consume: true });

    const allRan = await eventually(() => ledger.tally().lost === 0, 8_000);
    const reconnect = reconnectedAt(rig.proxy);
    const lastStart = Math.max(...ledger.runs.map((run) => run.startedAt));
    const drained = await eventually(async () => (await producer.delay.count(FAULT.once)) === 0, 3_000);
    const dead = await producer.delay.countDead(FAULT.once);
    report(`lost claim reply on close: handlers done ${reconnect === undefined ? '?' : lastStart - reconnect} ms after the reconnect; ${ledger.runs.length} runs; dead ${dead}`);
    expect({ allRan, reconnected: reconnect !== undefined, ...runsByKey(ledger), drained, dead }).toEqual({ allRan: true, reconnected: true, perKey: [1], attempts: [1], drained: true, dead: 0 });
    expect(lastStart - (reconnect ?? 0)).toBeLessThanOrEqual(RECOVERY_MS);
  }, 30_000);

  it('claim, reply lost, then shutdown before it is asked again: what it took is handed back (attempt 1, run once elsewhere at once, none dead), not left to its lease', async () => {
    const prefix = `lost-close-claim-stop-${process.pid}-${++prefixes}`;
    const ledger = new FaultLedger();
    const producer = await instance(prefix, ledger, { proxied: false, consume: false });
    for (const key of KEYS) ledger.armed(FAULT.once, key, (await producer.delay.schedule(FAULT.once, key, { delay: 1 })).dueAt);
    const claimsOfTopic = driverScript('claim');
    // Every reply to a claim of the topic is lost (the worker's first claim takes all 20; asked again, it loses the
    // answer again) until the worker is shutting down.
    const lost = rig.proxy.dropReplies((words) => claimsOfTopic(words) && words.some((word) => word.includes(`{${FAULT.once}}`)), 1_000);
    const worker = await instance(prefix, ledger, { proxied: true, consume: true });
    expect(await eventually(() => lost.length >= 2, 5_000)).toBe(true);
    const closing = within(worker.app.close(), 15_000, 'the worker app.close()');
    await new Promise((resolve) => setTimeout(resolve, 50));
    rig.proxy.clearRules();
    await closing;
    const closedAt = Date.now();
    expect(ledger.runs).toEqual([]);
    // A healthy instance runs them at once, as attempt 1: without the hand-back they would wait out their lease
    // (5 s) and come back as attempt 2, which `attempts: 1` sends to the dead set without running.
    await instance(prefix, ledger, { proxied: false, consume: true });
    const allRan = await eventually(() => ledger.tally().lost === 0, 8_000);
    const ranWithin = Math.max(...ledger.runs.map((run) => run.startedAt)) - closedAt;
    const dead = await producer.delay.countDead(FAULT.once);
    report(`lost claim reply, then shutdown: ${ledger.runs.length} runs, the last ${ranWithin} ms after the close; dead ${dead}`);
    expect({ allRan, ...runsByKey(ledger), dead }).toEqual({ allRan: true, perKey: [1], attempts: [1], dead: 0 });
    expect(ranWithin).toBeLessThan(4_000);
  }, 30_000);

  it('complete, reply lost: the run is done within 2.5 s of the reconnect (the worker closes at once, nothing left in flight); every handler ran once, as attempt 1; none dead', async () => {
    const prefix = `lost-close-complete-${process.pid}-${++prefixes}`;
    const ledger = new FaultLedger();
    const producer = await instance(prefix, ledger, { proxied: false, consume: false });
    const lost = rig.proxy.dropReplies(driverScript('complete'), 1);
    // Its shutdown waits up to 10 s for runs whose outcome is not recorded yet.
    const worker = await instance(prefix, ledger, { proxied: true, consume: true, shutdownTimeout: '10s' });
    for (const key of KEYS) ledger.armed(FAULT.once, key, (await producer.delay.schedule(FAULT.once, key, { delay: 1 })).dueAt);
    expect(await eventually(() => lost.length === 1, 5_000)).toBe(true);
    await instance(prefix, ledger, { proxied: false, consume: true });
    expect(await eventually(() => reconnectedAt(rig.proxy) !== undefined, 5_000)).toBe(true);

    await within(worker.app.close(), 15_000, 'the worker app.close()');
    const closedAt = Date.now();
    const reconnect = reconnectedAt(rig.proxy) ?? 0;
    // What the closed worker left is the healthy instance's to finish; on a busy machine that can take a few seconds.
    const drained = await eventually(async () => (await producer.delay.count(FAULT.once)) === 0, 10_000);
    const allRan = await eventually(() => ledger.tally().lost === 0, 5_000);
    const dead = await producer.delay.countDead(FAULT.once);
    report(`lost complete reply on close: worker closed ${closedAt - reconnect} ms after the reconnect; ${ledger.runs.length} runs; dead ${dead}`);
    expect({ allRan, ...runsByKey(ledger), drained, dead }).toEqual({ allRan: true, perKey: [1], attempts: [1], drained: true, dead: 0 });
    expect(closedAt - reconnect).toBeLessThanOrEqual(RECOVERY_MS);
  }, 30_000);

  it('complete, lost before it reached Redis: asked again on the new connection, recorded within 2.5 s of the reconnect; every handler ran once, as attempt 1; none dead', async () => {
    const prefix = `lost-close-complete-before-${process.pid}-${++prefixes}`;
    const ledger = new FaultLedger();
    const producer = await instance(prefix, ledger, { proxied: false, consume: false });
    const lost = rig.proxy.onCommand(driverScript('complete'), 'before', 1);
    await instance(prefix, ledger, { proxied: true, consume: true });
    for (const key of KEYS) ledger.armed(FAULT.once, key, (await producer.delay.schedule(FAULT.once, key, { delay: 1 })).dueAt);
    expect(await eventually(() => lost.length === 1, 5_000)).toBe(true);
    await instance(prefix, ledger, { proxied: false, consume: true });

    const drained = await eventually(async () => (await producer.delay.count(FAULT.once)) === 0, 8_000);
    const drainedAt = Date.now();
    const reconnect = reconnectedAt(rig.proxy);
    const allRan = ledger.tally().lost === 0;
    const dead = await producer.delay.countDead(FAULT.once);
    report(`lost complete command on close: outcomes recorded ${reconnect === undefined ? '?' : drainedAt - reconnect} ms after the reconnect; ${ledger.runs.length} runs; dead ${dead}`);
    expect({ allRan, reconnected: reconnect !== undefined, ...runsByKey(ledger), drained, dead }).toEqual({ allRan: true, reconnected: true, perKey: [1], attempts: [1], drained: true, dead: 0 });
    expect(drainedAt - (reconnect ?? 0)).toBeLessThanOrEqual(RECOVERY_MS);
  }, 30_000);

  it('schedule: the call rejects at once with DriverUnavailableError (it was applied: its handler runs once, as attempt 1); the next call succeeds; none dead', async () => {
    const prefix = `lost-close-schedule-${process.pid}-${++prefixes}`;
    const ledger = new FaultLedger();
    const producer = await instance(prefix, ledger, { proxied: true, consume: false });
    await instance(prefix, ledger, { proxied: false, consume: true });
    await instance(prefix, ledger, { proxied: false, consume: true });

    const lost = rig.proxy.dropReplies(driverScript('schedule'), 1);
    const outcome = await within(
      producer.delay.schedule(FAULT.once, 'lost', { delay: 300 }).then(
        () => 'resolved',
        (error: unknown) => (error instanceof DriverUnavailableError ? 'DriverUnavailableError' : `rejected with ${String(error)}`),
      ),
      10_000,
      'the schedule whose reply was lost',
    );
    const settledAt = Date.now();
    ledger.failedCall(FAULT.once, 'lost');
    const resetAt = rig.proxy.resetAt[0] ?? 0;
    // Once the client is back, the next call goes through (until then calls reject at once: no connection).
    let next: Awaited<ReturnType<typeof producer.delay.schedule>> | undefined;
    await eventually(async () => {
      next = await producer.delay.schedule(FAULT.once, 'next', { delay: 300 });
      return true;
    }, 5_000);
    if (next === undefined) throw new Error('the next schedule never went through');
    ledger.armed(FAULT.once, 'next', next.dueAt);

    const ran = await eventually(() => ledger.runsOf(FAULT.once, 'lost').length > 0 && ledger.runsOf(FAULT.once, 'next').length > 0, 5_000);
    const drained = await eventually(async () => (await producer.delay.count(FAULT.once)) === 0, 3_000);
    const dead = await producer.delay.countDead(FAULT.once);
    report(`lost schedule reply on close: ${outcome} ${settledAt - resetAt} ms after the connection closed; dead ${dead}`);
    expect({
      repliesLost: lost.length,
      outcome,
      ran,
      lostRuns: ledger.runsOf(FAULT.once, 'lost').map((run) => run.attempt),
      nextRuns: ledger.runsOf(FAULT.once, 'next').map((run) => run.attempt),
      drained,
      dead,
    }).toEqual({ repliesLost: 1, outcome: 'DriverUnavailableError', ran: true, lostRuns: [1], nextRuns: [1], drained: true, dead: 0 });
    expect(settledAt - resetAt).toBeLessThanOrEqual(RECOVERY_MS);
  }, 30_000);

  it('waitForReplicas: a write whose connection closes before its WAIT is answered rejects at once, not after the command and replica timeouts', async () => {
    const prefix = `lost-close-wait-${process.pid}-${++prefixes}`;
    const ledger = new FaultLedger();
    // No replica: WAIT would wait its whole 3 s. The proxy passes the write on and resets the connection instead of sending WAIT.
    const producer = await instance(prefix, ledger, { proxied: true, consume: false }, { waitForReplicas: { replicas: 1, timeout: '3s' } });
    const reset = rig.proxy.onCommand((words) => words[0] === 'wait', 'before', 1);
    const started = Date.now();
    const outcome = await within(
      producer.delay.schedule(FAULT.once, 'waited', { delay: '1h' }).then(
        () => 'resolved',
        (error: unknown) => (error instanceof DriverUnavailableError ? error.message : `rejected with ${String(error)}`),
      ),
      15_000,
      'the write whose connection closed',
    );
    const took = Date.now() - started;
    report(`write with waitForReplicas, connection closed before its WAIT: rejected after ${took} ms (WAIT's timeout 3000 ms, commandTimeout 5000 ms)`);
    expect({ resets: reset.length, outcome }).toEqual({ resets: 1, outcome: expect.stringContaining('closed before') });
    expect(took).toBeLessThanOrEqual(RECOVERY_MS);
  }, 30_000);

  it('claim on a socket that stays silent: asked again once the dead socket is replaced, within a first lease that outlasts that, though `lease` is 1 s; attempt 1, none dead', async () => {
    const prefix = `lost-silent-claim-${process.pid}-${++prefixes}`;
    const ledger = new FaultLedger();
    // Noticing the dead socket takes up to 2 x 1.5 s (the claim's bound, then a PING's): three times the lease.
    const silent = { lease: '1s', commandTimeout: '1.5s' } as const;
    const producer = await instance(prefix, ledger, { proxied: false, consume: false }, silent);
    await instance(prefix, ledger, { proxied: true, consume: true }, silent);
    let dueAt = 0;
    for (const key of KEYS) {
      const { dueAt: at } = await producer.delay.schedule(FAULT.once, key, { delay: 1_000 });
      ledger.armed(FAULT.once, key, at);
      dueAt = Math.max(dueAt, at.getTime());
    }
    // From now on Redis's replies stay in the proxy on the worker's command connection; its wake-ups still arrive.
    rig.proxy.halfOpen('commands');
    const silentFrom = Date.now();
    const claimsOfTopic = driverScript('claim');
    const claimsSentAt: number[] = [];
    // Only watches: a matcher that never matches injects nothing.
    rig.proxy.onCommand((words) => {
      if (claimsOfTopic(words) && words.some((word) => word.includes(`{${FAULT.once}}`))) claimsSentAt.push(Date.now());
      return false;
    }, 'before');
    // The worker's claim of the due actions goes out on the silent socket; then a second instance comes up.
    expect(await eventually(() => claimsSentAt.some((at) => at > dueAt), 5_000)).toBe(true);
    await instance(prefix, ledger, { proxied: false, consume: true }, silent);

    const allRan = await eventually(() => ledger.tally().lost === 0, 12_000);
    const reconnect = rig.proxy.acceptedAt.find((at) => at >= silentFrom);
    const takenOnSilentSocket = claimsSentAt.some((at) => at > dueAt && (reconnect === undefined || at < reconnect));
    const lastStart = Math.max(...ledger.runs.map((run) => run.startedAt));
    const drained = await eventually(async () => (await producer.delay.count(FAULT.once)) === 0, 3_000);
    const dead = await producer.delay.countDead(FAULT.once);
    report(
      `lost claim reply on a silent socket: reconnected ${reconnect === undefined ? '-' : reconnect - silentFrom} ms after it went silent, ` +
        `handlers done ${reconnect === undefined ? '?' : lastStart - reconnect} ms after that; ${ledger.runs.length} runs; dead ${dead}`,
    );
    expect({ takenOnSilentSocket, allRan, reconnected: reconnect !== undefined, ...runsByKey(ledger), drained, dead }).toEqual({
      takenOnSilentSocket: true,
      allRan: true,
      reconnected: true,
      perKey: [1],
      attempts: [1],
      drained: true,
      dead: 0,
    });
    expect(lastStart - (reconnect ?? 0)).toBeLessThanOrEqual(RECOVERY_MS);
  }, 30_000);
});
