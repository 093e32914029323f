// Phase 5 of the recurring bench: listing and bulk creation of per-key
// schedules on nestjs-delay alone (BullMQ has neither a listing by key nor a
// bulk upsert of job schedulers). On the Redis driver (the bench's server,
// flushed first) and the wheel (in this process):
// - listRecurring of N schedules (pages of 1000 by key), and one page of 100
//   (what the admin page reads per view);
// - creating 10,000 schedules with upsertRecurring, one awaited at a time
//   (what an application did before upsertRecurringMany), and with one
//   upsertRecurringMany; then reconciling them unchanged (a restart).
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { DelayModule, DelayService } from 'nestjs-delay';
import type { DelayModuleOptions, RecurringUpsert } from 'nestjs-delay';
import { performance } from 'node:perf_hooks';
import { RECURRING_TOPIC } from './protocol';

/** Once a year: nothing falls due while the phase runs. */
const FAR_CRON = '0 0 1 1 *';

export interface ListsSettings {
  /** Schedules listed. */
  readonly listCount: number;
  /** Schedules created per call and in bulk. */
  readonly bulkCount: number;
}

export interface ListsResult {
  readonly driver: 'redis' | 'wheel';
  /** Seconds for listRecurring of listCount schedules. */
  readonly listSeconds: number;
  /** Seconds for one page of 100 (listRecurringPage) from the middle. */
  readonly pageSeconds: number;
  readonly perCallSeconds: number;
  readonly bulkSeconds: number;
  /** upsertRecurringMany of the same schedules again, unchanged. */
  readonly reconcileSeconds: number;
}

async function timed(work: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await work();
  return (performance.now() - started) / 1000;
}

function entries(prefix: string, count: number): Array<RecurringUpsert<{ userId: string }>> {
  return Array.from({ length: count }, (_, n) => {
    const key = `${prefix}${String(n).padStart(6, '0')}`;
    return { key, cron: FAR_CRON, payload: { userId: key } };
  });
}

/** One driver's figures: `flush` empties its store between the steps (nothing for the wheel: each step has its own keys). */
export async function measureLists(driver: ListsResult['driver'], options: DelayModuleOptions, settings: ListsSettings, flush: () => Promise<void>): Promise<ListsResult> {
  @Module({ imports: [DelayModule.forRoot({ ...options, consume: false })] })
  class ListsModule {}
  const app = await NestFactory.createApplicationContext(ListsModule, { logger: ['error', 'warn'] });
  try {
    const delay = app.get(DelayService);
    await flush();
    // The schedules to list, made in bulk (how they are made does not change how they are listed).
    const listed = entries('l', settings.listCount);
    for (let at = 0; at < listed.length; at += 10_000) await delay.upsertRecurringMany(RECURRING_TOPIC, listed.slice(at, at + 10_000));
    let count = 0;
    const listSeconds = await timed(async () => {
      count = (await delay.listRecurring(RECURRING_TOPIC)).length;
    });
    if (count !== settings.listCount) throw new Error(`listRecurring read ${count} schedules, not ${settings.listCount}`);
    const pageSeconds = await timed(() => delay.listRecurringPage(RECURRING_TOPIC, { after: listed[Math.floor(listed.length / 2)].key, limit: 100 }));

    await flush();
    const perCall = entries('p', settings.bulkCount);
    const perCallSeconds = await timed(async () => {
      for (const { key, ...schedule } of perCall) await delay.upsertRecurring(RECURRING_TOPIC, key, schedule);
    });
    await flush();
    const bulk = entries('b', settings.bulkCount);
    const bulkSeconds = await timed(() => delay.upsertRecurringMany(RECURRING_TOPIC, bulk));
    const reconcileSeconds = await timed(() => delay.upsertRecurringMany(RECURRING_TOPIC, bulk));
    return { driver, listSeconds, pageSeconds, perCallSeconds, bulkSeconds, reconcileSeconds };
  } finally {
    await app.close();
  }
}
