// Shutdown's hand-back of what claims whose reply was lost took (postgres): the hand-back (release) itself loses its
// reply with its connection, once or more, after the server committed it, and so may the ask (recover) before it.
// Sent again, it changes nothing (it names tokens): every action is back, due now, as attempt 1, and runs once on a
// healthy instance at once; none is dead; the close stays well within the command timeout.
import { DelayService } from 'nestjs-delay';
import { pollUntil } from '../conformance/support/driver-fixture';
import { COMMAND_TIMEOUT_MS, LOST_TOPIC as TOPIC, lostClaimRig, lostRuns as runs, proxiedUrl } from './support/lost-claim-rig';

const KEYS = Array.from({ length: 20 }, (_, n) => `k${n}`);

describe('postgres: the shutdown hand-back of a lost claim loses its reply', () => {
  const rig = lostClaimRig();

  it.each([
    [0, 1],
    [1, 1],
    [0, 3],
  ])('%i ask(s) and %i hand-back(s) reset after the server ran them: every action runs once, as attempt 1, at once elsewhere; none dead', async (recoverResets, releaseResets) => {
    runs.length = 0;
    const schema = rig.schema('handback');
    const producer = (await rig.instance(schema, rig.server.url, false)).get(DelayService);
    for (const key of KEYS) await producer.schedule(TOPIC, key, { delay: 1 });
    const proxy = await rig.startProxy();
    // Every claim's reply is lost until the worker has shut down.
    const claims = proxy.resetOnReply('.claim_taken($1::', 1_000);
    const worker = await rig.instance(schema, proxiedUrl(proxy), true);
    await pollUntil(() => claims.at.length >= 2, 'two claims to be reset', 5_000, 10);
    const recovers = proxy.resetOnReply('.recover($1::', recoverResets);
    const releases = proxy.resetOnReply('.release($1::', releaseResets);
    const closing = Date.now();
    await rig.close(worker);
    const closedAt = Date.now();
    expect(runs).toEqual([]);
    await rig.instance(schema, rig.server.url, true);
    // Measured from the healthy instance's start: booting it in this process can take a second on a busy machine.
    const healthyAt = Date.now();
    const outcome = await rig.outcome(producer, KEYS, 10_000);
    const ranWithin = runs.length > 0 ? Math.max(...runs.map((run) => run.at)) - healthyAt : -1;
    process.stdout.write(
      `  [postgres hand-back] ${recovers.at.length} ask(s), ${releases.at.length} hand-back(s) reset: closed in ${closedAt - closing} ms; ${runs.length} runs, the last ${ranWithin} ms after the healthy instance started\n`,
    );
    expect(outcome).toEqual({ perKey: [1], attempts: [1], pending: 0, dead: 0 });
    expect({ recovers: recovers.at.length, releases: releases.at.length }).toEqual({ recovers: recoverResets, releases: releaseResets });
    // Handed back at once (not left to the 5 s lease), and the close is not held for the command timeout.
    expect(ranWithin).toBeLessThan(4_000);
    expect(closedAt - closing).toBeLessThan(COMMAND_TIMEOUT_MS - 1_000);
  }, 40_000);
});
