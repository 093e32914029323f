import { Global, Injectable, Module } from '@nestjs/common';
import {
  DELAY_TRACE_PROPAGATOR,
  DelayContext,
  DelayEvent,
  DelayModule,
  DelayService,
  DelayTracePropagator,
  InvalidKeyError,
  InvalidTopicError,
  OnDelayExpired,
  TopicSummary,
  VirtualClock,
} from 'nestjs-delay';
import { useApps } from '../wheel/support/apps';

const TOPIC = 'ops.serial';
const OTHER = 'ops.other';

/** Records what ran; a run can be told to do something while it runs (pause its topic, read the topics, ...). */
@Injectable()
class Recorder {
  readonly runs: Array<{ topic: string; key: string; dueAt: number; firedAt: number; trace?: string }> = [];
  readonly during = new Map<string, () => Promise<void>>();

  @OnDelayExpired(TOPIC, { concurrency: 1, attempts: 1 })
  async serial(context: DelayContext): Promise<void> {
    await this.record(context);
  }

  @OnDelayExpired(OTHER, { attempts: 1 })
  async other(context: DelayContext): Promise<void> {
    await this.record(context);
    if (context.key.startsWith('fail')) throw new Error('failed on purpose');
  }

  private async record({ topic, key, dueAt, firedAt, trace }: DelayContext): Promise<void> {
    this.runs.push({ topic, key, dueAt: dueAt.getTime(), firedAt: firedAt.getTime(), ...(trace !== undefined ? { trace } : {}) });
    await this.during.get(key)?.();
  }
}

describe('pause, resume, topics, runNow and health (wheel driver)', () => {
  const apps = useApps();
  let clock: VirtualClock;
  let delay: DelayService;
  let recorder: Recorder;
  let events: DelayEvent[];
  let start: number;

  beforeEach(async () => {
    clock = new VirtualClock();
    start = clock.now();
    const app = await apps.boot({ imports: [DelayModule.forRoot({ clock, driver: { type: 'wheel', tickMs: 1 } })], providers: [Recorder] });
    delay = app.get(DelayService);
    recorder = app.get(Recorder);
    events = [];
    delay.events$.subscribe((event) => events.push(event));
  });

  it('pause lets the running handler finish and starts nothing new; resume runs what waited, in due order', async () => {
    // The first run pauses its own topic: it still completes.
    recorder.during.set('k0', () => delay.pause(TOPIC));
    await delay.schedule(TOPIC, 'k0', { delay: '1s' });
    await delay.schedule(TOPIC, 'k3', { delay: '3s' });
    await delay.schedule(TOPIC, 'k2b', { delay: '2s' });
    await delay.schedule(TOPIC, 'k2a', { delay: '2s' });
    await delay.schedule(TOPIC, 'k1', { delay: '1500ms' });
    await delay.schedule(OTHER, 'x', { delay: '2s' });

    await clock.advance('10s');
    expect(recorder.runs.map((run) => run.key)).toEqual(['k0', 'x']);
    expect(await delay.get(TOPIC, 'k0')).toBeNull();
    expect(await delay.isPaused(TOPIC)).toBe(true);
    expect(await delay.isPaused(OTHER)).toBe(false);
    expect(await delay.get(TOPIC, 'k1')).toMatchObject({ state: 'waiting', paused: true });
    const page = await delay.list(TOPIC);
    expect(page.total).toBe(4);
    expect(page.items.every((item) => item.paused)).toBe(true);
    // Scheduling goes on while paused.
    await delay.schedule(TOPIC, 'k4', { delay: 0 });
    expect(await delay.count(TOPIC)).toBe(5);

    await delay.resume(TOPIC);
    await clock.advance(0);
    expect(recorder.runs.map((run) => run.key)).toEqual(['k0', 'x', 'k1', 'k2a', 'k2b', 'k3', 'k4']);
    // They ran at resume (10 s), not at their due times.
    expect(recorder.runs.slice(2).every((run) => run.firedAt === start + 10_000)).toBe(true);
    expect(await delay.isPaused(TOPIC)).toBe(false);
    expect(events.filter((event) => event.type === 'paused' || event.type === 'resumed').map((event) => [event.type, event.topic, event.key])).toEqual([
      ['paused', TOPIC, ''],
      ['resumed', TOPIC, ''],
    ]);
  });

  it('pausing twice, or resuming a topic that is not paused, changes nothing and reports no event', async () => {
    await delay.resume(TOPIC);
    await delay.pause(TOPIC);
    await delay.pause(TOPIC);
    await delay.resume(TOPIC);
    await delay.resume(TOPIC);
    expect(events.map((event) => event.type)).toEqual(['paused', 'resumed']);
    await expect(delay.pause('bad topic!')).rejects.toBeInstanceOf(InvalidTopicError);
  });

  it('topics lists every topic with waiting, running or dead actions, or paused, with counts', async () => {
    expect(await delay.topics()).toEqual([]);
    let seen: TopicSummary[] = [];
    recorder.during.set('r1', async () => {
      seen = await delay.topics();
    });
    await delay.schedule(TOPIC, 'r1', { delay: '1s' });
    await delay.schedule(TOPIC, 'w1', { delay: '1h' });
    await delay.schedule(OTHER, 'fail-1', { delay: '1s' });
    await delay.schedule(OTHER, 'w2', { delay: '1h' });
    await delay.pause('ops.idle');
    await clock.advance('2s');

    // Read while r1 ran: r1 running, w1 waiting.
    expect(seen.find((summary) => summary.topic === TOPIC)).toEqual({ topic: TOPIC, waiting: 1, running: 1, dead: 0, paused: false });
    expect(await delay.topics()).toEqual([
      { topic: 'ops.idle', waiting: 0, running: 0, dead: 0, paused: true },
      { topic: OTHER, waiting: 1, running: 0, dead: 1, paused: false },
      { topic: TOPIC, waiting: 1, running: 0, dead: 0, paused: false },
    ]);
    await delay.cancel(TOPIC, 'w1');
    await delay.resume('ops.idle');
    expect((await delay.topics()).map((summary) => summary.topic)).toEqual([OTHER]);
  });

  it('a running action cancelled meanwhile no longer counts as running', async () => {
    let seen: TopicSummary[] = [];
    recorder.during.set('c1', async () => {
      await delay.cancel(TOPIC, 'c1');
      seen = await delay.topics();
    });
    await delay.schedule(TOPIC, 'c1', { delay: '1s' });
    await delay.schedule(TOPIC, 'c2', { delay: '1h' });
    await clock.advance('1s');
    expect(seen).toEqual([{ topic: TOPIC, waiting: 1, running: 0, dead: 0, paused: false }]);
  });

  it('runNow makes a waiting action due now, keeping its payload; false when there is none or it is running', async () => {
    let whileRunning: boolean | undefined;
    recorder.during.set('n1', async () => {
      whileRunning = await delay.runNow(TOPIC, 'n1');
    });
    await delay.schedule(TOPIC, 'n1', { delay: '1h', payload: { order: 1 } });
    await clock.advance('1m');
    expect(recorder.runs).toEqual([]);

    expect(await delay.runNow(TOPIC, 'n1')).toBe(true);
    expect(await delay.get(TOPIC, 'n1')).toMatchObject({ dueAt: new Date(start + 60_000), payload: { order: 1 } });
    await clock.advance(0);
    expect(recorder.runs.map((run) => [run.key, run.dueAt - start, run.firedAt - start])).toEqual([['n1', 60_000, 60_000]]);
    expect(whileRunning).toBe(false);
    expect(await delay.runNow(TOPIC, 'n1')).toBe(false);
    expect(await delay.runNow(TOPIC, 'nobody')).toBe(false);
    expect(events.filter((event) => event.type === 'rescheduled').map((event) => event.key)).toEqual(['n1']);
    await expect(delay.runNow(TOPIC, '')).rejects.toBeInstanceOf(InvalidKeyError);
  });

  it('runNow on a paused topic makes the action due, and it runs on resume', async () => {
    await delay.pause(TOPIC);
    await delay.schedule(TOPIC, 'p1', { delay: '1h' });
    expect(await delay.runNow(TOPIC, 'p1')).toBe(true);
    await clock.advance('1m');
    expect(recorder.runs).toEqual([]);
    await delay.resume(TOPIC);
    await clock.advance(0);
    expect(recorder.runs.map((run) => run.key)).toEqual(['p1']);
  });

  it('health reports the wheel up, its consuming topics alive, and the lag of a paused topic', async () => {
    expect(await delay.health()).toEqual({
      driver: 'wheel',
      up: true,
      roundTripMs: 0,
      topics: [
        { topic: TOPIC, consuming: true, consumerAlive: true, lagMs: 0, paused: false },
        { topic: OTHER, consuming: true, consumerAlive: true, lagMs: 0, paused: false },
      ],
    });
    await delay.pause(TOPIC);
    await delay.schedule(TOPIC, 'l1', { delay: '1s' });
    await delay.schedule(TOPIC, 'l2', { delay: '2s' });
    await delay.schedule('ops.unconsumed', 'u1', { delay: '1s' });
    await clock.advance('1m');
    const health = await delay.health();
    // l1 has waited since it fell due, 59 s ago.
    expect(health.topics.find((topic) => topic.topic === TOPIC)).toEqual({ topic: TOPIC, consuming: true, consumerAlive: true, lagMs: 59_000, paused: true });
    expect(health.topics.find((topic) => topic.topic === 'ops.unconsumed')).toEqual({
      topic: 'ops.unconsumed',
      consuming: false,
      consumerAlive: false,
      lagMs: 59_000,
      paused: false,
    });
    await delay.resume(TOPIC);
    await clock.advance(0);
    expect((await delay.health()).topics.find((topic) => topic.topic === TOPIC)?.lagMs).toBe(0);
  });
});

const TRACE = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

/** Stands in for the telemetry module: a global provider of the propagator. */
@Injectable()
class FixedPropagator implements DelayTracePropagator {
  current: string | undefined = TRACE;
  fail = false;

  inject(): string | undefined {
    if (this.fail) throw new Error('propagator broke');
    return this.current;
  }
}

@Global()
@Module({ providers: [FixedPropagator, { provide: DELAY_TRACE_PROPAGATOR, useExisting: FixedPropagator }], exports: [DELAY_TRACE_PROPAGATOR, FixedPropagator] })
class TracingModule {}

describe('trace carry (wheel driver)', () => {
  const apps = useApps();

  it('hands the handler the trace context of the code that scheduled or collected the action', async () => {
    const clock = new VirtualClock();
    const app = await apps.boot({ imports: [TracingModule, DelayModule.forRoot({ clock, driver: { type: 'wheel', tickMs: 1 } })], providers: [Recorder] });
    const delay = app.get(DelayService);
    const recorder = app.get(Recorder);
    const propagator = app.get(FixedPropagator);

    await delay.schedule(TOPIC, 't1', { delay: '1s' });
    await delay.schedule(TOPIC, 't2', { delay: '1s' });
    await delay.reschedule(TOPIC, 't2', { delay: '2s' });
    await delay.collect(OTHER, 'b1', { n: 1 }, { window: '1s' });
    propagator.current = undefined;
    await delay.schedule(TOPIC, 't3', { delay: '1s' });
    await delay.collect(OTHER, 'b1', { n: 2 }, { window: '1s' });
    propagator.fail = true;
    await delay.schedule(TOPIC, 't4', { delay: '1s' });
    await clock.advance('5s');

    const traceOf = (key: string): string | undefined => recorder.runs.find((run) => run.key === key)?.trace;
    expect(recorder.runs).toHaveLength(5);
    expect(traceOf('t1')).toBe(TRACE);
    // A rescheduled action keeps the trace it was scheduled with; a batch, its first item's.
    expect(traceOf('t2')).toBe(TRACE);
    expect(traceOf('b1')).toBe(TRACE);
    expect(traceOf('t3')).toBeUndefined();
    // A propagator that throws costs the trace, not the schedule.
    expect(traceOf('t4')).toBeUndefined();
  });

  it('carries nothing without a propagator', async () => {
    const clock = new VirtualClock();
    const app = await apps.boot({ imports: [DelayModule.forRoot({ clock, driver: { type: 'wheel', tickMs: 1 } })], providers: [Recorder] });
    await app.get(DelayService).schedule(TOPIC, 't1', { delay: '1s' });
    await clock.advance('1s');
    expect(app.get(Recorder).runs).toEqual([{ topic: TOPIC, key: 't1', dueAt: clock.now(), firedAt: clock.now() }]);
  });
});
