// kill -9 of an instance in the middle of a batch's handler (collect): the
// closed batch's lease expires and another instance runs the same batch,
// whole and in order, once. Items collected after the batch closed (its
// handler started) go to the next batch, delivered apart; none is lost and
// none is delivered twice.
import type { BatchItem, StartEvent } from './support/protocol';
import { fleetSuite, report, sleep } from './support/instances';

const TOPIC = 'order.unpaid';
const BATCH_TOPIC = 'webhook.batch';
const KEY = 'merchant-7';
const LEASE_MS = 2_000;
const FIRST_WINDOW_MS = 400;
const SECOND_WINDOW_MS = 1_500;
const FIRST_SIZE = 6;

const suite = fleetSuite();

const idsOf = (items: readonly BatchItem[] | undefined): string[] => (items ?? []).map((item) => item.id);
const runOf = (event: Pick<StartEvent, 'instance' | 'attempt' | 'items'>): { instance: string; attempt: number; ids: string[] } => ({
  instance: event.instance,
  attempt: event.attempt,
  ids: idsOf(event.items),
});

it('with the Redis driver, a kill -9 during a batch\'s handler redelivers that batch whole', async () => {
  const current = suite.fleet('batch-crash', TOPIC);
  const options = { consume: true, lease: `${LEASE_MS}ms`, batchTopic: BATCH_TOPIC };
  // A alone consumes at first, so the batch fires there.
  const a = await current.spawn('A', options);

  // The first batch: its handler holds for 30 s on attempt 1 (far past the lease: A renews it), not on a rerun.
  const first: BatchItem[] = Array.from({ length: FIRST_SIZE }, (_, n) => ({ id: `first-${n}`, ...(n === 0 ? { holdMs: 30_000, holdAttempts: 1 } : {}) }));
  const firstSizes: number[] = [];
  for (const item of first) firstSizes.push(Number(await a.value({ op: 'collect', key: KEY, item, windowMs: FIRST_WINDOW_MS, maxItems: 100 })));
  expect(firstSizes).toEqual([1, 2, 3, 4, 5, 6]);
  await current.until(() => current.startsOf(KEY).length === 1, 10_000, 'the first batch to start on A');
  const firstRun = current.startsOf(KEY)[0];
  expect(runOf(firstRun)).toEqual({ instance: 'A', attempt: 1, ids: first.map((item) => item.id) });

  // B joins while A's handler holds the batch.
  const b = await current.spawn('B', options);
  // Well past one lease since the batch started: A's renewals are what keep B from taking it over.
  await sleep(Math.max(0, firstRun.at + LEASE_MS + 500 - Date.now()));
  expect(current.startsOf(KEY)).toHaveLength(1);

  // The first batch closed when its handler started: new items open a second batch, some through A before the kill...
  const second: BatchItem[] = Array.from({ length: 4 }, (_, n) => ({ id: `second-${n}` }));
  const secondSizes: number[] = [];
  for (const item of second.slice(0, 2)) secondSizes.push(Number(await a.value({ op: 'collect', key: KEY, item, windowMs: SECOND_WINDOW_MS, maxItems: 100 })));
  // The running (closed) batch and the open one.
  expect(await b.value({ op: 'count', batch: true })).toBe(2);

  const killedAt = Date.now();
  await a.kill();
  // ...and some through B after it.
  for (const item of second.slice(2)) secondSizes.push(Number(await b.value({ op: 'collect', key: KEY, item, windowMs: SECOND_WINDOW_MS, maxItems: 100 })));
  expect(secondSizes).toEqual([1, 2, 3, 4]);

  await current.until(() => current.endsOf(KEY).length >= 2, LEASE_MS * 3 + 5_000, 'the rerun of the first batch and the second batch to complete');
  const rerun = current.startsOf(KEY).find((start) => start.attempt === 2);
  const secondRun = current.startsOf(KEY).find((start) => start.attempt === 1 && start.instance === 'B');
  expect(rerun).toBeDefined();
  expect(secondRun).toBeDefined();
  const redeliveredAfter = (rerun?.at ?? NaN) - killedAt;
  // Another whole lease: no third run of either batch, no late duplicate.
  await sleep(LEASE_MS + 500);

  const starts = current.startsOf(KEY).map(runOf);
  const ends = current.endsOf(KEY).map(runOf);
  const firstIds = first.map((item) => item.id);
  const secondIds = second.map((item) => item.id);
  report(
    `kill -9 during a batch's handler (lease ${LEASE_MS} ms): A started the batch of ${firstIds.length}, killed; ` +
      `B reran it ${redeliveredAfter} ms after the kill; the ${secondIds.length} items collected after it closed came as a separate batch; ` +
      `starts ${JSON.stringify(starts.map(({ instance, attempt, ids }) => `${instance}#${attempt}:${ids.length}`))}`,
  );

  // The same batch (same items, same order) as attempt 2 on B, and the second batch apart, on B, attempt 1.
  expect(starts).toHaveLength(3);
  expect(starts[0]).toEqual({ instance: 'A', attempt: 1, ids: firstIds });
  const byAttempt = (runs: typeof starts): typeof starts => [...runs].sort((x, y) => x.attempt - y.attempt);
  expect(byAttempt(starts.slice(1))).toEqual([
    { instance: 'B', attempt: 1, ids: secondIds },
    { instance: 'B', attempt: 2, ids: firstIds },
  ]);
  expect(byAttempt(ends)).toEqual([
    { instance: 'B', attempt: 1, ids: secondIds },
    { instance: 'B', attempt: 2, ids: firstIds },
  ]);
  // Every item collected is in exactly one completed batch.
  const completed = ends.flatMap((end) => end.ids);
  expect([...completed].sort()).toEqual([...firstIds, ...secondIds].sort());
  expect(new Set(completed).size).toBe(completed.length);
  // The rerun is the batch as it was due, taken over when the lease ran out (see crash-redelivery.e2e-spec.ts).
  expect(rerun?.dueAt).toBe(firstRun.dueAt);
  expect(redeliveredAfter).toBeGreaterThanOrEqual(LEASE_MS / 2);
  expect(redeliveredAfter).toBeLessThanOrEqual(LEASE_MS + 4_000);
  // The second batch opened after the first was claimed (both on the Redis clock), and fired on its own window.
  expect((secondRun?.dueAt ?? NaN) - firstRun.firedAt).toBeGreaterThanOrEqual(SECOND_WINDOW_MS);
  expect(await b.value({ op: 'count', batch: true })).toBe(0);
}, 60_000);
