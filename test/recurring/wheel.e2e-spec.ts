import { Injectable, Logger, Provider } from '@nestjs/common';
import { DelayContext, DelayEvent, DelayService, OnDelayExpired, OnRecurring, Recurring, RecurringOptions } from 'nestjs-delay';
import { DelayTestingModule, VirtualClock } from 'nestjs-delay/testing';
import { compileRecurrence } from '../../libs/delay/src/recurring/compile-recurrence';
import { RecurringSchedules } from '../../libs/delay/src/recurring/recurring-schedules';
import { DELAY_DRIVER } from '../../libs/delay/src/delay.constants';
import type { DelayDriver } from '../../libs/delay/src/interfaces/delay-driver.interface';
import { useApps } from '../wheel/support/apps';

const HOUR = 3_600_000;

/** Every occurrence run, as `key@ISO` of its scheduled time, and how many times each ran. */
@Injectable()
class Runs {
  readonly fired = new Map<string, number>();
  readonly started: Array<{ key: string; scheduledAt: number; at: number }> = [];
  sleepMs = 0;
  clock: VirtualClock | undefined;

  record({ key, occurrence, firedAt }: DelayContext): void {
    const id = `${key}@${occurrence?.scheduledAt.toISOString()}`;
    this.fired.set(id, (this.fired.get(id) ?? 0) + 1);
    this.started.push({ key, scheduledAt: occurrence?.scheduledAt.getTime() ?? NaN, at: firedAt.getTime() });
  }

  count(key: string): number {
    return this.started.filter((run) => run.key === key).length;
  }
}

@Injectable()
class Fleet {
  constructor(private readonly runs: Runs) {}

  @OnRecurring('fleet.tick')
  async run(context: DelayContext): Promise<void> {
    this.runs.record(context);
    if (this.runs.sleepMs > 0) await (this.runs.clock as VirtualClock).sleep(this.runs.sleepMs);
  }
}

@Injectable()
class Serial {
  constructor(private readonly runs: Runs) {}

  @OnRecurring('serial.tick', { concurrency: 1 })
  async run(context: DelayContext): Promise<void> {
    this.runs.record(context);
    if (this.runs.sleepMs > 0) await (this.runs.clock as VirtualClock).sleep(this.runs.sleepMs);
  }
}

/** A 90 s handler that stops when its signal fires, and says when and why. */
@Injectable()
class Abortable {
  readonly aborted: Array<{ key: string; startedAt: number; abortedAt: number; code: string | undefined; reason: string | undefined }> = [];
  finished = 0;

  constructor(private readonly runs: Runs) {}

  @OnRecurring('abortable.tick')
  async run(context: DelayContext): Promise<void> {
    this.runs.record(context);
    const clock = this.runs.clock as VirtualClock;
    const startedAt = clock.now();
    const { signal } = context;
    const aborted = new Promise<'aborted'>((resolve) => signal.addEventListener('abort', () => resolve('aborted'), { once: true }));
    if ((await Promise.race([clock.sleep(90_000).then(() => 'slept' as const), aborted])) === 'slept') {
      this.finished++;
      return;
    }
    const reason = signal.reason as { code?: string; reason?: string } | undefined;
    this.aborted.push({ key: context.occurrence?.key ?? '', startedAt, abortedAt: clock.now(), code: reason?.code, reason: reason?.reason });
  }
}

/** Succeeds, fails, or works 90 s, as the test says. */
@Injectable()
class Outcomes {
  mode: 'ok' | 'fail' | 'sleep' = 'ok';

  constructor(private readonly runs: Runs) {}

  @OnRecurring('outcome.tick', { attempts: 2, backoff: { type: 'fixed', delay: '10s' } })
  async run(context: DelayContext): Promise<void> {
    this.runs.record(context);
    if (this.mode === 'fail') throw new Error('failed on purpose');
    if (this.mode === 'sleep') await (this.runs.clock as VirtualClock).sleep(90_000);
  }
}

/** Two schedules declared in code on one topic: A, and B, which a later version of the code no longer declares. */
@Injectable()
class DeclaresA {
  constructor(private readonly runs: Runs) {}

  @Recurring('orphans.tick', { every: '1m', key: 'a' })
  run(context: DelayContext): void {
    this.runs.record(context);
  }
}

@Injectable()
class Nightly {
  constructor(private readonly runs: Runs) {}

  @Recurring('reports.nightly', { cron: '30 2 * * *', timeZone: 'Europe/Paris', attempts: 2 })
  report(context: DelayContext): void {
    this.runs.record(context);
  }
}

@Injectable()
class OneOff {
  @OnDelayExpired('order.unpaid')
  cancel(): void {
    // not run here
  }
}

@Injectable()
class BadCron {
  @Recurring('bad.cron', { cron: '61 * * * *' })
  run(): void {
    // never declared
  }
}

/** The scheduled instants of `spec` in (from, to], from compileRecurrence alone. */
function oracle(spec: RecurringOptions, from: number, to: number): number[] {
  const next = compileRecurrence(spec, { minIntervalMs: 1 });
  const instants: number[] = [];
  for (let t = next.after(from); t !== null && t <= to; t = next.after(t)) instants.push(t);
  return instants;
}

const ZONES = ['Europe/Paris', 'America/New_York', 'Australia/Lord_Howe', 'America/Santiago', 'Asia/Kolkata', 'UTC'];
const CRONS = ['0 * * * *', '*/30 * * * *', '30 2 * * *', '0 2,3 * * *', '15 1-3 * * *', '0 0 * * *', '45 */2 * * *', '0 9,17 * * MON-FRI'];
const EVERY = ['45m', '2h', '90m', '20m', '3h'];

function mixedSpec(n: number): RecurringOptions {
  if (n % 3 === 2) return { every: EVERY[n % EVERY.length], anchor: 1_000 * n };
  return { cron: CRONS[n % CRONS.length], timeZone: ZONES[Math.floor(n / 3) % ZONES.length] };
}

describe('recurring schedules on the wheel with a VirtualClock', () => {
  const apps = useApps();

  async function boot(start: string | number, providers: Provider[] = [Fleet]) {
    const clock = new VirtualClock(typeof start === 'string' ? Date.parse(start) : start);
    const app = await apps.boot({ imports: [DelayTestingModule.forRoot({ clock })], providers: [Runs, ...providers] });
    const runs = app.get(Runs);
    runs.clock = clock;
    return { app, clock, runs, delay: app.get(DelayService) };
  }

  it('1,000 mixed schedules over 72 virtual hours across both 2026 DST changes: every occurrence exactly once, as compileRecurrence says', async () => {
    for (const start of ['2026-03-27T12:00:00Z', '2026-10-23T12:00:00Z']) {
      const { app, clock, runs, delay } = await boot(start);
      const from = clock.now();
      const expected = new Set<string>();
      for (let n = 0; n < 1000; n++) {
        const spec = mixedSpec(n);
        await delay.upsertRecurring('fleet.tick', `s${n}`, spec);
        for (const instant of oracle(spec, from, from + 72 * HOUR)) expected.add(`s${n}@${new Date(instant).toISOString()}`);
      }
      for (let day = 0; day < 3; day++) await clock.advance('24h');
      const twice = [...runs.fired].filter(([, count]) => count > 1);
      expect(twice).toEqual([]);
      const missing = [...expected].filter((id) => !runs.fired.has(id));
      const extra = [...runs.fired.keys()].filter((id) => !expected.has(id));
      expect({ missing: missing.slice(0, 5), extra: extra.slice(0, 5) }).toEqual({ missing: [], extra: [] });
      expect(runs.fired.size).toBe(expected.size);
      expect(expected.size).toBeGreaterThan(50_000);
      // Each ran at its scheduled time: no jitter was asked, and the virtual clock is exact.
      expect(runs.started.every((run) => run.at === run.scheduledAt)).toBe(true);
      await app.close();
    }
  }, 240_000);

  it('@Recurring declares a schedule at bootstrap: 02:30 Paris fires once a day through the spring-forward and fall-back nights', async () => {
    const { clock, runs, delay } = await boot('2026-03-27T12:00:00Z', [Nightly]);
    const schedule = await delay.getRecurring('reports.nightly', 'default');
    expect(schedule).toMatchObject({ declared: true, recurrence: { cron: '30 2 * * *', timeZone: 'Europe/Paris', dstGap: 'shift' }, paused: false });
    await clock.advance('72h');
    // 28 March 02:30 CET = 01:30Z; 29 March the clock skips 02:00-03:00: shifted to 03:00 CEST = 01:00Z; 30 March 02:30 CEST = 00:30Z.
    expect(runs.started.map((run) => new Date(run.at).toISOString())).toEqual(['2026-03-28T01:30:00.000Z', '2026-03-29T01:00:00.000Z', '2026-03-30T00:30:00.000Z']);
    expect(runs.started.every((run) => run.key === 'default')).toBe(true);
    await clock.advanceTo(Date.parse('2026-10-24T12:00:00Z'));
    runs.started.length = 0;
    await clock.advance('48h');
    // 25 October: 02:30 happens twice (00:30Z CEST, 01:30Z CET): dstOverlap 'first' fires only the first.
    expect(runs.started.map((run) => new Date(run.at).toISOString())).toEqual(['2026-10-25T00:30:00.000Z', '2026-10-26T01:30:00.000Z']);
  });

  describe('missed-run policy after 5 hours with the topic paused, hourly schedule', () => {
    it.each([
      ['skip', 0],
      ['once', 1],
      ['all', 5],
      [{ within: '2h' }, 2],
    ] as const)('%p runs %d of the 5 missed occurrences', async (missed, count) => {
      const { clock, runs, delay } = await boot('2026-06-01T00:30:00Z');
      await delay.upsertRecurring('fleet.tick', 'hourly', { cron: '0 * * * *', missed, overlap: 'allow' });
      await clock.advance('1h');
      expect(runs.count('hourly')).toBe(1);
      const events: DelayEvent[] = [];
      const subscription = delay.events$.subscribe((event) => events.push(event));
      await delay.pause('fleet.tick');
      await clock.advance('5h'); // 02:00 .. 06:00 due while paused; now 06:30
      expect(runs.count('hourly')).toBe(1);
      await delay.resume('fleet.tick');
      await clock.advance(0);
      expect(runs.count('hourly') - 1).toBe(count);
      // The ones that ran are the latest of the missed, each once, and the cadence goes on.
      const caughtUp = runs.started.slice(1).map((run) => new Date(run.scheduledAt).toISOString().slice(11, 16));
      expect(caughtUp).toEqual(['02:00', '03:00', '04:00', '05:00', '06:00'].slice(5 - count));
      expect(events.filter((event) => event.type === 'recurringMissed').map((event) => event.size)).toEqual(count === 5 ? [] : [5 - count]);
      await clock.advance('1h');
      expect(runs.count('hourly') - 1).toBe(count + 1);
      subscription.unsubscribe();
    });

    it('300 schedules of two topics missing runs at once log one line per topic and interval, with counts', async () => {
      const { app, clock, delay } = await boot('2026-06-01T00:30:00Z', [Fleet, Serial]);
      for (let n = 0; n < 200; n++) await delay.upsertRecurring('fleet.tick', `f${n}`, { every: '1h' });
      for (let n = 0; n < 100; n++) await delay.upsertRecurring('serial.tick', `s${n}`, { every: '1h' });
      await clock.advance('1h');
      const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
      await delay.pause('fleet.tick');
      await delay.pause('serial.tick');
      await clock.advance('5h');
      await delay.resume('fleet.tick');
      await delay.resume('serial.tick');
      await clock.advance(0);
      await app.close(); // writes what the interval gathered
      const lines = warn.mock.calls.map(([line]) => String(line)).filter((line) => line.includes('missed'));
      warn.mockRestore();
      // missed 'once': each schedule ran its latest of 5 and missed 4. The first of a topic at once, the rest in one line.
      expect(lines.map((line) => line.replace(/"([fs])\d+"/, '"$1#"'))).toEqual([
        'Recurring "fleet.tick" / "f#": 4 occurrence(s) missed (policy once)',
        'Recurring "serial.tick" / "s#": 4 occurrence(s) missed (policy once)',
        'Recurring "fleet.tick": 796 more occurrence(s) missed by 199 tick(s) in the last 10 s; the latest "f#" (policy once)',
        'Recurring "serial.tick": 396 more occurrence(s) missed by 99 tick(s) in the last 10 s; the latest "s#" (policy once)',
      ]);
    });

    it.each([
      ['12s', 2],
      ['30s', 6],
    ] as const)('{ within: %p } below the one-minute grace, every 5 s paused 40 s: runs the %d at most that old, not all 8', async (within, count) => {
      const { clock, runs, delay } = await boot('2026-06-01T00:00:00Z');
      await delay.upsertRecurring('fleet.tick', 'often', { every: '5s', anchor: 2_500, missed: { within }, overlap: 'allow' });
      await clock.advance('3s'); // 00:00:02.5 ran
      expect(runs.count('often')).toBe(1);
      await delay.pause('fleet.tick');
      await clock.advance('42s'); // 7.5 .. 42.5 due while paused; now 45: the 8 are 2.5 to 37.5 s old
      await delay.resume('fleet.tick');
      await clock.advance(0);
      const caughtUp = runs.started.slice(1);
      expect(caughtUp).toHaveLength(count);
      const now = clock.now();
      expect(caughtUp.every((run) => now - run.scheduledAt <= parseInt(within, 10) * 1000)).toBe(true);
    });

    it('pausing one schedule parks it; resuming applies its missed-run policy and keeps the cadence', async () => {
      const { clock, runs, delay } = await boot('2026-06-01T00:30:00Z');
      await delay.upsertRecurring('fleet.tick', 'a', { every: '1h', missed: 'once' });
      await delay.upsertRecurring('fleet.tick', 'b', { every: '1h', missed: 'skip' });
      await clock.advance('1h');
      expect(await delay.pauseRecurring('fleet.tick', 'a')).toBe(true);
      expect(await delay.pauseRecurring('fleet.tick', 'a')).toBe(false);
      expect(await delay.getRecurring('fleet.tick', 'a')).toMatchObject({ paused: true, nextRunAt: null });
      await clock.advance('3h');
      expect([runs.count('a'), runs.count('b')]).toEqual([1, 4]);
      expect(await delay.resumeRecurring('fleet.tick', 'a')).toBe(true);
      await clock.advance(0);
      expect(runs.count('a')).toBe(2);
      expect(runs.started.at(-1)).toMatchObject({ key: 'a', scheduledAt: Date.parse('2026-06-01T04:00:00Z') });
      await clock.advance('1h');
      expect([runs.count('a'), runs.count('b')]).toEqual([3, 5]);
    });
  });

  describe('overlap policy, a 90 s handler on a 60 s schedule, 10 occurrences', () => {
    const start = '2026-06-01T00:00:30Z';
    // Occurrences at 00:01:00 .. 00:10:00; each run takes 90 s of virtual time.
    it.each([
      // A previous one running: skipped. Runs start at :01, :03, :05, :07, :09.
      ['skip', 'serial.tick', [1, 3, 5, 7, 9]],
      // Every one is created and, with concurrency 10, starts on time alongside the previous.
      ['allow', 'fleet.tick', [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]],
      // Every one cancels the previous (its outcome is then ignored) and starts on time.
      ['cancelPrevious', 'fleet.tick', [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]],
    ] as const)('%s', async (overlap, topic, minutes) => {
      const { clock, runs, delay } = await boot(start, [Fleet, Serial]);
      runs.sleepMs = 90_000;
      const events: DelayEvent[] = [];
      delay.events$.subscribe((event) => events.push(event));
      await delay.upsertRecurring(topic, 'job', { every: '1m', overlap });
      await clock.advance('9m30s');
      await delay.removeRecurring(topic, 'job');
      await clock.advance('5m'); // let the last runs finish
      expect(runs.started.map((run) => new Date(run.scheduledAt).getUTCMinutes())).toEqual([...minutes]);
      expect(runs.started.every((run) => run.at === run.scheduledAt)).toBe(true);
      const skipped = events.filter((event) => event.type === 'recurringSkipped').length;
      expect(skipped).toBe(10 - minutes.length);
      // Each new occurrence found the previous one still running (90 s > 60 s) and, with cancelPrevious, cancelled it.
      const cancelled = events.filter((event) => event.type === 'cancelled' && event.key.includes('\u001e')).length;
      expect(cancelled).toBe(overlap === 'cancelPrevious' ? 9 : 0);
    });

    it('cancelPrevious fires the running handler\'s signal: each 90 s run is aborted when the next occurrence comes, 60 s in', async () => {
      const { clock, runs, delay, app } = await boot(start, [Abortable]);
      const abortable = app.get(Abortable);
      await delay.upsertRecurring('abortable.tick', 'job', { every: '1m', overlap: 'cancelPrevious' });
      await clock.advance('9m30s');
      await delay.removeRecurring('abortable.tick', 'job');
      await clock.advance('5m');
      expect(runs.count('job')).toBe(10);
      // Nine were cancelled by their successor and saw it through their signal, at the successor's start; the last ran its 90 s.
      expect(abortable.aborted).toHaveLength(9);
      for (const abort of abortable.aborted) {
        expect(abort).toMatchObject({ code: 'ERR_DELAY_HANDLER_ABORTED', reason: 'cancelled' });
        expect(abort.abortedAt - abort.startedAt).toBe(60_000);
      }
      expect(abortable.finished).toBe(1);
    });

    it('bufferOne, with handler slots to spare: never two runs at once; one held back starts as the running one ends, later ones are skipped', async () => {
      const { clock, runs, delay } = await boot(start, [Fleet]);
      runs.sleepMs = 90_000;
      const skips: DelayEvent[] = [];
      delay.events$.subscribe((event) => event.type === 'recurringSkipped' && skips.push(event));
      await delay.upsertRecurring('fleet.tick', 'job', { every: '1m', overlap: 'bufferOne', anchor: 0 });
      await clock.advance('9m30s');
      await delay.removeRecurring('fleet.tick', 'job');
      await clock.advance('10m');
      const started = runs.started.map((run) => [new Date(run.scheduledAt).toISOString().slice(14, 19), new Date(run.at).toISOString().slice(14, 19)]);
      // :01 runs 01:00-02:30; :02 is held back behind it and starts as it ends (the tick looks again every second)...
      expect(started[0]).toEqual(['01:00', '01:00']);
      expect(started[1][0]).toBe('02:00');
      for (let n = 1; n < runs.started.length; n++) {
        // ...never two at once, each one started within a re-check of the end of the one before...
        expect(runs.started[n].at).toBeGreaterThanOrEqual(runs.started[n - 1].at + 90_000);
        expect(runs.started[n].at).toBeLessThanOrEqual(Math.max(runs.started[n].scheduledAt, runs.started[n - 1].at + 90_000) + 1_100);
        expect(runs.started[n].scheduledAt).toBeGreaterThan(runs.started[n - 1].scheduledAt);
      }
      // ...and the instants that came while one was held back were skipped, naming the run in the way.
      const skipped = skips.reduce((sum, event) => sum + (event.size ?? 0), 0);
      // :01, :02, :03, :04, :06, :07 and :09 ran; :05 and :08 came while one was held back; :10, held back, went with the schedule.
      expect(started.map(([scheduled]) => scheduled)).toEqual(['01:00', '02:00', '03:00', '04:00', '06:00', '07:00', '09:00']);
      expect(runs.started.length + skipped).toBe(9);
      expect(skipped).toBeGreaterThan(0);
      expect(skips[0].blockedBy).toMatchObject({ state: 'running', attempt: 1 });
      expect(skips[0].blockedBy?.occurrence).toContain('job\u001e');
    });
  });

  it('listRecurring and getRecurring show the last run: succeeded, retrying, dead, skipped by the overlap policy, with its lag', async () => {
    const { app, clock, delay } = await boot('2026-06-01T00:00:30Z', [Outcomes]);
    const outcomes = app.get(Outcomes);
    await delay.upsertRecurring('outcome.tick', 'job', { every: '1m' });
    expect((await delay.getRecurring('outcome.tick', 'job'))?.lastRun).toBeNull();
    const lastRun = async () => (await delay.getRecurring('outcome.tick', 'job'))?.lastRun;
    await clock.advance('30s'); // 00:01:00 runs and succeeds
    expect(await lastRun()).toMatchObject({ outcome: 'succeeded', attempt: 1, lagMs: 0, scheduledAt: new Date('2026-06-01T00:01:00Z'), startedAt: new Date('2026-06-01T00:01:00Z') });
    outcomes.mode = 'fail';
    await clock.advance('1m'); // 00:02:00 fails; retried 10 s later
    expect(await lastRun()).toMatchObject({ outcome: 'retrying', attempt: 1, lagMs: 0, scheduledAt: new Date('2026-06-01T00:02:00Z') });
    await clock.advance('10s'); // its second and last attempt fails: dead, 10 s late
    expect(await lastRun()).toMatchObject({ outcome: 'dead', attempt: 2, lagMs: 10_000, scheduledAt: new Date('2026-06-01T00:02:00Z') });
    outcomes.mode = 'sleep';
    await clock.advance('50s'); // 00:03:00 starts and works 90 s
    await clock.advance('1m'); // 00:04:00 finds it running: skipped (overlap 'skip')
    expect(await lastRun()).toMatchObject({ outcome: 'skipped', attempt: 0, lagMs: null, startedAt: null, scheduledAt: new Date('2026-06-01T00:04:00Z') });
    await clock.advance('30s'); // 00:03:00 ends
    const [listed] = await delay.listRecurring('outcome.tick');
    expect(listed.lastRun).toMatchObject({ outcome: 'succeeded', scheduledAt: new Date('2026-06-01T00:03:00Z'), lagMs: 0, at: new Date('2026-06-01T00:04:30Z') });
  });

  it('a declared schedule no running instance declares any more is removed after the grace; one still declared, or kept, goes on', async () => {
    const { app, clock, runs, delay } = await boot('2026-06-01T00:00:30Z', [DeclaresA]);
    // Another instance's code declared B on the same topic, and C with orphan 'keep': as its bootstrap and heartbeat would.
    const schedules = app.get(RecurringSchedules);
    const driver = app.get<DelayDriver>(DELAY_DRIVER);
    await schedules.upsert('orphans.tick', 'b', { every: '1m' }, { orphan: 'remove' });
    await schedules.upsert('orphans.tick', 'c', { every: '1m' }, { orphan: 'keep' });
    for (let minute = 0; minute < 20; minute++) {
      await driver.declareSeries?.('orphans.tick', ['b', 'c'], 600_000);
      await clock.advance('1m');
    }
    // 20 minutes with both instances: every schedule fired every minute, once.
    expect([runs.count('a'), runs.count('b'), runs.count('c')]).toEqual([20, 20, 20]);
    expect([...runs.fired.values()].every((times) => times === 1)).toBe(true);
    // The other instance stops: its marks end 10 minutes (the default grace) after its last beat.
    await clock.advance('30m');
    expect(runs.count('b')).toBeGreaterThanOrEqual(29);
    expect(runs.count('b')).toBeLessThanOrEqual(31);
    expect(await delay.getRecurring('orphans.tick', 'b')).toBeNull();
    expect(await driver.get('orphans.tick', 'b')).toBeNull();
    // A is declared by this instance's heartbeat; C is kept.
    expect(runs.count('a')).toBe(50);
    expect(runs.count('c')).toBe(50);
    expect(await delay.getRecurring('orphans.tick', 'a')).toMatchObject({ declared: true, orphan: 'remove' });
    expect(await delay.getRecurring('orphans.tick', 'c')).toMatchObject({ declared: true, orphan: 'keep' });
  });

  it('runRecurringNow adds one occurrence now without moving the cadence; removeRecurring stops it', async () => {
    const { clock, runs, delay } = await boot('2026-06-01T00:10:00Z');
    await delay.upsertRecurring('fleet.tick', 'r', { cron: '0 * * * *', payload: { report: 'sales' } });
    expect(await delay.runRecurringNow('fleet.tick', 'r')).toBe(true);
    expect(await delay.runRecurringNow('fleet.tick', 'nope')).toBe(false);
    await clock.advance(0);
    expect(runs.started).toEqual([{ key: 'r', scheduledAt: Date.parse('2026-06-01T00:10:00Z'), at: Date.parse('2026-06-01T00:10:00Z') }]);
    await clock.advance('50m');
    expect(runs.started.map((run) => new Date(run.at).toISOString())).toEqual(['2026-06-01T00:10:00.000Z', '2026-06-01T01:00:00.000Z']);
    const [schedule] = await delay.listRecurring('fleet.tick');
    expect(schedule).toMatchObject({ key: 'r', payload: { report: 'sales' }, lastRunAt: new Date('2026-06-01T01:00:00Z'), nextRunAt: new Date('2026-06-01T02:00:00Z') });
    expect(await delay.removeRecurring('fleet.tick', 'r')).toBe(true);
    expect(await delay.removeRecurring('fleet.tick', 'r')).toBe(false);
    await clock.advance('3h');
    expect(runs.started).toHaveLength(2);
    expect(await delay.getRecurring('fleet.tick', 'r')).toBeNull();
  });

  it('a changed recurrence applies from its next occurrence after now; jitter delays occurrences, not their identity', async () => {
    const { clock, runs, delay } = await boot('2026-06-01T00:00:00Z');
    await delay.upsertRecurring('fleet.tick', 'c', { every: '1h' });
    await clock.advance('1h20m');
    await delay.upsertRecurring('fleet.tick', 'c', { every: '15m', jitter: '1m' });
    await clock.advance('40m');
    const scheduled = runs.started.map((run) => new Date(run.scheduledAt).toISOString().slice(11, 16));
    // 01:00 (old), then 01:30, 01:45, 02:00 (new): 01:15 is before the change and does not fire late.
    expect(scheduled).toEqual(['01:00', '01:30', '01:45']);
    const late = runs.started.slice(1).map((run) => run.at - run.scheduledAt);
    expect(new Set(late).size).toBe(1);
    expect(late[0]).toBeGreaterThanOrEqual(0);
    expect(late[0]).toBeLessThan(60_000);
    await clock.advance('1m');
    expect(runs.started).toHaveLength(4);
  });

  describe('bad input: a typed error, and nothing changes', () => {
    it.each([
      [{ cron: '0 25 * * *' }, 'ERR_DELAY_INVALID_CRON_EXPRESSION'],
      [{ cron: '0 3 * * *', timeZone: 'Europe/Pariss' }, 'ERR_DELAY_UNKNOWN_TIME_ZONE'],
      [{ every: 0 }, 'ERR_DELAY_INVALID_RECURRENCE'],
      [{ every: '50ms' }, 'ERR_DELAY_INVALID_RECURRENCE'],
      [{ every: '1h', missed: 'sometimes' }, 'ERR_DELAY_INVALID_RECURRENCE'],
      [{ every: '1h', overlap: 'queue' }, 'ERR_DELAY_INVALID_RECURRENCE'],
      [{ every: '1h', jitter: '2h' }, 'ERR_DELAY_INVALID_RECURRENCE'],
      [{ cron: '0 3 * * *', timezone: 'Europe/Paris' }, 'ERR_DELAY_INVALID_RECURRENCE'],
    ])('%j is refused with %s', async (options, code) => {
      const clock = new VirtualClock(Date.parse('2026-06-01T00:00:00Z'));
      const app = await apps.boot({ imports: [DelayTestingModule.forRoot({ clock, tickMs: 100 })], providers: [Runs, Fleet] });
      const delay = app.get(DelayService);
      await expect(delay.upsertRecurring('fleet.tick', 'k', options as unknown as RecurringOptions)).rejects.toMatchObject({ code });
      expect(await delay.listRecurring('fleet.tick')).toEqual([]);
      expect(await delay.count('fleet.tick')).toBe(0);
    });

    it('keys, topics and calls that do not fit', async () => {
      const { delay } = await boot('2026-06-01T00:00:00Z', [Fleet, OneOff]);
      await expect(delay.upsertRecurring('fleet.tick', 'a\u001eb', { every: '1h' })).rejects.toMatchObject({ code: 'ERR_DELAY_INVALID_KEY' });
      await expect(delay.upsertRecurring('fleet.tick', 'x'.repeat(481), { every: '1h' })).rejects.toMatchObject({ code: 'ERR_DELAY_INVALID_KEY' });
      await expect(delay.upsertRecurring('order.unpaid', 'k', { every: '1h' })).rejects.toMatchObject({ code: 'ERR_DELAY_RECURRING_TOPIC' });
      await expect(delay.schedule('fleet.tick', 'k', { delay: '1m' })).rejects.toMatchObject({ code: 'ERR_DELAY_RECURRING_TOPIC' });
      await expect(delay.scheduleMany('fleet.tick', [{ key: 'k', delay: '1m' }])).rejects.toMatchObject({ code: 'ERR_DELAY_RECURRING_TOPIC' });
      await expect(delay.collect('fleet.tick', 'k', 1, { window: '1m' })).rejects.toMatchObject({ code: 'ERR_DELAY_RECURRING_TOPIC' });
      expect(await delay.count('fleet.tick')).toBe(0);
      // A key that holds a one-off action is no schedule.
      await delay.schedule('other', 'k', { delay: '1h' });
      await expect(delay.upsertRecurring('other', 'k', { every: '1h' })).rejects.toMatchObject({ code: 'ERR_DELAY_RECURRING_TOPIC' });
      expect(await delay.getRecurring('other', 'k')).toBeNull();
      // A schedule's own key is no one-off action: cancel, reschedule and runNow refuse it and change nothing.
      const made = await delay.upsertRecurring('fleet.tick', 's', { every: '1h' });
      await expect(delay.cancel('fleet.tick', 's')).rejects.toMatchObject({ code: 'ERR_DELAY_RECURRING_TOPIC', message: expect.stringContaining('removeRecurring') });
      await expect(delay.reschedule('fleet.tick', 's', { delay: '1m' })).rejects.toMatchObject({ code: 'ERR_DELAY_RECURRING_TOPIC' });
      await expect(delay.runNow('fleet.tick', 's')).rejects.toMatchObject({ code: 'ERR_DELAY_RECURRING_TOPIC', message: expect.stringContaining('runRecurringNow') });
      expect((await delay.getRecurring('fleet.tick', 's'))?.nextRunAt).toEqual(made.nextRunAt);
      // An occurrence's key may be cancelled: here there is none yet.
      expect(await delay.cancel('fleet.tick', 's\u001e2026-06-01T01:00:00.000Z')).toBe(false);
    });

    it('@Recurring with a bad cron fails bootstrap', async () => {
      const clock = new VirtualClock();
      const app = await apps.create({ imports: [DelayTestingModule.forRoot({ clock })], providers: [BadCron] });
      await expect(app.init()).rejects.toMatchObject({ code: 'ERR_DELAY_INVALID_CRON_EXPRESSION' });
    });
  });
});
