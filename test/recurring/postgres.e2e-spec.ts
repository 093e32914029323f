import { INestApplication, Injectable } from '@nestjs/common';
import { DelayContext, DelayEvent, DelayService, OnRecurring } from 'nestjs-delay';
import { DELAY_DRIVER } from '../../libs/delay/src/delay.constants';
import type { DelayDriver } from '../../libs/delay/src/interfaces/delay-driver.interface';
import { bootDelayApp, pollUntil, sleep } from '../conformance/support/driver-fixture';
import { Client } from 'pg';
import { PostgresDriver } from '../../libs/delay/src/drivers/postgres/postgres.driver';
import type { Delivery, DeliveryOutcome } from '../../libs/delay/src/interfaces/delay-driver.interface';
import { TestPostgresServer } from '../support/postgres-server';
import { TcpFaultProxy } from '../postgres/support/tcp-fault-proxy';
import { abortLog, Abortable, Buffered, exerciseBufferOneAcrossInstances, exerciseLiveSlowRun, Lingering, DeclaresA, DeclaresB, declaredRuns, exerciseCancelPreviousAborts, exerciseLastRuns, exerciseRemoteAbort, exerciseScheduleOperations, expectNoDuplicates, HandlesB, Outcomes, Reports, Run, Slow } from './support/recurring-handlers';

/** One slow handler per overlap policy, one slot each: every 1 s schedule meets its previous occurrence still running. */
@Injectable()
class Overlapping {
  readonly started = new Map<string, number>();

  private async work(topic: string): Promise<void> {
    this.started.set(topic, (this.started.get(topic) ?? 0) + 1);
    await sleep(2_500);
  }

  @OnRecurring('overlap.skip', { concurrency: 1 })
  skip(): Promise<void> {
    return this.work('overlap.skip');
  }

  @OnRecurring('overlap.allow', { concurrency: 1 })
  allow(): Promise<void> {
    return this.work('overlap.allow');
  }

  @OnRecurring('overlap.cancel', { concurrency: 1 })
  cancel(): Promise<void> {
    return this.work('overlap.cancel');
  }

  @OnRecurring('overlap.buffer', { concurrency: 1 })
  buffer(): Promise<void> {
    return this.work('overlap.buffer');
  }
}

/** The handler of the two-instance test: each instance records what it ran. */
@Injectable()
class Shared {
  readonly runs: Run[] = [];

  @OnRecurring('shared.every', { concurrency: 4 })
  run({ key, occurrence, firedAt }: DelayContext): void {
    this.runs.push({ key, scheduledAt: occurrence?.scheduledAt.getTime() ?? NaN, runNow: occurrence?.runNow ?? false, at: firedAt.getTime() });
  }
}

const sizeOf = (events: readonly DelayEvent[], type: DelayEvent['type'], topic: string): number =>
  events.filter((event) => event.type === type && event.topic === topic).reduce((sum, event) => sum + (event.size ?? 1), 0);

describe('recurring schedules on the postgres driver (real PostgreSQL)', () => {
  let server: TestPostgresServer;
  let apps: INestApplication[] = [];
  let schemas = 0;

  beforeAll(async () => {
    server = await TestPostgresServer.start();
  }, 60_000);
  afterAll(async () => {
    await server.dispose();
  });
  afterEach(async () => {
    await Promise.all(apps.map((app) => app.close()));
    apps = [];
  });

  const fresh = (): string => `rec_${process.pid}_${++schemas}`;

  async function boot(schema = fresh()): Promise<{ delay: DelayService; reports: Reports; app: INestApplication }> {
    const app = await bootDelayApp({ driver: { type: 'postgres', connectionString: server.url, schema, lease: '5s' }, shutdownTimeout: '1s' }, [Reports, Slow, Overlapping, Shared]);
    apps.push(app);
    return { delay: app.get(DelayService), reports: app.get(Reports), app };
  }

  it('upsert, get, list, pause, resume, run now and remove', async () => {
    const { delay, reports } = await boot();
    await exerciseScheduleOperations(delay, reports);
  }, 60_000);

  it('overlap policies against a 2.5 s handler on a 1 s schedule: skip, allow, cancelPrevious, bufferOne', async () => {
    const { delay, app } = await boot();
    const events: DelayEvent[] = [];
    const subscription = delay.events$.subscribe((event) => events.push(event));
    // Never two occurrences of the bufferOne schedule waiting to start: sampled while it runs.
    let mostWaiting = 0;
    let sampling = true;
    const sampler = (async (): Promise<void> => {
      while (sampling) {
        const pending = (await delay.list('overlap.buffer', { limit: 100 })).items;
        mostWaiting = Math.max(mostWaiting, pending.filter((action) => action.key.includes('\u001e') && action.state === 'waiting').length);
        await sleep(100);
      }
    })();
    const startedAt = Date.now();
    await Promise.all([
      delay.upsertRecurring('overlap.skip', 'k', { every: '1s', overlap: 'skip' }),
      delay.upsertRecurring('overlap.allow', 'k', { every: '1s', overlap: 'allow' }),
      delay.upsertRecurring('overlap.cancel', 'k', { every: '1s', overlap: 'cancelPrevious' }),
      delay.upsertRecurring('overlap.buffer', 'k', { every: '1s', overlap: 'bufferOne' }),
    ]);
    // Waits for what each policy must show rather than a fixed 6.5 s: a busy machine may start the first ones late.
    const cancelled = (): number => events.filter((event) => event.type === 'cancelled' && event.topic === 'overlap.cancel').length;
    await pollUntil(
      () =>
        sizeOf(events, 'recurringFired', 'overlap.allow') >= 5 &&
        sizeOf(events, 'recurringFired', 'overlap.cancel') >= 5 &&
        cancelled() >= 3 &&
        sizeOf(events, 'recurringSkipped', 'overlap.skip') >= 2 &&
        sizeOf(events, 'recurringSkipped', 'overlap.buffer') >= 1,
      'five occurrences of allow and cancelPrevious, skips of skip and bufferOne',
      20_000,
    );
    const elapsed = Date.now() - startedAt;
    await Promise.all(['overlap.skip', 'overlap.allow', 'overlap.cancel', 'overlap.buffer'].map((topic) => delay.removeRecurring(topic, 'k')));
    sampling = false;
    await sampler;
    subscription.unsubscribe();
    const started = app.get(Overlapping).started;

    // skip: nothing new while one waits or runs, so at most one start in each 2.5 s.
    expect(sizeOf(events, 'recurringSkipped', 'overlap.skip')).toBeGreaterThanOrEqual(2);
    expect(started.get('overlap.skip') ?? 0).toBeLessThanOrEqual(Math.floor(elapsed / 2_500) + 1);
    // allow: every instant is created, none refused.
    expect(sizeOf(events, 'recurringSkipped', 'overlap.allow')).toBe(0);
    expect(sizeOf(events, 'recurringFired', 'overlap.allow')).toBeGreaterThanOrEqual(5);
    // cancelPrevious: each new occurrence cancels the one before it, waiting or running.
    expect(sizeOf(events, 'recurringSkipped', 'overlap.cancel')).toBe(0);
    expect(sizeOf(events, 'recurringFired', 'overlap.cancel')).toBeGreaterThanOrEqual(5);
    expect(cancelled()).toBeGreaterThanOrEqual(3);
    // bufferOne: one runs or waits, one is held back (in the tick's state, not created), the rest are refused; never two waiting.
    expect(sizeOf(events, 'recurringSkipped', 'overlap.buffer')).toBeGreaterThanOrEqual(1);
    expect(mostWaiting).toBeLessThanOrEqual(1);
    // No policy holds a tick back: a tick waiting for its schedule's run would miss about two instants per occurrence,
    // on every schedule. (On a busy machine a tick may still be a second late now and then, and miss one.)
    const missed = events.filter((event) => event.type === 'recurringMissed').reduce((sum, event) => sum + (event.size ?? 0), 0);
    expect(missed).toBeLessThanOrEqual(2);
  }, 45_000);

  it('a live run longer than the recurring lease is renewed, never taken back: nothing else of its schedule starts meanwhile', async () => {
    const app = await bootDelayApp({ driver: { type: 'postgres', connectionString: server.url, schema: fresh() }, shutdownTimeout: '1s' }, [Lingering]);
    apps.push(app);
    await exerciseLiveSlowRun(app.get(DelayService));
  }, 60_000);

  it('bufferOne on two instances: never two runs of a schedule at once; the one held back starts as the running one ends', async () => {
    const schema = fresh();
    const options = { driver: { type: 'postgres' as const, connectionString: server.url, schema }, shutdownTimeout: '1s' };
    apps.push(await bootDelayApp(options, [Buffered]));
    apps.push(await bootDelayApp(options, [Buffered]));
    await exerciseBufferOneAcrossInstances(apps.map((app) => app.get(DelayService)));
  }, 60_000);

  it('two driver instances on one database: every occurrence runs exactly once, on either', async () => {
    const schema = fresh();
    const [a, b] = [await boot(schema), await boot(schema)];
    for (let n = 0; n < 6; n++) await a.delay.upsertRecurring('shared.every', `s${n}`, { every: '1s', missed: 'all', overlap: 'allow' });
    await sleep(5_000);
    for (let n = 0; n < 6; n++) await b.delay.removeRecurring('shared.every', `s${n}`);
    await sleep(500);
    const runs = [...a.app.get(Shared).runs, ...b.app.get(Shared).runs];
    expectNoDuplicates(runs);
    // No gap in any schedule: each ran every second from its first run to its last.
    for (let n = 0; n < 6; n++) {
      const instants = runs.filter((run) => run.key === `s${n}`).map((run) => run.scheduledAt).sort((x, y) => x - y);
      expect(instants.length).toBeGreaterThanOrEqual(3);
      for (let i = 1; i < instants.length; i++) expect(instants[i] - instants[i - 1]).toBe(1000);
    }
    expect(a.app.get(Shared).runs.length + b.app.get(Shared).runs.length).toBe(runs.length);
  }, 30_000);

  it("a tick's step whose reply is lost (reset after it committed) is not applied twice: every instant once, no gap", async () => {
    const schema = fresh();
    const driver = (url: string): { type: 'postgres'; connectionString: string; schema: string; lease: string } => ({ type: 'postgres', connectionString: url, schema, lease: '5s' });
    const producer = await bootDelayApp({ driver: driver(server.url), consume: false, shutdownTimeout: '1s' }, [Shared]);
    apps.push(producer);
    const delay = producer.get(DelayService);
    for (let n = 0; n < 3; n++) await delay.upsertRecurring('shared.every', `lost${n}`, { every: '1s', missed: 'all', overlap: 'allow' });
    const proxy = await TcpFaultProxy.start(server.port);
    try {
      // The consumer's first two step statements (advance_series_steps: the steps of one claim's ticks) run and commit;
      // their connections are reset as the answer starts.
      const reset = proxy.resetOnReply('advance_series_steps(', 2);
      const consumer = await bootDelayApp({ driver: driver(`postgres://postgres@127.0.0.1:${proxy.port}/postgres`), shutdownTimeout: '1s' }, [Shared]);
      apps.push(consumer);
      await pollUntil(() => reset.at.length === 2, 'two steps to lose their reply', 10_000);
      await sleep(3_500);
      for (let n = 0; n < 3; n++) await delay.removeRecurring('shared.every', `lost${n}`);
      await sleep(500);
      const runs = consumer.get(Shared).runs;
      expectNoDuplicates(runs);
      for (let n = 0; n < 3; n++) {
        const instants = runs.filter((run) => run.key === `lost${n}`).map((run) => run.scheduledAt).sort((x, y) => x - y);
        expect(instants.length).toBeGreaterThanOrEqual(3);
        for (let i = 1; i < instants.length; i++) expect(instants[i] - instants[i - 1]).toBe(1000);
      }
    } finally {
      await Promise.all(apps.map((app) => app.close()));
      apps = [];
      await proxy.close();
    }
  }, 30_000);

  it('a tick takes no handler slot: with the only slot busy for 3 s, every 1 s occurrence is still created on time', async () => {
    const { delay, app } = await boot();
    const events: DelayEvent[] = [];
    const subscription = delay.events$.subscribe((event) => events.push(event));
    const fired = (): number => sizeOf(events, 'recurringFired', 'slow.every');
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
    expect(app.get(Slow).started).toBeLessThanOrEqual(Math.floor(elapsed / 3_000) + 1);
  }, 30_000);

  it('a tick moved later by hand (reschedule) is not claimed at its old time', async () => {
    const { delay, reports, app } = await boot();
    await delay.upsertRecurring('reports.every', 'm', { every: '1s' });
    await pollUntil(() => reports.of('m').length >= 1, 'a first occurrence', 10_000);
    // By hand on the driver: DelayService refuses to move a schedule's own key.
    expect(await app.get<DelayDriver>(DELAY_DRIVER).reschedule({ topic: 'reports.every', key: 'm', due: { delayMs: 3_600_000 }, maxPastMs: 0 })).not.toBeNull();
    await sleep(300);
    const before = reports.of('m').length;
    await sleep(2_500);
    expect(reports.of('m').length).toBe(before);
    expect((await delay.getRecurring('reports.every', 'm'))?.nextRunAt?.getTime()).toBeGreaterThan(Date.now() + 3_000_000);
  }, 30_000);

  it('a schedule survives a kill -9 and restart of PostgreSQL, with no occurrence run twice or lost', async () => {
    const { delay, reports } = await boot();
    await delay.upsertRecurring('reports.every', 'r', { every: '1s', missed: 'all', overlap: 'allow' });
    await pollUntil(() => reports.of('r').length >= 2, 'two occurrences', 15_000);
    await server.kill();
    await sleep(2_000);
    await server.boot();
    const before = reports.of('r').length;
    await pollUntil(() => reports.of('r').length >= before + 4, 'occurrences after the restart', 30_000);
    expectNoDuplicates(reports.runs);
    // missed 'all': the seconds PostgreSQL was down are caught up, so the scheduled instants have no gap.
    const instants = reports.of('r').map((run) => run.scheduledAt);
    for (let n = 1; n < instants.length; n++) expect(instants[n] - instants[n - 1]).toBe(1000);
  }, 60_000);

  it('cancelPrevious on two instances: each running occurrence sees its signal fire when the next one cancels it, on whichever instance', async () => {
    abortLog.started.length = 0;
    abortLog.aborted.length = 0;
    const options = { driver: { type: 'postgres' as const, connectionString: server.url, schema: fresh(), lease: '2s' }, shutdownTimeout: '1s' };
    const one = await bootDelayApp(options, [Abortable]);
    apps.push(one);
    apps.push(await bootDelayApp(options, [Abortable]));
    const delay = one.get(DelayService);
    await exerciseCancelPreviousAborts(delay);
  }, 60_000);

  it('an occurrence cancelled from another instance learns it at its next lease renewal: its signal fires', async () => {
    abortLog.started.length = 0;
    abortLog.aborted.length = 0;
    const driver = { type: 'postgres' as const, connectionString: server.url, schema: fresh(), lease: '2s' };
    const running = await bootDelayApp({ driver, shutdownTimeout: '1s' }, [Abortable]);
    apps.push(running);
    // A producer-only instance: it runs nothing, so only the running instance's lease renewal can tell the handler.
    const producer = await bootDelayApp({ driver, consume: false }, []);
    apps.push(producer);
    const delay = running.get(DelayService);
    await exerciseRemoteAbort(delay, producer.get(DelayService));
    await delay.removeRecurring('abortable.every', 'remote');
  }, 30_000);

  it('listRecurring and getRecurring show the last run: succeeded, retrying, dead, skipped, with its lag', async () => {
    const app = await bootDelayApp({ driver: { type: 'postgres', connectionString: server.url, schema: fresh() }, shutdownTimeout: '1s' }, [Outcomes]);
    apps.push(app);
    const delay = app.get(DelayService);
    const outcomes = app.get(Outcomes);
    await exerciseLastRuns(delay, outcomes);
    // Removing the schedule removes its last run: a schedule made again under the key starts with none.
    outcomes.mode = 'ok';
    await delay.removeRecurring('outcome.every', 'job');
    await delay.upsertRecurring('outcome.every', 'job', { every: '1h' });
    expect((await delay.getRecurring('outcome.every', 'job'))?.lastRun).toBeNull();
    await delay.removeRecurring('outcome.every', 'job');
  }, 60_000);

  it('a rolling deploy drops @Recurring B: it fires once per instant while the old instance runs, and is removed once the old one is gone for the grace', async () => {
    const config = { driver: { type: 'postgres' as const, connectionString: server.url, schema: fresh() }, shutdownTimeout: '1s', recurringOrphanGrace: '3s' };
    const old = await bootDelayApp(config, [DeclaresA, DeclaresB]);
    const app = await bootDelayApp(config, [DeclaresA, HandlesB]);
    apps.push(app);
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
    // B's mark and last run went with it; A keeps its mark.
    const schema = config.driver.schema;
    expect(await server.admin(`SELECT topic FROM ${schema}.series_marks ORDER BY topic`, [], true)).toEqual([{ topic: 'orphan.a' }]);
    expect(await server.admin(`SELECT topic FROM ${schema}.series_runs ORDER BY topic`, [], true)).toEqual([{ topic: 'orphan.a' }]);
    // Exactly once per instant throughout.
    expect(declaredRuns.length - new Set(declaredRuns).size).toBe(0);
  }, 60_000);

  it('bad input is refused with a typed error and writes nothing', async () => {
    const { delay } = await boot();
    await expect(delay.upsertRecurring('reports.every', 'k', { every: '500ms' })).rejects.toMatchObject({ code: 'ERR_DELAY_INVALID_RECURRENCE' });
    await expect(delay.upsertRecurring('reports.every', 'k', { cron: 'every day' })).rejects.toMatchObject({ code: 'ERR_DELAY_INVALID_CRON_EXPRESSION' });
    await expect(delay.schedule('reports.every', 'k', { delay: '1m' })).rejects.toMatchObject({ code: 'ERR_DELAY_RECURRING_TOPIC' });
    expect(await delay.count('reports.every')).toBe(0);
    expect(await delay.listRecurring('reports.every')).toEqual([]);
  });

  it('advanceSeries on the driver: its conditions, occurrences never over an action, the tick re-armed, left or removed, and NOTIFY only when earlier', async () => {
    const schema = fresh();
    const driver = new PostgresDriver({ type: 'postgres', connectionString: server.url, schema });
    await driver.connect();
    const listener = new Client({ connectionString: server.url });
    await listener.connect();
    const notified: string[] = [];
    listener.on('notification', (message) => notified.push(message.payload ?? ''));
    await listener.query(`LISTEN ${schema}`);
    const settled = (): Promise<void> => sleep(200); // notifications arrive after the commit
    const occurrence = (at: number, name: string) => ({ key: `k\u001e${name}`, due: { atMs: at }, payload: `"${name}"` });
    try {
      const base = Date.now() + 3_600_000;
      // absent: arms the tick; a second absent changes nothing.
      const first = await driver.advanceSeries({ topic: 't', key: 'k', expect: { absent: true }, occurrences: [], overlap: 'skip', next: { due: { atMs: base }, payload: 'state-1' } });
      expect(first).toEqual({ applied: true, created: [], skipped: [], cancelled: [] });
      expect(await driver.advanceSeries({ topic: 't', key: 'k', expect: { absent: true }, occurrences: [], overlap: 'skip', next: { due: { atMs: base }, payload: 'x' } })).toMatchObject({ applied: false });
      // payload: only the payload read; a stale one changes nothing.
      expect(await driver.advanceSeries({ topic: 't', key: 'k', expect: { payload: 'stale' }, occurrences: [occurrence(base, 'a')], overlap: 'allow', next: undefined })).toMatchObject({ applied: false });
      expect(await driver.count('t')).toBe(1);
      // token: only the run holding the tick's claim; a waiting tick has none.
      expect(await driver.advanceSeries({ topic: 't', key: 'k', expect: { token: '1' }, occurrences: [], overlap: 'allow', next: undefined })).toMatchObject({ applied: false });
      await settled();
      expect(notified).toEqual([(await listener.query(`SELECT ${schema}.wake_tag('t') AS tag`)).rows[0].tag]);

      // An occurrence is never created over an existing action: it is reported skipped.
      await driver.schedule({ topic: 't', key: 'k\u001eb', due: { atMs: base + 10 }, payload: '"mine"', ifExists: 'replace', maxPastMs: 60_000 });
      notified.length = 0;
      const second = await driver.advanceSeries({
        topic: 't',
        key: 'k',
        expect: { payload: 'state-1' },
        occurrences: [occurrence(base + 5, 'a'), occurrence(base + 10, 'b')],
        overlap: 'allow',
        next: undefined,
      });
      expect(second).toEqual({ applied: true, created: ['k\u001ea'], skipped: ['k\u001eb'], cancelled: [] });
      expect((await driver.get('t', 'k\u001eb'))?.payload).toBe('"mine"');
      expect((await driver.get('t', 'k'))?.payload).toBe('state-1'); // next undefined: the tick is left as it was
      await settled();
      expect(notified).toEqual([]); // base + 5 is not earlier than the topic's earliest (base)

      // skip: an occurrence of the series (a) is alive, so nothing new is created.
      const skipped = await driver.advanceSeries({ topic: 't', key: 'k', expect: { payload: 'state-1' }, occurrences: [occurrence(base - 1000, 'c')], overlap: 'skip', next: undefined });
      expect(skipped).toEqual({ applied: true, created: [], skipped: ['k\u001ec'], cancelled: [], blockedBy: { occurrenceKey: 'k\u001ea', state: 'waiting', dueAt: expect.any(Number), attempt: 1 } });
      // bufferOne: a is waiting, so nothing new either; cancelPrevious: a is cancelled (b is no occurrence of the series).
      expect(await driver.advanceSeries({ topic: 't', key: 'k', expect: { payload: 'state-1' }, occurrences: [occurrence(base - 1000, 'c')], overlap: 'bufferOne', next: undefined })).toMatchObject({
        created: [],
        skipped: ['k\u001ec'],
      });
      notified.length = 0;
      const replaced = await driver.advanceSeries({
        topic: 't',
        key: 'k',
        expect: { payload: 'state-1' },
        occurrences: [occurrence(base - 1000, 'c')],
        overlap: 'cancelPrevious',
        next: { due: { atMs: base + 60_000 }, payload: 'state-2' },
      });
      expect(replaced).toEqual({ applied: true, created: ['k\u001ec'], skipped: [], cancelled: ['k\u001ea'] });
      expect(await driver.get('t', 'k\u001ea')).toBeNull();
      await settled();
      // Earlier than the topic's earliest: one notification, with the topic's tag (see wake_tag in the migrations).
      expect(notified).toEqual([(await listener.query(`SELECT ${schema}.wake_tag('t') AS tag`)).rows[0].tag]);

      // token: the run of the tick being delivered re-arms it once; a second step under the same token changes nothing.
      await driver.advanceSeries({ topic: 't', key: 'k', expect: { payload: 'state-2' }, occurrences: [], overlap: 'skip', next: { due: { delayMs: 0 }, payload: 'state-3' } });
      const deliveries: Delivery[] = [];
      let finish: (outcome: DeliveryOutcome) => void = () => undefined;
      await driver.start({
        topics: new Map([['t', 1]]),
        handle: (delivery) => {
          deliveries.push(delivery);
          return new Promise<DeliveryOutcome>((resolve) => (finish = resolve));
        },
      });
      await pollUntil(() => deliveries.some((delivery) => delivery.key === 'k'), 'the tick delivered', 10_000);
      const tick = deliveries.find((delivery) => delivery.key === 'k') as Delivery;
      const step = { topic: 't', key: 'k', expect: { token: tick.token }, occurrences: [], overlap: 'skip' as const, next: { due: { atMs: base }, payload: 'state-4' } };
      expect(await driver.advanceSeries(step)).toMatchObject({ applied: true });
      expect(await driver.advanceSeries(step)).toMatchObject({ applied: false });
      expect(await driver.get('t', 'k')).toMatchObject({ payload: 'state-4', dueAt: base, state: 'waiting' });
      finish({ kind: 'completed' });

      // null: the tick and the series' record go; its occurrences stay, as any action.
      expect(await driver.advanceSeries({ topic: 't', key: 'k', expect: { payload: 'state-4' }, occurrences: [], overlap: 'skip', next: null })).toMatchObject({ applied: true });
      expect(await driver.get('t', 'k')).toBeNull();
      expect(await server.admin(`SELECT count(*)::int AS n FROM ${schema}.series`, [], true)).toEqual([{ n: 0 }]);
    } finally {
      await listener.end();
      await driver.drain(1_000);
      await driver.close();
    }
  }, 30_000);

  it('declaration marks on the driver: they only move later, a series without one gets one a grace ahead, and a passed one removes the series with its record, last run and mark', async () => {
    const schema = fresh();
    const driver = new PostgresDriver({ type: 'postgres', connectionString: server.url, schema });
    await driver.connect();
    const marks = async (): Promise<Record<string, number>> =>
      Object.fromEntries((await server.admin(`SELECT key, declared_until FROM ${schema}.series_marks`, [], true)).map((row) => [String(row.key), Number(row.declared_until)]));
    const table = async (name: string): Promise<number> => Number((await server.admin(`SELECT count(*)::int AS n FROM ${schema}.${name}`, [], true))[0].n);
    try {
      const base = Date.now() + 3_600_000;
      for (const key of ['k', 'fresh']) {
        await driver.advanceSeries({ topic: 't', key, expect: { absent: true }, occurrences: [], overlap: 'skip', next: { due: { atMs: base }, payload: `${key}-1` } });
      }
      // A key given twice is marked once; a shorter mark does not move it back.
      await driver.declareSeries('t', ['k', 'k'], 60_000);
      const first = (await marks()).k;
      expect(first).toBeGreaterThan(Date.now() + 30_000);
      await driver.declareSeries('t', ['k'], 1_000);
      expect((await marks()).k).toBe(first);
      // A mark ahead: the step applies as usual (the skipped occurrence is recorded as the last run).
      await driver.advanceSeries({ topic: 't', key: 'k', expect: { payload: 'k-1' }, occurrences: [{ key: 'k\u001ea', due: { atMs: base }, payload: undefined }], overlap: 'allow', next: undefined, orphanGraceMs: 3_000 });
      const refused = await driver.advanceSeries({ topic: 't', key: 'k', expect: { payload: 'k-1' }, occurrences: [{ key: 'k\u001eb', due: { atMs: base }, payload: undefined }], overlap: 'skip', next: undefined, orphanGraceMs: 3_000 });
      const blockedBy = { occurrenceKey: 'k\u001ea', state: 'waiting', dueAt: expect.any(Number), attempt: 1 };
      expect(refused).toEqual({ applied: true, created: [], skipped: ['k\u001eb'], cancelled: [], blockedBy });
      expect(await driver.lastSeriesRuns('t', ['k', 'fresh', 'none'])).toEqual([{ outcome: 'skipped', occurrenceKey: 'k\u001eb', startedAt: undefined, attempt: 0, at: expect.any(Number), blockedBy }, null, null]);
      // No mark yet: one is set a grace ahead.
      const before = Date.now();
      expect(await driver.advanceSeries({ topic: 't', key: 'fresh', expect: { payload: 'fresh-1' }, occurrences: [], overlap: 'skip', next: undefined, orphanGraceMs: 5_000 })).toMatchObject({ applied: true });
      expect((await marks()).fresh).toBeGreaterThanOrEqual(before + 4_000);
      // The mark has passed: the series is removed, and nothing else is done.
      await server.admin(`UPDATE ${schema}.series_marks SET declared_until = declared_until - 120000 WHERE key = 'k'`, [], true);
      const orphaned = await driver.advanceSeries({ topic: 't', key: 'k', expect: { payload: 'k-1' }, occurrences: [{ key: 'k\u001ec', due: { atMs: base }, payload: undefined }], overlap: 'allow', next: undefined, orphanGraceMs: 3_000 });
      expect(orphaned).toEqual({ applied: true, created: [], skipped: [], cancelled: [], orphaned: true });
      expect(await driver.get('t', 'k')).toBeNull();
      expect(await driver.get('t', 'k\u001ec')).toBeNull();
      expect(Object.keys(await marks())).toEqual(['fresh']);
      expect(await table('series_runs')).toBe(0);
      expect(Number((await server.admin(`SELECT count(*)::int AS n FROM ${schema}.series WHERE key = 'k'`, [], true))[0].n)).toBe(0);
    } finally {
      await driver.close();
    }
  }, 30_000);
});
