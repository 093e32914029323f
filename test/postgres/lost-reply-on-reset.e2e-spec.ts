// A reply lost with its connection, on the postgres driver (the Redis
// driver's test/faults/lost-reply-on-close.e2e-spec.ts): the server ran the
// claim, or the completion, and the connection was reset before its answer
// came back. The call fails at once (not after commandTimeout), the claim is
// asked again on a new connection under the same id and hands back what it
// took, and the completion is sent again. The lease (5 s) is no longer than
// the command timeout (5 s): recovery that waited for the timeout would find
// the lease run out, and with `attempts: 1` a second, healthy instance would
// then take the actions as attempt 2 and send them to the dead set unrun.
import { DelayService } from 'nestjs-delay';
import { pollUntil } from '../conformance/support/driver-fixture';
import { COMMAND_TIMEOUT_MS, LOST_TOPIC as TOPIC, lostClaimRig, lostRuns as runs, proxiedUrl } from './support/lost-claim-rig';

const KEYS = Array.from({ length: 20 }, (_, n) => `k${n}`);
/** Handlers run within this of the reset (a busy machine's margin; the command timeout is 5 s). */
const RECOVERY_MS = 2_500;

describe('postgres: a reply lost with its connection (reset after the server ran the statement)', () => {
  const rig = lostClaimRig();

  async function instance(schema: string, url: string, consume: boolean): Promise<DelayService> {
    return (await rig.instance(schema, url, consume)).get(DelayService);
  }

  it('claim: the instance asks again on a new connection and gets what it took; every handler runs once, as attempt 1, within 2.5 s of the reset; none dead', async () => {
    runs.length = 0;
    const schema = rig.schema('lost');
    const producer = await instance(schema, rig.server.url, false);
    for (const key of KEYS) await producer.schedule(TOPIC, key, { delay: 1 });
    const proxy = await rig.startProxy();
    const reset = proxy.resetOnReply('.claim_taken($1::');
    await instance(schema, proxiedUrl(proxy), true);
    await pollUntil(() => reset.at.length === 1, 'the claim to be reset', 5_000, 10);
    // A second, healthy instance: it would take the actions over (as attempt 2, so dead) if their lease ran out first.
    await instance(schema, rig.server.url, true);
    await pollUntil(() => new Set(runs.map((run) => run.key)).size === KEYS.length, 'every handler', 8_000, 10);
    const lastRun = Math.max(...runs.map((run) => run.at));
    const outcome = await rig.outcome(producer, KEYS, 8_000);
    process.stdout.write(`  [postgres lost reply] claim reset: handlers done ${lastRun - reset.at[0]} ms after the reset; ${runs.length} runs on app(s) ${[...new Set(runs.map((run) => run.app))].join(', ')}\n`);
    expect(outcome).toEqual({ perKey: [1], attempts: [1], pending: 0, dead: 0 });
    expect(lastRun - reset.at[0]).toBeLessThanOrEqual(RECOVERY_MS);
  }, 30_000);

  it.each([
    ['', 0],
    ['; two asks of what it took lose their reply too', 2],
  ])('claim, reply lost, then shutdown before it is asked again%s: what it took is handed back (attempt 1, run once elsewhere at once, none dead), not left to its lease', async (_, recoverResets) => {
    runs.length = 0;
    const schema = rig.schema('lost');
    const producer = await instance(schema, rig.server.url, false);
    for (const key of KEYS) await producer.schedule(TOPIC, key, { delay: 1 });
    const proxy = await rig.startProxy();
    // Every claim's reply is lost until the worker has shut down (the first takes all 20; each one after asks for
    // them again, and loses its answer again).
    const reset = proxy.resetOnReply('.claim_taken($1::', 1_000);
    const worker = await rig.instance(schema, proxiedUrl(proxy), true);
    await pollUntil(() => reset.at.length >= 2, 'two claims to be reset', 5_000, 10);
    // The asks of what the lost claims took (before a claim, or at shutdown) lose their reply too, as many times.
    const recoverReset = proxy.resetOnReply('.recover($1::', recoverResets);
    const closing = Date.now();
    await rig.close(worker);
    const closedAt = Date.now();
    expect(runs).toEqual([]);
    // A healthy instance runs them at once, as attempt 1: without the hand-back they would wait out their lease (5 s)
    // and come back as attempt 2, which `attempts: 1` sends to the dead set without running.
    await instance(schema, rig.server.url, true);
    // Measured from the healthy instance's start: booting it in this process can take a second on a busy machine.
    const healthyAt = Date.now();
    const outcome = await rig.outcome(producer, KEYS, 8_000);
    const ranWithin = Math.max(...runs.map((run) => run.at)) - healthyAt;
    process.stdout.write(
      `  [postgres lost reply] claim reset, then shutdown (${recoverReset.at.length} recover(s) reset): closed in ${closedAt - closing} ms; ${runs.length} runs, the last ${ranWithin} ms after the healthy instance started\n`,
    );
    expect(outcome).toEqual({ perKey: [1], attempts: [1], pending: 0, dead: 0 });
    expect(recoverReset.at.length).toBe(recoverResets);
    expect(ranWithin).toBeLessThan(4_000);
    // Not the command timeout (5 s): the hand-back is asked again at once on a new connection, not after a wait.
    expect(closedAt - closing).toBeLessThan(COMMAND_TIMEOUT_MS - 1_000);
  }, 30_000);

  it('complete: the completion is sent again on a new connection; every handler ran once, as attempt 1; the actions are acked; none dead', async () => {
    runs.length = 0;
    const schema = rig.schema('lost');
    const producer = await instance(schema, rig.server.url, false);
    const proxy = await rig.startProxy();
    const reset = proxy.resetOnReply('.complete($1::');
    await instance(schema, proxiedUrl(proxy), true);
    for (const key of KEYS) await producer.schedule(TOPIC, key, { delay: 1 });
    await pollUntil(() => reset.at.length === 1, 'a completion to be reset', 5_000, 10);
    // A second, healthy instance, started once the proxied one has completed through the proxy (started
    // before, on a busy machine it could take every action and leave no completion to reset): it would take
    // the actions over (as attempt 2) if their leases ran out before the completion was sent again.
    await instance(schema, rig.server.url, true);
    await pollUntil(async () => (await producer.count(TOPIC)) === 0, 'every action acked', 8_000, 10);
    const ackedAfter = Date.now() - reset.at[0];
    const outcome = await rig.outcome(producer, KEYS, 8_000);
    process.stdout.write(`  [postgres lost reply] complete reset: all acked ${ackedAfter} ms after the reset; ${runs.length} runs\n`);
    expect(outcome).toEqual({ perKey: [1], attempts: [1], pending: 0, dead: 0 });
    // Typically tens of ms. Once in about ten runs on a loaded machine it took the command timeout (5 s): still
    // acked, still once, as the leases of runs whose outcome is pending are renewed meanwhile.
    expect(ackedAfter).toBeLessThanOrEqual(COMMAND_TIMEOUT_MS + RECOVERY_MS);
  }, 30_000);
});
