// Handlers and checks shared by the recurring specs that run on a real store
// (redis.e2e-spec.ts, postgres.e2e-spec.ts): the same schedules and the same
// assertions on every driver.
import { Injectable } from '@nestjs/common';
import { DelayContext, OnRecurring } from 'nestjs-delay';
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

/** Each scheduled instant ran at most once. */
export function expectNoDuplicates(runs: readonly Run[]): void {
  const ids = runs.map((run) => `${run.key}@${run.scheduledAt}@${run.runNow}`);
  expect(ids.length - new Set(ids).size).toBe(0);
}
