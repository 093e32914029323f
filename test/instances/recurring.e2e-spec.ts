// Recurring schedules across real processes on one Redis: three consumers,
// 200 schedules every 1, 2 or 3 s for 60 s (missed 'all', overlap 'allow', so
// every scheduled instant must run), a kill -9 of a consumer and a SIGKILL and
// restart of redis-server (AOF, fsync always) in the middle. Then a rolling
// deploy where old and new code declare different @Recurring sets.
import { Fleet, fleetSuite, report, sleep } from './support/instances';
import type { StartEvent } from './support/protocol';

const TOPIC = 'reports.recurring';
const SCHEDULES = 200;
/** The run's length. The spec keeps its own wall time down elsewhere: three processes rather than four, started together, and the 200 upserts and removals sent at once. */
const RUN_MS = 60_000;

const suite = fleetSuite({ appendonly: true });

interface Checked {
  /** Distinct (schedule, instant) pairs run. */
  readonly occurrences: number;
  /** The same (schedule, instant) started twice with the same attempt number: never allowed. */
  readonly sameAttemptTwice: string[];
  /** Started again with a higher attempt: a run whose instance died before its ack (at-least-once). */
  readonly redelivered: Array<{ id: string; instances: string[] }>;
  /** Instants missing between a schedule's first and last run. */
  readonly gaps: string[];
}

/** Groups the starts by schedule; each schedule's instants must be every `everyOf(key)` ms, with no gap and no repeat. */
function check(starts: readonly StartEvent[], everyOf: (key: string) => number): Checked {
  const byId = new Map<string, StartEvent[]>();
  for (const start of starts) {
    const id = `${start.key}@${start.armId}`;
    byId.set(id, [...(byId.get(id) ?? []), start]);
  }
  const sameAttemptTwice: string[] = [];
  const redelivered: Checked['redelivered'] = [];
  for (const [id, runs] of byId) {
    const attempts = runs.map((run) => run.attempt);
    if (new Set(attempts).size !== attempts.length) sameAttemptTwice.push(id);
    else if (runs.length > 1) redelivered.push({ id, instances: runs.map((run) => run.instance) });
  }
  const instantsOf = new Map<string, number[]>();
  for (const start of starts) {
    if (start.armId?.endsWith(' now')) continue;
    const list = instantsOf.get(start.key) ?? [];
    list.push(Date.parse(start.armId ?? ''));
    instantsOf.set(start.key, list);
  }
  const gaps: string[] = [];
  for (const [key, list] of instantsOf) {
    const instants = [...new Set(list)].sort((a, b) => a - b);
    const every = everyOf(key);
    for (let n = 1; n < instants.length; n++) {
      if (instants[n] - instants[n - 1] !== every) gaps.push(`${key}: ${new Date(instants[n - 1]).toISOString()} -> ${new Date(instants[n]).toISOString()}`);
    }
  }
  return { occurrences: byId.size, sameAttemptTwice, redelivered, gaps };
}

function instantsOf(fleet: Fleet, key: string): number[] {
  return [...new Set(fleet.startsOf(key).map((start) => Date.parse(start.armId ?? '')))].sort((a, b) => a - b);
}

it(`${SCHEDULES} schedules every 1-3 s on 3 instances for ${RUN_MS / 1000} s, a kill -9 and a Redis restart: no occurrence twice, none missed`, async () => {
  const server = suite.server();
  const fleet = suite.fleet('recurring', 'unused.one-off');
  const options = { consume: true, lease: '2s', recurringTopic: TOPIC };
  // No producer process of its own: c2 makes the calls (one process fewer to start on shared cores).
  const [c1, producer] = await fleet.spawnAll(['c1', 'c2', 'c3'], options);
  const everyOf = (n: number): number => 1000 * (1 + (n % 3));
  const startedAt = Date.now();
  await Promise.all(Array.from({ length: SCHEDULES }, (_, n) => producer.call({ op: 'upsertRecurring', key: `s${n}`, every: everyOf(n) })));

  await sleep(startedAt + RUN_MS / 3 - Date.now());
  await c1.kill();
  // Positions in the stream of handler starts: what ran before the kill, and after Redis came back.
  const beforeKill = fleet.starts.length;
  await sleep(startedAt + (2 * RUN_MS) / 3 - Date.now());
  await server.kill();
  await sleep(1_500);
  await server.boot();
  const afterRestart = fleet.starts.length;
  await sleep(startedAt + RUN_MS - Date.now());
  await Promise.all(Array.from({ length: SCHEDULES }, (_, n) => producer.call({ op: 'removeRecurring', key: `s${n}` })));
  const removedAt = Date.now();
  await sleep(4_000); // more than a lease: whatever was claimed at the removal has run, and a lost run came back

  const result = check(fleet.starts, (key) => everyOf(Number(key.slice(TOPIC.length + 2))));
  report(
    `recurring: ${result.occurrences} occurrences of ${SCHEDULES} schedules over ${Math.round((removedAt - startedAt) / 1000)} s; ` +
      `${result.redelivered.length} re-run after the kill -9 (attempt 2); split ${JSON.stringify(fleet.split())}`,
  );
  expect(result.sameAttemptTwice).toEqual([]);
  expect(result.gaps).toEqual([]);
  // A re-run is only what the killed instance had started and not acked: the same occurrence, its next attempt.
  for (const { instances } of result.redelivered) expect(instances[0]).toBe('c1');
  expect(result.redelivered.length).toBeLessThanOrEqual(30);
  expect(fleet.starts.slice(0, beforeKill).some((start) => start.instance === 'c1')).toBe(true);
  // Every schedule ran before the kill and after the restart, with no gap in between: nothing was lost at either.
  const ranBefore = new Set(fleet.starts.slice(0, beforeKill).map((start) => start.key));
  const ranAfter = new Set(fleet.starts.slice(afterRestart).map((start) => start.key));
  const missing: string[] = [];
  for (let n = 0; n < SCHEDULES; n++) {
    const key = `${TOPIC}/s${n}`;
    if (!ranBefore.has(key) || !ranAfter.has(key)) missing.push(key);
  }
  expect(missing).toEqual([]);
}, 240_000);

it('a rolling deploy where old and new code declare different @Recurring sets: no occurrence twice, none missed while declared', async () => {
  const fleet = suite.fleet('rolling', 'unused.one-off');
  // Old code declares A and B; new code keeps B (same cadence) and adds C.
  const oldCode = { consume: true, lease: '2s', declared: [{ topic: 'rec.a', every: 1000 }, { topic: 'rec.b', every: 2000 }] };
  const newCode = { consume: true, lease: '2s', declared: [{ topic: 'rec.b', every: 2000 }, { topic: 'rec.c', every: 1000 }] };
  const [old1, old2] = await fleet.spawnAll(['old1', 'old2'], oldCode);
  await sleep(4_000);
  const new1 = await fleet.spawn('new1', newCode);
  await sleep(2_000);
  await old1.close();
  const new2 = await fleet.spawn('new2', newCode);
  await sleep(2_000);
  await old2.close();
  await sleep(4_000);
  await Promise.all([new1.close(), new2.close()]);

  const result = check(fleet.starts, (key) => (key.startsWith('rec.b/') ? 2000 : 1000));
  report(`rolling deploy: ${result.occurrences} occurrences, split ${JSON.stringify(fleet.split())}`);
  expect(result.sameAttemptTwice).toEqual([]);
  expect(result.redelivered).toEqual([]);
  // B ran throughout, on old then new instances, every 2 s with no gap; C from when new code came; A until old code left.
  expect(result.gaps).toEqual([]);
  const b = fleet.startsOf('rec.b/default');
  expect(new Set(b.map((start) => start.instance.slice(0, 3)))).toEqual(new Set(['old', 'new']));
  expect(instantsOf(fleet, 'rec.b/default').length).toBeGreaterThanOrEqual(6);
  expect(instantsOf(fleet, 'rec.c/default').length).toBeGreaterThanOrEqual(6);
  expect(fleet.startsOf('rec.c/default').every((start) => start.instance.startsWith('new'))).toBe(true);
  expect(fleet.startsOf('rec.a/default').every((start) => start.instance.startsWith('old'))).toBe(true);
}, 120_000);
