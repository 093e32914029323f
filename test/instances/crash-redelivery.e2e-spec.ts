// kill -9 of an instance in the middle of a handler: the action's lease
// expires and another instance runs it, once; the late-comer is acked and
// nothing runs it a third time.
import { fleetSuite, report, sleep } from './support/instances';

const TOPIC = 'order.unpaid';
const LEASE_MS = 2_000;

const suite = fleetSuite();

it('SIGKILL of the instance running a handler: another instance runs the action after the lease, once, and it is acked', async () => {
  const current = suite.fleet('crash', TOPIC);
  const [first, second] = await current.spawnAll(['c1', 'c2'], { consume: true, lease: `${LEASE_MS}ms` });
  const byName = new Map([first, second].map((instance) => [instance.name, instance]));

  // The first run blocks for 10 s (far longer than the lease: the running instance renews it); a rerun does not block.
  await first.call({ op: 'schedule', key: 'slow', delay: 200, payload: { armId: 'slow-1', holdMs: 10_000, holdAttempts: 1 } });
  await current.until(() => current.startsOf('slow').length === 1, 10_000, 'the first run of "slow"');
  const victimName = current.startsOf('slow')[0].instance;
  const victim = byName.get(victimName);
  const survivor = victimName === first.name ? second : first;
  // Well past one lease: the victim's renewals are what keep the action from being taken over.
  await sleep(LEASE_MS + 500);
  expect(current.startsOf('slow')).toHaveLength(1);
  expect((await survivor.value({ op: 'count' })) as number).toBe(1);

  const killedAt = Date.now();
  await victim?.kill();
  // Other work keeps flowing on the survivor meanwhile, each action once.
  const others = Array.from({ length: 100 }, (_, n) => ({ key: `other-${n}`, delay: 100 + n * 10, payload: { armId: `other-${n}` } }));
  await survivor.call({ op: 'scheduleMany', items: others, parallel: 8 });
  await current.until(() => current.endsOf('slow').length === 1, LEASE_MS * 3 + 5_000, 'the rerun of "slow" to complete');
  await current.until(() => current.ends.filter((end) => end.key.startsWith('other-')).length >= others.length, 10_000, 'the other actions');
  const rerun = current.startsOf('slow')[1];
  const redeliveredAfter = rerun.at - killedAt;
  expect(await survivor.count()).toBe(0);
  // Another whole lease: no third run, no late duplicate.
  await sleep(LEASE_MS + 500);

  const starts = current.startsOf('slow').map((start) => ({ instance: start.instance, attempt: start.attempt }));
  const ends = current.endsOf('slow').map((end) => ({ instance: end.instance, attempt: end.attempt }));
  report(`kill -9 during a handler (lease ${LEASE_MS} ms): ${victimName} started it, killed; ${survivor.name} ran it ${redeliveredAfter} ms after the kill; starts ${JSON.stringify(starts)}`);
  expect(starts).toEqual([
    { instance: victimName, attempt: 1 },
    { instance: survivor.name, attempt: 2 },
  ]);
  expect(ends).toEqual([{ instance: survivor.name, attempt: 2 }]);
  expect(await survivor.count()).toBe(0);
  // Taken over when the lease ran out: the last renewal (every lease / 3) leased it until at least
  // 2/3 of a lease after the kill, and the survivor looks again when that lease ends.
  expect(redeliveredAfter).toBeGreaterThanOrEqual(LEASE_MS / 2);
  expect(redeliveredAfter).toBeLessThanOrEqual(LEASE_MS + 4_000);
  expect(rerun.dueAt).toBe(current.startsOf('slow')[0].dueAt);
  const otherRuns = current.starts.filter((start) => start.key.startsWith('other-'));
  expect(otherRuns).toHaveLength(others.length);
  expect(new Set(otherRuns.map((start) => start.key)).size).toBe(others.length);
  expect(otherRuns.every((start) => start.instance === survivor.name && start.firedAt >= start.dueAt)).toBe(true);
}, 40_000);
