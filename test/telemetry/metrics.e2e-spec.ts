import { Injectable, INestApplication, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { DelayContext, DelayService, OnDelayExpired, OnRecurring } from 'nestjs-delay';
import { DelayTelemetryModule } from 'nestjs-delay/telemetry';
import { DelayTestingModule, VirtualClock } from 'nestjs-delay/testing';
import { TestOpenTelemetry } from './support/otel-sdk';

const TOPIC = 'invoice.remind';
const OTHER = 'export.run';
const HUNG = 'report.build';

/** b fails its first attempt only; c fails every attempt; the rest succeed. */
@Injectable()
class ScriptedHandler {
  @OnDelayExpired(TOPIC, { attempts: 2, backoff: '1s' })
  remind({ key, attempt }: DelayContext): void {
    if (key === 'c' || (key === 'b' && attempt === 1)) throw new Error(`${key} failed on attempt ${attempt}`);
  }

  @OnDelayExpired(OTHER)
  run(): void {}

  @OnRecurring('digest.hourly')
  digest(): void {}

  /** Never settles by itself: only its timeout ends the run. */
  @OnDelayExpired(HUNG, { attempts: 1, timeout: 50 })
  hang({ signal }: DelayContext): Promise<void> {
    return new Promise((resolve) => signal.addEventListener('abort', () => setTimeout(resolve, 10_000).unref()));
  }
}

describe('metrics (OpenTelemetry SDK, in-memory exporter)', () => {
  let sdk: TestOpenTelemetry;
  let app: INestApplication;
  let clock: VirtualClock;
  let delay: DelayService;

  beforeEach(async () => {
    sdk = TestOpenTelemetry.register();
    clock = new VirtualClock();
    @Module({ imports: [DelayTestingModule.forRoot({ clock }), DelayTelemetryModule.forRoot()], providers: [ScriptedHandler] })
    class MetricsTestModule {}
    const moduleRef = await Test.createTestingModule({ imports: [MetricsTestModule] }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    delay = app.get(DelayService);
  });

  afterEach(async () => {
    await app.close();
    await sdk.dispose();
  });

  it('counts occurrences of recurring schedules: created and missed', async () => {
    const start = Math.ceil(clock.now() / 3_600_000) * 3_600_000;
    await clock.advanceTo(start + 1_800_000);
    await delay.upsertRecurring('digest.hourly', 'all', { every: '1h', missed: 'all', overlap: 'allow' });
    await delay.upsertRecurring('digest.hourly', 'skip', { every: '1h', missed: 'skip' });
    await clock.advance('1h'); // one each
    await delay.pause('digest.hourly');
    await clock.advance('3h'); // three due while paused
    await delay.resume('digest.hourly');
    await clock.advance(0); // 'all' runs the three, 'skip' misses them
    const of = { 'delay.topic': 'digest.hourly' };
    expect({ fired: await sdk.value('delay.recurring.fired', of), missed: await sdk.value('delay.recurring.missed', of) }).toEqual({ fired: 5, missed: 3 });
  });

  it('counts a scripted schedule / cancel / fail / complete sequence exactly, per topic', async () => {
    for (const key of ['a', 'b', 'c', 'd']) await delay.schedule(TOPIC, key, { delay: '1m' });
    await delay.schedule(TOPIC, 'later', { delay: '1h' });
    await delay.schedule(OTHER, 'x', { delay: '1m' });
    await delay.cancel(TOPIC, 'd');
    await delay.cancel(TOPIC, 'no-such-key');
    await clock.advance('1m'); // a completes; b and c fail their first attempt and are retried in 1s
    await clock.advance('1s'); // b completes; c fails its last attempt and is dead

    const of = { 'delay.topic': TOPIC };
    const counts = {
      scheduled: await sdk.value('delay.actions.scheduled', of),
      cancelled: await sdk.value('delay.actions.cancelled', of),
      fired: await sdk.value('delay.actions.fired', of),
      completed: await sdk.value('delay.actions.completed', of),
      failed: await sdk.value('delay.actions.failed', of),
      retried: await sdk.value('delay.actions.retried', of),
      dead: await sdk.value('delay.actions.dead', of),
    };
    expect(counts).toEqual({ scheduled: 5, cancelled: 1, fired: 5, completed: 2, failed: 3, retried: 2, dead: 1 });
    // The other topic is counted apart.
    expect(await sdk.value('delay.actions.scheduled', { 'delay.topic': OTHER })).toBe(1);
    expect(await sdk.value('delay.actions.completed', { 'delay.topic': OTHER })).toBe(1);

    // Histograms: one lateness and one duration per run, split by outcome.
    expect(await sdk.count('delay.action.lateness', of)).toBe(5);
    expect(await sdk.count('delay.handler.duration', { ...of, 'delay.outcome': 'completed' })).toBe(2);
    expect(await sdk.count('delay.handler.duration', { ...of, 'delay.outcome': 'failed' })).toBe(3);

    // Gauges are read from the store: one waiting (later), none running, one dead (c).
    expect(await sdk.value('delay.store.waiting', of)).toBe(1);
    expect(await sdk.value('delay.store.running', of)).toBe(0);
    expect(await sdk.value('delay.store.dead', of)).toBe(1);
    expect(await sdk.value('delay.topic.paused', of)).toBe(0);
    await delay.pause(TOPIC);
    expect(await sdk.value('delay.topic.paused', of)).toBe(1);
    // A redrive moves the gauge at once: the store is the source, not this process's counters.
    await delay.redrive(TOPIC, 'c');
    expect(await sdk.value('delay.store.dead', of)).toBe(0);
    expect(await sdk.value('delay.store.waiting', of)).toBe(2);
    // The counter of deaths is a count of events: it stays at 1.
    expect(await sdk.value('delay.actions.dead', of)).toBe(1);
    expect(await sdk.value('delay.actions.redriven', of)).toBe(1);
  });

  it('counts a run that timed out as timed out, failed and dead, with its duration', async () => {
    await delay.schedule(HUNG, 'r1', { delay: '1m' });
    await clock.advance('1m'); // returns once the run's real 50 ms timeout has struck
    const of = { 'delay.topic': HUNG };
    expect(await sdk.value('delay.actions.timed_out', of)).toBe(1);
    expect(await sdk.value('delay.actions.failed', of)).toBe(1);
    expect(await sdk.value('delay.actions.dead', of)).toBe(1);
    expect(await sdk.value('delay.actions.completed', of)).toBe(0);
    const [duration] = (await sdk.points('delay.handler.duration')).filter((point) => point.attributes['delay.topic'] === HUNG);
    expect(duration && typeof duration.value !== 'number' ? duration.value.count : 0).toBe(1);
    expect(duration && typeof duration.value !== 'number' ? duration.value.sum : 0).toBeGreaterThanOrEqual(0.045);
  });

  it('records lateness as fired minus due, in seconds', async () => {
    await delay.schedule(TOPIC, 'a', { delay: '1m' });
    await delay.pause(TOPIC);
    await clock.advance('1m');
    await clock.advance('30s'); // due 30 s ago, held by the pause
    await delay.resume(TOPIC);
    await clock.advance(0);
    const [point] = (await sdk.points('delay.action.lateness')).filter((candidate) => candidate.attributes['delay.topic'] === TOPIC);
    expect(point && typeof point.value !== 'number' ? { count: point.value.count, sum: point.value.sum } : undefined).toEqual({ count: 1, sum: 30 });
  });
});
