import { eventually, FAULT, FaultApp, faultApps, report, within } from './support/fault-app';
import { FaultLedger } from './support/fault-ledger';
import { proxiedRedis } from './support/proxied-redis';
import { driverScript } from './support/driver-scripts';

/**
 * Shutdown's hand-back of what a claim whose reply was lost took (Redis):
 * the last ask of that claim, and the hand-back (release.lua) itself, lose
 * their reply with their connection after Redis ran them, once or more; or
 * shutdown is called twice at once. Asked again, handed back again (it names
 * tokens, so twice changes nothing): every action runs once, as attempt 1,
 * at once on a healthy instance; none dead; the close is not held for the
 * command timeout.
 */
const LEASE = '5s';
const COMMAND_TIMEOUT_MS = 5_000;
const KEYS = Array.from({ length: 20 }, (_, n) => `k${n}`);

describe('faults: the shutdown hand-back of a lost claim loses its reply, or shutdown runs twice', () => {
  const apps = faultApps();
  const rig = proxiedRedis('test', () => apps.closeAll());
  let prefixes = 0;

  async function instance(prefix: string, ledger: FaultLedger, proxied: boolean, consume: boolean): Promise<FaultApp> {
    const app = await apps.boot({ type: 'redis', url: proxied ? rig.proxy.url : rig.redis.url, prefix, lease: LEASE, commandTimeout: `${COMMAND_TIMEOUT_MS}ms` }, { consume });
    app.handlers.ledger = ledger;
    return app;
  }

  it.each([
    ['the ask loses its reply once, the hand-back twice', 1, 2, 1],
    ['the hand-back loses its reply three times', 0, 3, 1],
    ['app.close() called twice at once', 0, 0, 2],
  ])('%s: every action runs once, as attempt 1, at once elsewhere; none dead', async (_, askResets, releaseResets, closes) => {
    const prefix = `lost-hand-back-${process.pid}-${++prefixes}`;
    const ledger = new FaultLedger();
    const producer = await instance(prefix, ledger, false, false);
    for (const key of KEYS) ledger.armed(FAULT.once, key, (await producer.delay.schedule(FAULT.once, key, { delay: 1 })).dueAt);
    const claimsOfTopic = driverScript('claim');
    const ofTopic = (words: readonly string[]): boolean => words.some((word) => word.includes(`{${FAULT.once}}`));
    // Every claim's reply is lost (the first takes all 20; asked again, it loses the answer again) until shutdown.
    const lost = rig.proxy.dropReplies((words) => claimsOfTopic(words) && ofTopic(words), 1_000);
    const worker = await instance(prefix, ledger, true, true);
    expect(await eventually(() => lost.length >= 2, 5_000)).toBe(true);
    rig.proxy.clearRules();
    const asks = rig.proxy.dropReplies((words) => claimsOfTopic(words) && ofTopic(words), askResets);
    const releases = rig.proxy.dropReplies((words) => driverScript('release')(words) && ofTopic(words), releaseResets);
    const closing = Date.now();
    await within(Promise.all(Array.from({ length: closes }, () => worker.app.close())), 15_000, 'the worker app.close()');
    const closedAt = Date.now();
    expect(ledger.runs).toEqual([]);
    await instance(prefix, ledger, false, true);
    // Measured from the healthy instance's start: booting it in this process can take a second on a busy machine.
    const healthyAt = Date.now();
    const allRan = await eventually(() => ledger.tally().lost === 0, 8_000);
    const acked = await eventually(async () => (await producer.delay.count(FAULT.once)) === 0, 5_000);
    const dead = await producer.delay.countDead(FAULT.once);
    const perKey = [...new Set(KEYS.map((key) => ledger.runsOf(FAULT.once, key).length))];
    const attempts = [...new Set(ledger.runsOf(FAULT.once).map((run) => run.attempt))];
    const ranWithin = ledger.runs.length > 0 ? Math.max(...ledger.runs.map((run) => run.startedAt)) - healthyAt : -1;
    report(`lost hand-back: ${asks.length} ask(s), ${releases.length} hand-back(s) lost, ${closes} close(s); closed in ${closedAt - closing} ms; ${ledger.runs.length} runs, the last ${ranWithin} ms after the healthy instance started; dead ${dead}`);
    expect({ asks: asks.length, releases: releases.length, allRan, acked, perKey, attempts, dead }).toEqual({ asks: askResets, releases: releaseResets, allRan: true, acked: true, perKey: [1], attempts: [1], dead: 0 });
    expect(ranWithin).toBeLessThan(4_000);
    expect(closedAt - closing).toBeLessThan(COMMAND_TIMEOUT_MS - 1_000);
  }, 40_000);
});
