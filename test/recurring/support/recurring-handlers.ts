// Handlers and checks shared by the recurring specs that run on a real store
// (redis.e2e-spec.ts, postgres.e2e-spec.ts): the same schedules and the same
// assertions on every driver.
import { Injectable } from '@nestjs/common';
import { DelayContext, DelayEvent, DelayService, OnRecurring, Recurring } from 'nestjs-delay';
import { pollUntil, sleep } from '../../conformance/support/driver-fixture';
import { REAL_TIME_ON_TIME_MS } from '../../support/on-time';

export interface Run {
  readonly key: string;
  readonly scheduledAt: number;
  readonly runNow: boolean;
  readonly at: number;
}

@Injectable()
export class Reports {
  readonly runs: Run[] = [];

  @OnRecurring('reports.every')
  run({ key, occurrence, firedAt }: DelayContext): void {
    this.runs.push({ key, scheduledAt: occurrence?.scheduledAt.getTime() ?? NaN, runNow: occurrence?.runNow ?? false, at: firedAt.getTime() });
  }

  of(key: string, scheduled = true): Run[] {
    return this.runs.filter((run) => run.key === key && run.runNow !== scheduled);
  }
}

@Injectable()
export class Slow {
  started = 0;

  @OnRecurring('slow.every', { concurrency: 1 })
  async run(): Promise<void> {
    this.started++;
    await sleep(3_000);
  }
}

/** Runs that wait for their signal (20 s at most), shared by the apps of one test: the order they started and were aborted in. */
export const abortLog = { started: [] as string[], aborted: [] as Array<{ key: string; reason: string | undefined }>, timedOut: 0 };

@Injectable()
export class Abortable {
  @OnRecurring('abortable.every')
  async run({ occurrence, signal }: DelayContext): Promise<void> {
    const key = occurrence?.key ?? '';
    abortLog.started.push(key);
    const outcome = await new Promise<'aborted' | 'timeout'>((resolve) => {
      const timer = setTimeout(() => resolve('timeout'), 20_000);
      signal.addEventListener('abort', () => (clearTimeout(timer), resolve('aborted')), { once: true });
    });
    if (outcome === 'timeout') abortLog.timedOut++;
    else abortLog.aborted.push({ key, reason: (signal.reason as { reason?: string } | undefined)?.reason });
  }
}

/** Runs of the bufferOne schedule, by every app of the test: when each started and ended, and which occurrence it was. */
export const bufferLog = { runs: [] as Array<{ occurrence: string; scheduledAt: number; start: number; end: number | undefined }> };

/** Works 2.5 s, on a schedule every second: each run overlaps the next two instants. */
@Injectable()
export class Buffered {
  @OnRecurring('buffer.every', { concurrency: 4 })
  async run({ occurrence }: DelayContext): Promise<void> {
    const run = { occurrence: occurrence?.key ?? '', scheduledAt: occurrence?.scheduledAt.getTime() ?? NaN, start: Date.now(), end: undefined as number | undefined };
    bufferLog.runs.push(run);
    await sleep(2_500);
    run.end = Date.now();
  }
}

/**
 * overlap 'bufferOne' on a store that `delays` (two instances, four handler
 * slots each) share, every 1 s against a 2.5 s handler: never two runs of the
 * schedule at once, on whichever instance; the occurrence held back starts
 * soon after the one before ends (its tick looks again every second); the
 * instants that came meanwhile are skipped, naming the run in the way.
 */
export async function exerciseBufferOneAcrossInstances(delays: readonly DelayService[]): Promise<void> {
  bufferLog.runs.length = 0;
  const skips: DelayEvent[] = [];
  const subscriptions = delays.map((delay) => delay.events$.subscribe((event) => event.type === 'recurringSkipped' && event.topic === 'buffer.every' && skips.push(event)));
  try {
    await delays[0].upsertRecurring('buffer.every', 'k', { every: '1s', overlap: 'bufferOne' });
    await pollUntil(() => bufferLog.runs.filter((run) => run.end !== undefined).length >= 3, 'three finished runs', 30_000);
    await delays[0].removeRecurring('buffer.every', 'k');
    await pollUntil(() => bufferLog.runs.every((run) => run.end !== undefined), 'the last run to end', 10_000);
  } finally {
    for (const subscription of subscriptions) subscription.unsubscribe();
  }
  const runs = [...bufferLog.runs].sort((a, b) => a.start - b.start);
  for (let n = 1; n < runs.length; n++) {
    // Never two at once...
    expect(runs[n].start).toBeGreaterThanOrEqual(runs[n - 1].end as number);
    // ...in order, each instant once...
    expect(runs[n].scheduledAt).toBeGreaterThan(runs[n - 1].scheduledAt);
    // ...and the one held back starts soon after the one before ends (a generous bound: the re-check is every second).
    expect(runs[n].start - (runs[n - 1].end as number)).toBeLessThan(8_000);
  }
  expect(skips.length).toBeGreaterThan(0);
  expect(skips[0].blockedBy).toMatchObject({ state: 'running', attempt: 1 });
  expect(skips[0].blockedBy?.occurrence.startsWith('k\u001e')).toBe(true);
}

/** Runs of the lingering schedule: each works 7 s, longer than the 5 s recurring lease. */
export const lingerLog = { runs: [] as Array<{ occurrence: string; attempt: number; start: number; end: number | undefined }> };

@Injectable()
export class Lingering {
  @OnRecurring('linger.every', { concurrency: 4 })
  async run({ occurrence, attempt }: DelayContext): Promise<void> {
    const run = { occurrence: occurrence?.key ?? '', attempt, start: Date.now(), end: undefined as number | undefined };
    lingerLog.runs.push(run);
    await sleep(7_000);
    run.end = Date.now();
  }
}

/**
 * A live handler that works longer than the recurring lease (7 s against
 * 5 s; overlap 'skip', every second): its instance keeps renewing, so it is
 * never taken back (no second attempt of it) and nothing else of the
 * schedule starts until it has ended.
 */
export async function exerciseLiveSlowRun(delay: DelayService): Promise<void> {
  lingerLog.runs.length = 0;
  await delay.upsertRecurring('linger.every', 'k', { every: '1s' });
  await pollUntil(() => lingerLog.runs.some((run) => run.end !== undefined) && lingerLog.runs.length >= 2, 'a 7 s run ended and the next one started', 30_000);
  await delay.removeRecurring('linger.every', 'k');
  const [first, second] = lingerLog.runs;
  expect(first.attempt).toBe(1);
  expect(second.start).toBeGreaterThanOrEqual(first.end as number);
  expect(second.occurrence).not.toBe(first.occurrence);
  expect(lingerLog.runs.filter((run) => run.occurrence === first.occurrence)).toHaveLength(1);
}

/** Succeeds, fails, or works 2.5 s, as the test says. */
@Injectable()
export class Outcomes {
  mode: 'ok' | 'fail' | 'sleep' = 'ok';

  @OnRecurring('outcome.every', { attempts: 2, backoff: { type: 'fixed', delay: '1s' } })
  async run(): Promise<void> {
    if (this.mode === 'fail') throw new Error('failed on purpose');
    if (this.mode === 'sleep') await sleep(2_500);
  }
}

/** Runs of the declared schedules, `topic@instant`, by every app of the test. */
export const declaredRuns: string[] = [];

@Injectable()
export class DeclaresA {
  @Recurring('orphan.a', { every: '1s' })
  run({ topic, occurrence }: DelayContext): void {
    declaredRuns.push(`${topic}@${occurrence?.scheduledAt.getTime()}`);
  }
}

/** The old code: B is declared. */
@Injectable()
export class DeclaresB {
  @Recurring('orphan.b', { every: '1s' })
  run({ topic, occurrence }: DelayContext): void {
    declaredRuns.push(`${topic}@${occurrence?.scheduledAt.getTime()}`);
  }
}

/** The new code: B's topic is still handled, but no longer declared. */
@Injectable()
export class HandlesB {
  @OnRecurring('orphan.b')
  run({ topic, occurrence }: DelayContext): void {
    declaredRuns.push(`${topic}@${occurrence?.scheduledAt.getTime()}`);
  }
}

/** Each scheduled instant ran at most once. */
export function expectNoDuplicates(runs: readonly Run[]): void {
  const ids = runs.map((run) => `${run.key}@${run.scheduledAt}@${run.runNow}`);
  expect(ids.length - new Set(ids).size).toBe(0);
}

/**
 * The per-key calls on a running store, the same on every driver: upsert (an
 * interval and a cron in a zone), occurrences on whole seconds and in order,
 * list, pause (nothing runs), resume (missed 'once': one catch-up, then the
 * cadence), run-now (an extra run), remove (nothing more runs), no instant twice.
 */
export async function exerciseScheduleOperations(delay: DelayService, reports: Reports): Promise<void> {
  const created = await delay.upsertRecurring('reports.every', 'a', { every: '1s', payload: { n: 1 } });
  expect(created).toMatchObject({ key: 'a', recurrence: { every: 1000, anchor: 0 }, missed: 'once', overlap: 'skip', paused: false, declared: false, payload: { n: 1 } });
  await delay.upsertRecurring('reports.every', 'b', { cron: '* * * * * *', timeZone: 'Europe/Paris' });
  await pollUntil(() => reports.of('a').length >= 3 && reports.of('b').length >= 3, 'three occurrences of each', 15_000);
  // Occurrences are whole seconds, in order, and never late by more than a generous bound.
  for (const key of ['a', 'b']) {
    const runs = reports.of(key);
    expect(runs.every((run) => run.scheduledAt % 1000 === 0)).toBe(true);
    for (let n = 1; n < runs.length; n++) expect(runs[n].scheduledAt).toBeGreaterThan(runs[n - 1].scheduledAt);
    expect(runs.every((run) => run.at >= run.scheduledAt && run.at - run.scheduledAt < 5_000)).toBe(true);
  }
  const listed = await delay.listRecurring('reports.every');
  expect(listed.map((schedule) => schedule.key)).toEqual(['a', 'b']);
  expect(listed[0].lastRunAt?.getTime()).toBeGreaterThanOrEqual(reports.of('a')[0].scheduledAt);

  expect(await delay.pauseRecurring('reports.every', 'a')).toBe(true);
  expect(await delay.getRecurring('reports.every', 'a')).toMatchObject({ paused: true, nextRunAt: null });
  await sleep(300); // an occurrence created just before the pause may still start
  const whilePaused = reports.of('a').length;
  await sleep(2_500);
  expect(reports.of('a').length).toBe(whilePaused);
  const resumedAt = Date.now();
  expect(await delay.resumeRecurring('reports.every', 'a')).toBe(true);
  // missed 'once': the two or three seconds missed run as one, then the cadence goes on.
  await pollUntil(() => reports.of('a').length >= whilePaused + 1, 'the catch-up run', 10_000);
  const catchUp = reports.of('a')[whilePaused];
  // The latest instant missed, less than a period before the resume (the first one missed was two seconds older) ...
  expect(catchUp.scheduledAt).toBeGreaterThan(resumedAt - 1_000);
  // ... run at once: at most its age, plus what a busy machine adds.
  expect(catchUp.at - catchUp.scheduledAt).toBeLessThanOrEqual(1_000 + REAL_TIME_ON_TIME_MS);
  await pollUntil(() => reports.of('a').length >= whilePaused + 2, 'the cadence after resume', 10_000);

  expect(await delay.runRecurringNow('reports.every', 'a')).toBe(true);
  await pollUntil(() => reports.of('a', false).length === 1, 'the extra run', 10_000);

  expect(await delay.removeRecurring('reports.every', 'a')).toBe(true);
  expect(await delay.getRecurring('reports.every', 'a')).toBeNull();
  await sleep(300);
  const afterRemove = reports.of('a').length;
  await sleep(2_000);
  expect(reports.of('a').length).toBe(afterRemove);
  expect(reports.of('b').length).toBeGreaterThan(3);
  expectNoDuplicates(reports.runs);
}

/**
 * The last run a schedule reports, the same on every driver: a run that
 * succeeded (its lag = start - scheduled instant), one retrying, one dead
 * after its 2 attempts (at least the 1 s backoff late), one skipped by the
 * overlap policy while the previous works; listRecurring shows it too.
 */
export async function exerciseLastRuns(delay: DelayService, outcomes: Outcomes): Promise<void> {
  await delay.upsertRecurring('outcome.every', 'job', { every: '1s' });
  const seen = new Set<string>();
  const lastRunIs = async (outcome: string) => {
    const run = (await delay.getRecurring('outcome.every', 'job'))?.lastRun;
    if (run) seen.add(run.outcome);
    return run?.outcome === outcome ? run : undefined;
  };
  // Each last run is kept as the poll saw it: read again, it may already be the next occurrence's (one a second).
  let succeeded: Awaited<ReturnType<typeof lastRunIs>>;
  await pollUntil(async () => (succeeded = await lastRunIs('succeeded')) !== undefined, 'a run that succeeded', 15_000);
  expect(succeeded?.attempt).toBe(1);
  expect(succeeded?.lagMs).toBe((succeeded?.startedAt?.getTime() ?? NaN) - (succeeded?.scheduledAt.getTime() ?? NaN));
  outcomes.mode = 'fail';
  let dead: Awaited<ReturnType<typeof lastRunIs>>;
  await pollUntil(async () => (dead = await lastRunIs('dead')) !== undefined, 'a run that died after its 2 attempts', 15_000);
  expect(seen.has('retrying')).toBe(true);
  // Its second attempt started after the 1 s backoff: at least that late.
  expect(dead).toMatchObject({ attempt: 2 });
  expect(dead?.lagMs).toBeGreaterThanOrEqual(1_000);
  outcomes.mode = 'sleep';
  await pollUntil(async () => (await lastRunIs('skipped')) !== undefined, 'an occurrence skipped while the previous one works', 15_000);
  expect((await delay.listRecurring('outcome.every'))[0].lastRun).not.toBeNull();
}

/** cancelPrevious on a store two instances share: every running occurrence is aborted (reason 'cancelled') by the next, in start order, none waits for its own timeout. */
export async function exerciseCancelPreviousAborts(delay: DelayService): Promise<void> {
  await delay.upsertRecurring('abortable.every', 'k', { every: '2s', overlap: 'cancelPrevious' });
  await pollUntil(() => abortLog.aborted.length >= 4, 'four aborted runs', 30_000);
  // Counted when the fourth abort is seen: an abort comes at most a lease renewal (2/3 s) after the cancel, well before the occurrence after next.
  const started = abortLog.started.length;
  await delay.removeRecurring('abortable.every', 'k');
  expect(started).toBeLessThanOrEqual(abortLog.aborted.length + 2);
  expect(abortLog.aborted.every((abort) => abort.reason === 'cancelled')).toBe(true);
  // The runs were aborted in the order they started: each by the occurrence after it.
  expect(abortLog.aborted.map((abort) => abort.key)).toEqual(abortLog.started.slice(0, abortLog.aborted.length));
  expect(abortLog.timedOut).toBe(0);
}

/** An occurrence cancelled through `producer`, an instance that runs nothing: the running instance learns it at its next lease renewal and its handler's signal fires. */
export async function exerciseRemoteAbort(delay: DelayService, producer: DelayService): Promise<void> {
  await delay.upsertRecurring('abortable.every', 'remote', { every: '1h' });
  expect(await delay.runRecurringNow('abortable.every', 'remote')).toBe(true);
  await pollUntil(() => abortLog.started.length === 1, 'the run-now occurrence started', 10_000);
  expect(await producer.cancel('abortable.every', abortLog.started[0])).toBe(true);
  await pollUntil(() => abortLog.aborted.length === 1, 'the abort, at a lease renewal (every 2/3 s)', 10_000);
  expect(abortLog.aborted[0]).toEqual({ key: abortLog.started[0], reason: 'cancelled' });
}
