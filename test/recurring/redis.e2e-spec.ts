import { INestApplication } from '@nestjs/common';
import { DelayEvent, DelayService } from 'nestjs-delay';
import { DELAY_DRIVER } from '../../libs/delay/src/delay.constants';
import type { DelayDriver } from '../../libs/delay/src/interfaces/delay-driver.interface';
import { bootDelayApp, pollUntil, sleep } from '../conformance/support/driver-fixture';
import IORedis from 'ioredis';
import { TestRedisServer } from '../support/redis-server';
import { abortLog, Abortable, Buffered, exerciseBufferOneAcrossInstances, exerciseLiveSlowRun, Lingering, DeclaresA, DeclaresB, declaredRuns, exerciseCancelPreviousAborts, exerciseLastRuns, exerciseRemoteAbort, exerciseScheduleOperations, expectNoDuplicates, HandlesB, Outcomes, Reports, Slow } from './support/recurring-handlers';

describe('recurring schedules on the Redis driver (real redis-server)', () => {
  let redis: TestRedisServer;
  let app: INestApplication | undefined;

  beforeAll(async () => {
    redis = await TestRedisServer.start({ appendonly: true });
  });
  afterAll(async () => {
    await redis.dispose();
  });
  afterEach(async () => {
    await app?.close();
    app = undefined;
  });

  async function boot(prefix: string, shards = 1): Promise<{ delay: DelayService; reports: Reports; driver: DelayDriver }> {
    app = await bootDelayApp({ driver: { type: 'redis', url: redis.url, prefix, shards }, shutdownTimeout: '1s' }, [Reports, Slow]);
    return { delay: app.get(DelayService), reports: app.get(Reports), driver: app.get<DelayDriver>(DELAY_DRIVER) };
  }

  it.each([1, 4])('upsert, get, list, pause, resume, run now and remove, %d shard(s)', async (shards) => {
    const { delay, reports } = await boot(`ops${shards}`, shards);
    await exerciseScheduleOperations(delay, reports);
  }, 60_000);

  it('a schedule survives a Redis restart with append-only persistence, with no occurrence run twice', async () => {
    const { delay, reports } = await boot('restart');
    await delay.upsertRecurring('reports.every', 'r', { every: '1s', missed: 'all', overlap: 'allow' });
    await pollUntil(() => reports.of('r').length >= 2, 'two occurrences', 15_000);
    await redis.kill();
    await sleep(2_000);
    await redis.boot();
    const before = reports.of('r').length;
    await pollUntil(() => reports.of('r').length >= before + 4, 'occurrences after the restart', 20_000);
    expectNoDuplicates(reports.runs);
    // missed 'all': the seconds Redis was down are caught up, so the scheduled instants have no gap.
    const instants = reports.of('r').map((run) => run.scheduledAt);
    for (let n = 1; n < instants.length; n++) expect(instants[n] - instants[n - 1]).toBe(1000);
  }, 60_000);

  it('a tick takes no handler slot: with the only slot busy for 3 s, every 1 s occurrence is still created on time', async () => {
    const { delay } = await boot('slots');
    const events: DelayEvent[] = [];
    const subscription = delay.events$.subscribe((event) => events.push(event));
    const fired = (): number => events.filter((event) => event.type === 'recurringFired').reduce((sum, event) => sum + (event.size ?? 0), 0);
    const startedAt = Date.now();
    await delay.upsertRecurring('slow.every', 'k', { every: '1s', overlap: 'allow' });
    // Waits for five occurrences rather than a fixed 6.5 s: a busy machine may start the first one late.
    await pollUntil(() => fired() >= 5, 'five occurrences fired', 20_000);
    const elapsed = Date.now() - startedAt;
    await delay.removeRecurring('slow.every', 'k');
    subscription.unsubscribe();
    // A tick waiting for the slot would run 2-3 s late each time: about two occurrences missed ('once') for each one
    // created. (On a busy machine a tick may still be a second late now and then, and miss one or two.)
    const missed = events.filter((event) => event.type === 'recurringMissed').reduce((sum, event) => sum + (event.size ?? 0), 0);
    expect(missed).toBeLessThan(fired());
    // One slot, 3 s a run: the handler ran one after another, however many occurrences were created.
    expect(app?.get(Slow).started).toBeLessThanOrEqual(Math.floor(elapsed / 3_000) + 1);
  }, 30_000);

  it('a waiting schedule is one compact envelope and one ticks entry (not in due, no series field); upsert returns what get reads', async () => {
    // No handler for this topic in the app: its ticks wait, as in a producer that does not consume.
    const { delay } = await boot('compact');
    const created = await delay.upsertRecurring('compact.none', 'c', { cron: '0 0 1 1 *', payload: { userId: 'c' } });
    const raw = new IORedis(redis.url);
    try {
      expect(await raw.zrange('compact:{compact.none}:ticks', '0', '-1')).toEqual(['c']);
      expect(await raw.exists('compact:{compact.none}:due', 'compact:{compact.none}:series')).toBe(0);
      const envelope = (await raw.hget('compact:{compact.none}:env', 'c')) ?? '';
      expect(envelope).toMatch(/^[0-9a-z]+\|1\|[0-9a-z]+\|@1\|c\|0 0 1 1 \*\|{7}rf\|\{"userId":"c"\}$/);
    } finally {
      raw.disconnect();
    }
    expect(await delay.getRecurring('compact.none', 'c')).toEqual(created);
    // A changed payload: the view returned is again the stored one.
    const changed = await delay.upsertRecurring('compact.none', 'c', { cron: '0 0 1 1 *', payload: { userId: 'c2' } });
    expect(changed).toMatchObject({ payload: { userId: 'c2' } });
    expect(await delay.getRecurring('compact.none', 'c')).toEqual(changed);
    // Pending-action reads list the tick (from the ticks set) with its state decoded.
    await delay.schedule('compact.none', 'later', { delay: '1h' });
    await delay.schedule('compact.none', 'earlier', { at: new Date(Date.now() - 60_000) });
    const pending = await delay.list('compact.none');
    expect(pending.items.map((action) => action.key)).toEqual(['earlier', 'c', 'later']);
    expect(pending.items[1].payload).toMatchObject({ v: 1, overlap: 'skip', payload: '{"userId":"c2"}' });
    // Pages cut from the two sets merged: the same order a page at a time.
    const paged = [];
    for (let offset = 0; offset < 3; offset++) paged.push(...(await delay.list('compact.none', { offset, limit: 1 })).items.map((action) => action.key));
    expect(paged).toEqual(['earlier', 'c', 'later']);
  }, 30_000);

  it('a tick moved later by hand (reschedule) is not claimed at its old time', async () => {
    const { delay, reports, driver } = await boot('moved');
    await delay.upsertRecurring('reports.every', 'm', { every: '1s' });
    await pollUntil(() => reports.of('m').length >= 1, 'a first occurrence', 10_000);
    // By hand on the driver: DelayService refuses to move a schedule's own key.
    expect(await driver.reschedule({ topic: 'reports.every', key: 'm', due: { delayMs: 3_600_000 }, maxPastMs: 0 })).not.toBeNull();
    await sleep(300);
    const before = reports.of('m').length;
    await sleep(2_500);
    expect(reports.of('m').length).toBe(before);
    expect((await delay.getRecurring('reports.every', 'm'))?.nextRunAt?.getTime()).toBeGreaterThan(Date.now() + 3_000_000);
  }, 30_000);

  it('cancelPrevious on two instances: each running occurrence sees its signal fire when the next one cancels it, on whichever instance', async () => {
    abortLog.started.length = 0;
    abortLog.aborted.length = 0;
    const options = { driver: { type: 'redis' as const, url: redis.url, prefix: 'abort', lease: '2s' }, shutdownTimeout: '1s' };
    app = await bootDelayApp(options, [Abortable]);
    const other = await bootDelayApp(options, [Abortable]);
    try {
      const delay = app.get(DelayService);
      await exerciseCancelPreviousAborts(delay);
    } finally {
      await other.close();
    }
  }, 60_000);

  it('a live run longer than the recurring lease is renewed, never taken back: nothing else of its schedule starts meanwhile', async () => {
    app = await bootDelayApp({ driver: { type: 'redis', url: redis.url, prefix: 'linger' }, shutdownTimeout: '1s' }, [Lingering]);
    await exerciseLiveSlowRun(app.get(DelayService));
  }, 60_000);

  it('bufferOne on two instances: never two runs of a schedule at once; the one held back starts as the running one ends', async () => {
    const options = { driver: { type: 'redis' as const, url: redis.url, prefix: 'buffer-one' }, shutdownTimeout: '1s' };
    app = await bootDelayApp(options, [Buffered]);
    const other = await bootDelayApp(options, [Buffered]);
    try {
      await exerciseBufferOneAcrossInstances([app.get(DelayService), other.get(DelayService)]);
    } finally {
      await other.close();
    }
  }, 60_000);

  it('an occurrence cancelled from another instance learns it at its next lease renewal: its signal fires', async () => {
    abortLog.started.length = 0;
    abortLog.aborted.length = 0;
    const driver = { type: 'redis' as const, url: redis.url, prefix: 'abort-remote', lease: '2s' };
    app = await bootDelayApp({ driver, shutdownTimeout: '1s' }, [Abortable]);
    // A producer-only instance: it runs nothing, so only the running instance's lease renewal can tell the handler.
    const producer = await bootDelayApp({ driver, consume: false }, []);
    try {
      const delay = app.get(DelayService);
      await exerciseRemoteAbort(delay, producer.get(DelayService));
      await delay.removeRecurring('abortable.every', 'remote');
    } finally {
      await producer.close();
    }
  }, 30_000);

  it('listRecurring and getRecurring show the last run: succeeded, retrying, dead, skipped, with its lag', async () => {
    app = await bootDelayApp({ driver: { type: 'redis', url: redis.url, prefix: 'outcomes' }, shutdownTimeout: '1s' }, [Outcomes]);
    const delay = app.get(DelayService);
    const outcomes = app.get(Outcomes);
    await exerciseLastRuns(delay, outcomes);
    await delay.removeRecurring('outcome.every', 'job');
  }, 60_000);

  it('a rolling deploy drops @Recurring B: it fires once per instant while the old instance runs, and is removed once the old one is gone for the grace', async () => {
    const config = { driver: { type: 'redis' as const, url: redis.url, prefix: 'orphans' }, shutdownTimeout: '1s', recurringOrphanGrace: '3s' };
    const old = await bootDelayApp(config, [DeclaresA, DeclaresB]);
    app = await bootDelayApp(config, [DeclaresA, HandlesB]);
    const delay = app.get(DelayService);
    const count = (topic: string) => declaredRuns.filter((run) => run.startsWith(`${topic}@`)).length;
    try {
      // Both run for longer than the grace: the old instance's beats keep B declared.
      const bothFrom = count('orphan.b');
      await sleep(5_000);
      // At least three more runs (polled past the 5 s: a busy machine may run them late).
      await pollUntil(() => count('orphan.b') >= bothFrom + 3, 'three runs of B while both instances run', 10_000);
      expect(await delay.getRecurring('orphan.b', 'default')).toMatchObject({ declared: true });
    } finally {
      await old.close();
    }
    // The old instance is gone: within the grace and a tick, B's tick is removed; A goes on.
    await pollUntil(async () => (await delay.getRecurring('orphan.b', 'default')) === null, 'B removed as an orphan', 15_000);
    expect(await delay.count('orphan.b')).toBeLessThanOrEqual(1); // at most an occurrence created just before
    await sleep(300);
    const [b, a] = [count('orphan.b'), count('orphan.a')];
    await sleep(2_500);
    expect(count('orphan.b')).toBe(b);
    expect(count('orphan.a')).toBeGreaterThanOrEqual(a + 1);
    expect(await delay.getRecurring('orphan.a', 'default')).toMatchObject({ declared: true, orphan: 'remove' });
    // Exactly once per instant throughout.
    expect(declaredRuns.length - new Set(declaredRuns).size).toBe(0);
  }, 60_000);

  it('bad input is refused with a typed error and writes nothing', async () => {
    const { delay } = await boot('bad');
    await expect(delay.upsertRecurring('reports.every', 'k', { every: '500ms' })).rejects.toMatchObject({ code: 'ERR_DELAY_INVALID_RECURRENCE' });
    await expect(delay.upsertRecurring('reports.every', 'k', { cron: '0 3 * * *', timeZone: 'Mars/Olympus' })).rejects.toMatchObject({ code: 'ERR_DELAY_UNKNOWN_TIME_ZONE' });
    await expect(delay.upsertRecurring('reports.every', 'k', { cron: 'every day' })).rejects.toMatchObject({ code: 'ERR_DELAY_INVALID_CRON_EXPRESSION' });
    await expect(delay.schedule('reports.every', 'k', { delay: '1m' })).rejects.toMatchObject({ code: 'ERR_DELAY_RECURRING_TOPIC' });
    expect(await delay.count('reports.every')).toBe(0);
    expect(await delay.listRecurring('reports.every')).toEqual([]);
  });
});
