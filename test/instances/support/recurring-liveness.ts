// A recurring schedule on two worker processes whose run is killed mid-way
// (kill -9): with the default options, the killed run holds its schedule back
// for the recurring lease (5 s), not the lease (30 s). Shared by the Redis
// (test/instances/recurring-liveness.e2e-spec.ts) and PostgreSQL
// (test/postgres/recurring-liveness.e2e-spec.ts) specs.
import type { OverlapPolicy } from 'nestjs-delay';
import { Fleet, InstanceOptions, report } from './instances';
import type { EndEvent, StartEvent } from './protocol';

const TOPIC = 'liveness.recurring';
const KEY = `${TOPIC}/k`;
/** What a killed run may cost at most before the schedule runs again: the 5 s recurring lease and the killed occurrence's 1.5 s re-run, with room for a busy machine (the lease is 30 s). */
const BOUND_MS = 15_000;

const sameRun = (start: StartEvent, end: EndEvent): boolean => end.instance === start.instance && end.armId === start.armId && end.attempt === start.attempt && end.key === start.key;

export async function exerciseKillDuringRun(fleet: Fleet, options: Omit<InstanceOptions, 'consume'>, overlap: OverlapPolicy, label: string): Promise<void> {
  const config: InstanceOptions = { ...options, consume: true, recurringTopic: TOPIC };
  const [c1, c2] = await fleet.spawnAll(['c1', 'c2'], config);
  // Every second, each run 1.5 s (the policy skips or holds back what comes meanwhile): a run seen starting is still running when killed.
  await c2.call({ op: 'upsertRecurring', key: 'k', every: 1_000, overlap, holdMs: 1_500 });
  // A run of c1's that has started and not ended: killed there and then.
  let victim: StartEvent | undefined;
  await fleet.until(
    () => (victim = fleet.startsOf(KEY).find((start) => start.instance === 'c1' && !fleet.ends.some((end) => sameRun(start, end)))) !== undefined,
    30_000,
    'a run on c1',
  );
  await c1.kill();
  const killedAt = Date.now();
  const killed = victim as StartEvent;
  // The schedule runs again soon: a later occurrence starts on c2 well within the lease...
  let next: StartEvent | undefined;
  await fleet.until(
    () => (next = fleet.startsOf(KEY).find((start) => start.instance === 'c2' && start.at > killedAt && (start.armId ?? '') > (killed.armId ?? ''))) !== undefined,
    25_000,
    'a later occurrence on c2 after the kill',
  );
  const waited = (next as StartEvent).at - killedAt;
  report(`${label}, ${overlap}: a later occurrence started ${waited} ms after the kill`);
  expect(waited).toBeLessThan(BOUND_MS);
  // ...and the killed occurrence itself was taken back and run again, as its next attempt (at least once).
  await fleet.until(() => fleet.startsOf(KEY).some((start) => start.instance === 'c2' && start.armId === killed.armId && start.attempt > killed.attempt), 15_000, 'the killed occurrence run again');
  await fleet.until(() => fleet.startsOf(KEY).filter((start) => start.instance === 'c2' && start.at > (next as StartEvent).at).length >= 2, 15_000, 'the cadence going on');
  await c2.call({ op: 'removeRecurring', key: 'k' });
  if (overlap !== 'bufferOne') return;
  // bufferOne: never two runs at once on the survivor (the killed run's re-run included).
  await fleet.until(() => fleet.startsOf(KEY).filter((start) => start.instance === 'c2').every((start) => fleet.ends.some((end) => sameRun(start, end))), 10_000, 'the runs on c2 to end');
  const runs = fleet
    .startsOf(KEY)
    .filter((start) => start.instance === 'c2')
    .map((start) => ({ start: start.at, end: (fleet.ends.find((end) => sameRun(start, end)) as EndEvent).at }))
    .sort((a, b) => a.start - b.start);
  for (let n = 1; n < runs.length; n++) expect(runs[n].start).toBeGreaterThanOrEqual(runs[n - 1].end);
}
