// A claim's reply is held on the way (the database committed it) while the instance shuts down (the Redis driver's
// test/faults/stalled-claim-at-shutdown.e2e-spec.ts): drain stops waiting for the claim after
// `shutdownTimeout` (short), while the claim still settles within `commandTimeout` (long). The reply arrives
// before that: the claim committed, and what it took must not be left to its lease (with `attempts: 1` a second
// instance would then bury it), nor run by an instance that is closing and can no longer record its outcome.
import { DelayService } from 'nestjs-delay';
import { pollUntil, sleep } from '../conformance/support/driver-fixture';
import { LOST_TOPIC as TOPIC, lostClaimRig, lostRuns as runs, proxiedUrl } from './support/lost-claim-rig';
import { TcpFaultProxy } from './support/tcp-fault-proxy';

const KEYS = Array.from({ length: 10 }, (_, n) => `k${n}`);

describe("postgres: a claim's reply held on the way while the instance shuts down", () => {
  const rig = lostClaimRig();

  /** A fresh schema whose KEYS are due, a producer on the server, and a proxy in front of it for the worker. */
  async function dueBehindProxy(prefix: string): Promise<{ schema: string; producer: DelayService; proxy: TcpFaultProxy }> {
    runs.length = 0;
    const schema = rig.schema(prefix);
    const producer = (await rig.instance(schema, rig.server.url, false, '300ms')).get(DelayService);
    for (const key of KEYS) await producer.schedule(TOPIC, key, { delay: 1 });
    await sleep(50);
    return { schema, producer, proxy: await rig.startProxy() };
  }

  it('the claim answered after drain gave up on it: every action runs once, as attempt 1, soon after the close; none dead', async () => {
    const { schema, producer, proxy } = await dueBehindProxy('stall');
    // The worker's first claim takes every action (all due): the server commits it, its reply stays on the way.
    const held = proxy.holdReplies('.claim_taken($1::');
    const worker = await rig.instance(schema, proxiedUrl(proxy), true, '300ms');
    await pollUntil(() => held.at.length === 1, 'the claim of the due actions', 5_000, 10);
    const closeStarted = Date.now();
    const closing = rig.close(worker);
    // Drain gives up on the claim after shutdownTimeout (300 ms); the reply arrives well within commandTimeout.
    await sleep(2_000);
    proxy.heal();
    await closing;
    const closedAt = Date.now();
    await rig.instance(schema, rig.server.url, true, '300ms');
    const outcome = await rig.outcome(producer, KEYS, 15_000);
    const lastRun = runs.length > 0 ? Math.max(...runs.map((run) => run.at)) - closedAt : -1;
    process.stdout.write(
      `  [postgres stalled claim] closed in ${closedAt - closeStarted} ms; ${runs.length} runs (${runs.filter((run) => run.at < closedAt).length} by the closing instance), the last ${lastRun} ms after the close\n`,
    );
    expect(outcome).toEqual({ perKey: [1], attempts: [1], pending: 0, dead: 0 });
  }, 60_000);

  it('drain gave up while a claim first asked again for a lost one: the claim is not sent after it; every action runs once, as attempt 1; none dead', async () => {
    const { schema, producer, proxy } = await dueBehindProxy('stallask');
    // The worker's first claim takes every action and loses its reply; its next claim first asks for what that one
    // took (recover), and that reply stays on the way.
    const lost = proxy.resetOnReply('.claim_taken($1::');
    const asked = proxy.holdReplies('.recover($1::');
    const worker = await rig.instance(schema, proxiedUrl(proxy), true, '300ms');
    await pollUntil(() => lost.at.length === 1 && asked.at.length === 1, 'the lost claim, then the ask', 10_000, 10);
    // Due by now: a claim sent after the ask would take these.
    const later = KEYS.map((key) => `${key}-later`);
    for (const key of later) await producer.schedule(TOPIC, key, { delay: 1 });
    const claimsAfter = proxy.holdReplies('.claim_taken($1::');
    const closing = rig.close(worker);
    // Drain gives up on the claim after shutdownTimeout (300 ms); the ask's reply arrives later.
    await sleep(2_000);
    proxy.heal();
    await closing;
    expect(claimsAfter.at).toEqual([]);
    proxy.heal();
    await rig.instance(schema, rig.server.url, true, '300ms');
    const outcome = await rig.outcome(producer, [...KEYS, ...later], 15_000);
    expect(outcome).toEqual({ perKey: [1], attempts: [1], pending: 0, dead: 0 });
  }, 60_000);
});
