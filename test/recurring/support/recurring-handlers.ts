// Handlers and checks shared by the recurring specs that run on a real store
// (redis.e2e-spec.ts, postgres.e2e-spec.ts): the same schedules and the same
// assertions on every driver.
import { Injectable } from '@nestjs/common';
import { DelayContext, OnRecurring, Recurring } from 'nestjs-delay';
import { sleep } from '../../conformance/support/driver-fixture';

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
