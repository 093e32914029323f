// The multi-process recurring scenario, shared by the Redis and postgres
// specs (test/instances/recurring.e2e-spec.ts, test/postgres/recurring-processes.e2e-spec.ts):
// three consumers, 200 schedules every 1, 2 or 3 s (missed 'all', overlap
// 'allow', so every scheduled instant must run), a kill -9 of a consumer and
// a kill -9 and restart of the store in the middle.
import { Fleet, InstanceOptions, report, sleep } from './instances';
import type { StartEvent } from './protocol';

export interface Checked {
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
export function check(starts: readonly StartEvent[], everyOf: (key: string) => number): Checked {
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

/** The distinct scheduled instants a schedule ran, in order. */
export function instantsOf(fleet: Fleet, key: string): number[] {
  return [...new Set(fleet.startsOf(key).map((start) => Date.parse(start.armId ?? '')))].sort((a, b) => a - b);
}

export interface RecurringFleetRun {
  readonly fleet: Fleet;
  /** Worker options of the driver (driver, lease, ...); consume and recurringTopic are added. */
  readonly options: Omit<InstanceOptions, 'consume'>;
  /** kill -9 of the store, a pause, and a restart on the same data. */
  readonly restartStore: () => Promise<void>;
  readonly topic: string;
  readonly schedules: number;
  readonly runMs: number;
  /** Waited after the removals: more than a lease, so whatever was claimed at the removal has run and a lost run came back. */
  readonly settleMs: number;
  /** Shown in the report line. */
  readonly label: string;
}

/** Runs the scenario and checks it: no occurrence started twice with one attempt, no gap, nothing lost at the kill or the restart. */
export async function runRecurringFleet(run: RecurringFleetRun): Promise<void> {
  const { fleet, topic, schedules, runMs } = run;
  const options: InstanceOptions = { ...run.options, consume: true, recurringTopic: topic };
  // No producer process of its own: c2 makes the calls (one process fewer to start on shared cores).
  const [c1, producer] = await fleet.spawnAll(['c1', 'c2', 'c3'], options);
  const everyOf = (n: number): number => 1000 * (1 + (n % 3));
  const startedAt = Date.now();
  await Promise.all(Array.from({ length: schedules }, (_, n) => producer.call({ op: 'upsertRecurring', key: `s${n}`, every: everyOf(n) }, 30_000)));

  await sleep(startedAt + runMs / 3 - Date.now());
  await c1.kill();
  // Positions in the stream of handler starts: what ran before the kill, and after the store came back.
  const beforeKill = fleet.starts.length;
  await sleep(startedAt + (2 * runMs) / 3 - Date.now());
  const beforeRestart = fleet.starts.length;
  await run.restartStore();
  const afterRestart = fleet.starts.length;
  await sleep(startedAt + runMs - Date.now());
  await Promise.all(Array.from({ length: schedules }, (_, n) => producer.call({ op: 'removeRecurring', key: `s${n}` }, 30_000)));
  const removedAt = Date.now();
  await sleep(run.settleMs);

  const result = check(fleet.starts, (key) => everyOf(Number(key.slice(topic.length + 2))));
  report(
    `${run.label}: ${result.occurrences} occurrences of ${schedules} schedules over ${Math.round((removedAt - startedAt) / 1000)} s; ` +
      `${result.redelivered.length} re-run after the kill -9 (attempt 2); ${result.gaps.length} gaps; split ${JSON.stringify(fleet.split())}`,
  );
  expect(result.sameAttemptTwice).toEqual([]);
  expect(result.gaps).toEqual([]);
  // A re-run is only what the killed instance had started and not acked (the same occurrence, its next attempt), or a
  // run that was going on while the store was down: on a busy machine the restart can outlast the lease, and a run
  // whose lease ran out meanwhile is taken back when the store returns (at least once, as the driver promises).
  const indexesOf = (id: string): number[] => fleet.starts.flatMap((start, n) => (`${start.key}@${start.armId}` === id ? [n] : []));
  for (const { id, instances } of result.redelivered) {
    const [first, ...again] = indexesOf(id);
    const acrossRestart = first < afterRestart && first >= beforeKill && again.every((n) => n >= beforeRestart);
    if (instances[0] !== 'c1') expect({ id, instances, first, again, acrossRestart }).toMatchObject({ acrossRestart: true });
  }
  expect(result.redelivered.length).toBeLessThanOrEqual(30);
  expect(fleet.starts.slice(0, beforeKill).some((start) => start.instance === 'c1')).toBe(true);
  // Every schedule ran before the kill and after the restart, with no gap in between: nothing was lost at
  // either. Counted in the stream of starts, not timed, so a slow machine cannot fail it.
  const ranBefore = new Set(fleet.starts.slice(0, beforeKill).map((start) => start.key));
  const ranAfter = new Set(fleet.starts.slice(afterRestart).map((start) => start.key));
  const missing: string[] = [];
  for (let n = 0; n < schedules; n++) {
    const key = `${topic}/s${n}`;
    if (!ranBefore.has(key) || !ranAfter.has(key)) missing.push(key);
  }
  expect(missing).toEqual([]);
}
