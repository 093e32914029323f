import { Logger } from '@nestjs/common';
import {
  DelayConsumer,
  Delivery,
  DriverUnavailableError,
  DeliveryOutcome,
  DueSpec,
  DueTimeOutOfRangeError,
  ScheduleCommand,
  SystemClock,
  TimerHandle,
  VirtualClock,
  WheelDriver,
} from 'nestjs-delay';

const TOPIC = 'order.unpaid';
const DAY = 86_400_000;

type Handle = (delivery: Delivery) => DeliveryOutcome | Promise<DeliveryOutcome>;

/** A consumer as DelayDispatcher is one: it records each delivery and returns what `handle` says. */
class TestConsumer implements DelayConsumer {
  readonly topics: ReadonlyMap<string, number>;
  readonly deliveries: Delivery[] = [];

  constructor(
    topics: Record<string, number>,
    private readonly onDelivery: Handle = () => ({ kind: 'completed' }),
  ) {
    this.topics = new Map(Object.entries(topics));
  }

  async handle(delivery: Delivery): Promise<DeliveryOutcome> {
    this.deliveries.push(delivery);
    return this.onDelivery(delivery);
  }

  keys(): string[] {
    return this.deliveries.map((delivery) => delivery.key);
  }
}

/** A VirtualClock that knows whether one of its timer callbacks is running, and counts them. */
class ObservedClock extends VirtualClock {
  insideTimer = false;
  timersFired = 0;

  override setTimer(callback: () => void, delayMs: number): TimerHandle {
    return super.setTimer(() => {
      this.timersFired++;
      this.insideTimer = true;
      try {
        callback();
      } finally {
        this.insideTimer = false;
      }
    }, delayMs);
  }
}

interface Deferred {
  promise: Promise<void>;
  resolve: () => void;
}

/** Every deferred is resolved after each test, so a failed assertion cannot leave a handler (and jest) hanging. */
const openDeferreds: Deferred[] = [];

function deferred(): Deferred {
  let resolve: () => void = () => undefined;
  const promise = new Promise<void>((done) => (resolve = done));
  const result = { promise, resolve };
  openDeferreds.push(result);
  return result;
}

function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

const macrotask = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

function command(key: string, due: DueSpec, extra: Partial<ScheduleCommand> = {}): ScheduleCommand {
  return { topic: TOPIC, key, due, payload: undefined, ifExists: 'replace', maxPastMs: DAY, ...extra };
}

describe('WheelDriver', () => {
  let clock: ObservedClock;
  let driver: WheelDriver;
  let t0: number;

  function setUp(tickMs: number): void {
    clock = new ObservedClock();
    t0 = clock.now();
    driver = new WheelDriver({ clock, tickMs });
  }

  afterEach(async () => {
    for (const open of openDeferreds.splice(0)) open.resolve();
    await driver?.close();
  });

  it('refuses new work once closed, rather than accepting what would never fire', async () => {
    setUp(1);
    await driver.schedule(command('before', { delayMs: 1_000 }));
    await driver.close();
    await expect(driver.schedule(command('after', { delayMs: 1_000 }))).rejects.toBeInstanceOf(DriverUnavailableError);
    expect(await driver.count(TOPIC)).toBe(1);
  });

  describe('timing', () => {
    it('delivers actions in due-time order', async () => {
      setUp(1);
      const consumer = new TestConsumer({ [TOPIC]: 1 });
      await driver.start(consumer);
      const next = random(11);
      const delays = Array.from({ length: 500 }, (_, n) => 1 + Math.floor(next() * 3_600_000) * 500 + n);
      for (const [n, delayMs] of delays.entries()) await driver.schedule(command(`k${n}`, { delayMs }));
      await clock.advance('1000h');
      const dueTimes = consumer.deliveries.map((delivery) => delivery.dueAt);
      expect(dueTimes).toHaveLength(delays.length);
      expect(dueTimes).toEqual([...delays].sort((a, b) => a - b).map((delay) => t0 + delay));
    });

    it('fires a 30-day and a 1-year delay on time through the virtual clock', async () => {
      setUp(100);
      const consumer = new TestConsumer({ [TOPIC]: 10 });
      await driver.start(consumer);
      await driver.schedule(command('month', { delayMs: 30 * DAY }));
      await driver.schedule(command('year', { delayMs: 365 * DAY }));

      await clock.advance(30 * DAY - 1);
      expect(consumer.keys()).toEqual([]);
      await clock.advance(1);
      expect(consumer.keys()).toEqual(['month']);
      expect(consumer.deliveries[0].firedAt).toBe(t0 + 30 * DAY);

      await clock.advance(335 * DAY - 1);
      expect(consumer.keys()).toEqual(['month']);
      await clock.advance(1);
      expect(consumer.keys()).toEqual(['month', 'year']);
      expect(consumer.deliveries[1].firedAt).toBe(t0 + 365 * DAY);
      // A year of 100 ms ticks is 315 million ticks; the wheel woke a handful of times.
      expect(clock.timersFired).toBeLessThan(50);
    });

    it('works past the 2^31 ms limit of setTimeout', async () => {
      setUp(100);
      const consumer = new TestConsumer({ [TOPIC]: 1 });
      await driver.start(consumer);
      const delayMs = 2 ** 31 + 5_000;
      await driver.schedule(command('far', { delayMs }));
      await clock.advance(2 ** 31);
      expect(consumer.keys()).toEqual([]);
      await clock.advance(5_000 + 100);
      expect(consumer.keys()).toEqual(['far']);
      expect(consumer.deliveries[0].firedAt).toBeGreaterThanOrEqual(t0 + delayMs);
      expect(consumer.deliveries[0].firedAt - (t0 + delayMs)).toBeLessThan(100);
    });

    it('never fires before the due time and at most one tick after it (randomised)', async () => {
      const tickMs = 37;
      setUp(tickMs);
      const consumer = new TestConsumer({ [TOPIC]: 5 });
      await driver.start(consumer);
      const next = random(12);
      const expected = new Map<string, number>();
      for (let round = 0; round < 300; round++) {
        const burst = Math.floor(next() * 5);
        for (let n = 0; n < burst; n++) {
          const key = `r${round}-${n}`;
          // Mostly short delays, some far ones, some re-arms of an earlier key.
          const delayMs = next() < 0.1 ? Math.floor(next() * 30 * DAY) : Math.floor(next() * 5_000);
          const reuse = next() < 0.2 && expected.size > 0 ? [...expected.keys()][Math.floor(next() * expected.size)] : key;
          const { action } = await driver.schedule(command(reuse, { delayMs }));
          expected.set(reuse, action.dueAt);
        }
        await clock.advance(Math.floor(next() * 3_000));
        for (const delivery of consumer.deliveries.splice(0)) {
          expect(delivery.firedAt).toBeGreaterThanOrEqual(delivery.dueAt);
          expect(delivery.firedAt - delivery.dueAt).toBeLessThan(tickMs);
          expect(expected.get(delivery.key)).toBe(delivery.dueAt);
          expected.delete(delivery.key);
        }
      }
      await clock.advance(31 * DAY);
      for (const delivery of consumer.deliveries) {
        expect(delivery.firedAt).toBeGreaterThanOrEqual(delivery.dueAt);
        expect(delivery.firedAt - delivery.dueAt).toBeLessThan(tickMs);
        expect(expected.get(delivery.key)).toBe(delivery.dueAt);
        expected.delete(delivery.key);
      }
      expect(expected.size).toBe(0);
      expect(await driver.count(TOPIC)).toBe(0);
    });

    it('delivers a burst of 10k actions due in one tick, each once', async () => {
      setUp(100);
      const consumer = new TestConsumer({ [TOPIC]: 10 });
      await driver.start(consumer);
      // Due times spread over 1001..1100 ms: all fall in the tick that ends at 1100 ms.
      for (let n = 0; n < 10_000; n++) await driver.schedule(command(`b${n}`, { delayMs: 1_001 + (n % 100) }));
      await clock.advance('1099ms');
      expect(consumer.deliveries.length).toBe(0);
      await clock.advance('1ms');
      expect(new Set(consumer.keys()).size).toBe(10_000);
      expect(consumer.deliveries).toHaveLength(10_000);
      expect(await driver.count(TOPIC)).toBe(0);
    });
  });

  describe('timers', () => {
    it('keeps at most one timer armed, and none once idle', async () => {
      setUp(100);
      const consumer = new TestConsumer({ [TOPIC]: 10 });
      await driver.start(consumer);
      expect(clock.pendingTimers).toBe(0);
      const next = random(13);
      for (let n = 0; n < 1_000; n++) {
        await driver.schedule(command(`k${n}`, { delayMs: Math.floor(next() * 7 * DAY) }));
        expect(clock.pendingTimers).toBeLessThanOrEqual(1);
      }
      await clock.advance('3d');
      expect(clock.pendingTimers).toBeLessThanOrEqual(1);
      await clock.advance('5d');
      expect(consumer.deliveries).toHaveLength(1_000);
      expect(clock.pendingTimers).toBe(0);
    });

    it('does not wake every tick while it waits for a far action', async () => {
      setUp(100);
      await driver.start(new TestConsumer({ [TOPIC]: 1 }));
      await driver.schedule(command('later', { delayMs: 3_600_000 }));
      await clock.advance('1h');
      // 36,000 ticks passed; one wake-up per wheel level at most.
      expect(clock.timersFired).toBeLessThanOrEqual(5);
      expect(clock.timersFired).toBeGreaterThan(0);
    });

    it('never runs a handler inside the timer callback', async () => {
      setUp(10);
      const insideTimer: boolean[] = [];
      const consumer = new TestConsumer({ [TOPIC]: 4 }, () => {
        insideTimer.push(clock.insideTimer);
        return { kind: 'completed' };
      });
      await driver.start(consumer);
      for (let n = 0; n < 50; n++) await driver.schedule(command(`k${n}`, { delayMs: n * 7 }));
      await clock.advance('1s');
      expect(insideTimer).toHaveLength(50);
      expect(insideTimer.every((inside) => !inside)).toBe(true);
      expect(clock.timersFired).toBeGreaterThan(0);
    });

    it('never runs a handler inside schedule(), even for an action already due', async () => {
      setUp(10);
      const consumer = new TestConsumer({ [TOPIC]: 1 });
      await driver.start(consumer);
      await driver.schedule(command('now', { delayMs: 0 }));
      await driver.schedule(command('past', { atMs: t0 - 1_000 }));
      expect(consumer.deliveries).toHaveLength(0);
      await clock.advance(0);
      expect(consumer.keys().sort()).toEqual(['now', 'past']);
    });

    it('schedules through the system clock past 2^31 ms without overflowing setTimeout', async () => {
      jest.useFakeTimers({ doNotFake: ['setImmediate', 'nextTick', 'queueMicrotask'] });
      try {
        const system = new SystemClock();
        const start = system.now();
        const real = new WheelDriver({ clock: system, tickMs: 100 });
        const consumer = new TestConsumer({ [TOPIC]: 1 });
        await real.start(consumer);
        const delayMs = 25 * DAY; // > 2^31 ms (~24.86 days)
        await real.schedule(command('far', { delayMs }));
        jest.advanceTimersByTime(delayMs - 1_000);
        await macrotask();
        expect(consumer.deliveries).toHaveLength(0);
        jest.advanceTimersByTime(1_000);
        await macrotask();
        await macrotask();
        expect(consumer.keys()).toEqual(['far']);
        expect(consumer.deliveries[0].firedAt - start).toBe(delayMs);
        await real.close();
      } finally {
        jest.useRealTimers();
      }
    });
  });

  describe('dispatch', () => {
    it('never runs more than `concurrency` handlers of a topic at once', async () => {
      setUp(1);
      let running = 0;
      let peak = 0;
      const consumer = new TestConsumer({ [TOPIC]: 3, other: 1 }, async () => {
        running++;
        peak = Math.max(peak, running);
        for (let n = 0; n < 3; n++) await macrotask();
        running--;
        return { kind: 'completed' };
      });
      await driver.start(consumer);
      for (let n = 0; n < 40; n++) await driver.schedule(command(`k${n}`, { delayMs: 10 }));
      await clock.advance('10ms');
      expect(consumer.deliveries).toHaveLength(40);
      expect(peak).toBe(3);
    });

    it('leaves actions of a topic it does not consume pending', async () => {
      setUp(1);
      const consumer = new TestConsumer({ [TOPIC]: 1 });
      await driver.start(consumer);
      await driver.schedule(command('x', { delayMs: 10 }, { topic: 'not.mine' }));
      await driver.schedule(command('y', { delayMs: 10 }));
      const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
      await clock.advance('1m');
      expect(consumer.keys()).toEqual(['y']);
      expect(await driver.get('not.mine', 'x')).toMatchObject({ key: 'x', state: 'waiting' });
      expect(warn).toHaveBeenCalledWith(expect.stringContaining('"not.mine"'));
      warn.mockRestore();
    });

    it('reports a running action as running', async () => {
      setUp(1);
      const release = deferred();
      const started = deferred();
      await driver.start(
        new TestConsumer({ [TOPIC]: 1 }, async () => {
          started.resolve();
          await release.promise;
          return { kind: 'completed' };
        }),
      );
      await driver.schedule(command('a', { delayMs: 5 }));
      const advancing = clock.advance('5ms');
      await started.promise;
      expect(await driver.get(TOPIC, 'a')).toMatchObject({ state: 'running', attempt: 1 });
      release.resolve();
      await advancing;
      expect(await driver.get(TOPIC, 'a')).toBeNull();
    });

    it('re-files a retry at now + delay with the next attempt number, then dead-letters', async () => {
      setUp(1);
      const consumer = new TestConsumer({ [TOPIC]: 1 }, (delivery) =>
        delivery.attempt < 3 ? { kind: 'retry', delayMs: 1_000 * delivery.attempt, error: 'boom' } : { kind: 'dead', error: 'gave up' },
      );
      await driver.start(consumer);
      await driver.schedule(command('a', { delayMs: 100 }, { payload: '{"n":1}' }));
      await clock.advance('1m');
      expect(consumer.deliveries.map((d) => [d.attempt, d.firedAt - t0])).toEqual([
        [1, 100],
        [2, 1_100],
        [3, 3_100],
      ]);
      expect(await driver.get(TOPIC, 'a')).toBeNull();
      expect(await driver.listDead(TOPIC, { offset: 0, limit: 10 })).toMatchObject([
        { topic: TOPIC, key: 'a', payload: '{"n":1}', dueAt: t0 + 3_100, attempts: 3, error: 'gave up', diedAt: t0 + 3_100 },
      ]);
      expect(await driver.redrive(TOPIC, 'a')).toBe(true);
      expect(await driver.redrive(TOPIC, 'a')).toBe(false);
      expect(await driver.countDead(TOPIC)).toBe(0);
      expect(await driver.get(TOPIC, 'a')).toMatchObject({ attempt: 1, payload: '{"n":1}' });
    });
  });

  describe('cancel and re-arm', () => {
    beforeEach(() => setUp(1));

    it('replace re-arms with the new due time and payload, and fires once', async () => {
      const consumer = new TestConsumer({ [TOPIC]: 1 });
      await driver.start(consumer);
      expect((await driver.schedule(command('a', { delayMs: 10_000 }, { payload: '"first"' }))).outcome).toBe('created');
      const replaced = await driver.schedule(command('a', { delayMs: 20_000 }, { payload: '"second"' }));
      expect(replaced).toMatchObject({ outcome: 'replaced', action: { dueAt: t0 + 20_000, payload: '"second"' } });
      await clock.advance('19999ms');
      expect(consumer.deliveries).toHaveLength(0);
      await clock.advance('1h');
      expect(consumer.deliveries).toEqual([expect.objectContaining({ key: 'a', payload: '"second"', dueAt: t0 + 20_000, firedAt: t0 + 20_000 })]);
    });

    it('keep leaves an existing action untouched', async () => {
      const consumer = new TestConsumer({ [TOPIC]: 1 });
      await driver.start(consumer);
      await driver.schedule(command('a', { delayMs: 10_000 }, { payload: '"first"' }));
      const kept = await driver.schedule(command('a', { delayMs: 1_000 }, { payload: '"second"', ifExists: 'keep' }));
      expect(kept).toMatchObject({ outcome: 'kept', action: { dueAt: t0 + 10_000, payload: '"first"' } });
      await clock.advance('1h');
      expect(consumer.deliveries).toEqual([expect.objectContaining({ key: 'a', payload: '"first"', firedAt: t0 + 10_000 })]);
      // Keep on a key that does not exist creates it.
      expect((await driver.schedule(command('b', { delayMs: 1 }, { ifExists: 'keep' }))).outcome).toBe('created');
    });

    it('reschedule moves the action and keeps its payload; null when there is none', async () => {
      const consumer = new TestConsumer({ [TOPIC]: 1 });
      await driver.start(consumer);
      await driver.schedule(command('a', { delayMs: 60_000 }, { payload: '{"total":5}' }));
      const moved = await driver.reschedule({ topic: TOPIC, key: 'a', due: { delayMs: 5_000 }, maxPastMs: DAY });
      expect(moved).toMatchObject({ dueAt: t0 + 5_000, payload: '{"total":5}' });
      expect(await driver.reschedule({ topic: TOPIC, key: 'missing', due: { delayMs: 5_000 }, maxPastMs: DAY })).toBeNull();
      await clock.advance('5s');
      expect(consumer.deliveries).toEqual([expect.objectContaining({ key: 'a', payload: '{"total":5}', firedAt: t0 + 5_000 })]);
      await clock.advance('1h');
      expect(consumer.deliveries).toHaveLength(1);
    });

    it('cancel removes a waiting action for good; a second cancel finds nothing', async () => {
      const consumer = new TestConsumer({ [TOPIC]: 1 });
      await driver.start(consumer);
      await driver.schedule(command('a', { delayMs: 1_000 }));
      await driver.schedule(command('b', { delayMs: 1_000 }));
      expect(await driver.cancel(TOPIC, 'a')).toBe(true);
      expect(await driver.cancel(TOPIC, 'a')).toBe(false);
      expect(await driver.cancel('never.seen', 'a')).toBe(false);
      await clock.advance('1h');
      expect(consumer.keys()).toEqual(['b']);
    });

    it('cancel removes an action that is due but waiting for a free handler slot', async () => {
      const release = deferred();
      const started = deferred();
      const consumer = new TestConsumer({ [TOPIC]: 1 }, async (delivery) => {
        if (delivery.key === 'blocker') {
          started.resolve();
          await release.promise;
        }
        return { kind: 'completed' };
      });
      await driver.start(consumer);
      await driver.schedule(command('blocker', { delayMs: 10 }));
      const advancing = clock.advance('10ms');
      await started.promise;
      // Both are due at once and queue behind the blocker (concurrency 1).
      await driver.schedule(command('queued', { delayMs: 0 }));
      await driver.schedule(command('after', { delayMs: 0 }));
      await macrotask();
      expect(await driver.get(TOPIC, 'queued')).toMatchObject({ state: 'waiting' });
      expect(await driver.cancel(TOPIC, 'queued')).toBe(true);
      release.resolve();
      await advancing;
      expect(consumer.keys()).toEqual(['blocker', 'after']);
    });

    it('ignores the late outcome of a run whose action was re-armed while it ran', async () => {
      const release = deferred();
      const started = deferred();
      const consumer = new TestConsumer({ [TOPIC]: 1 }, async (delivery) => {
        if (delivery.attempt === 1 && delivery.payload === '"v1"') {
          started.resolve();
          await release.promise;
        }
        return { kind: 'completed' };
      });
      await driver.start(consumer);
      await driver.schedule(command('a', { delayMs: 10 }, { payload: '"v1"' }));
      const advancing = clock.advance('10ms');
      await started.promise;
      await driver.schedule(command('a', { delayMs: 1_000 }, { payload: '"v2"' }));
      release.resolve();
      await advancing;
      // The completed v1 run did not delete the v2 arming.
      expect(await driver.get(TOPIC, 'a')).toMatchObject({ payload: '"v2"', dueAt: t0 + 10 + 1_000, state: 'waiting' });
      await clock.advance('1s');
      expect(consumer.deliveries.map((d) => d.payload)).toEqual(['"v1"', '"v2"']);
    });

    it('never retries a run that was cancelled while it ran', async () => {
      const release = deferred();
      const started = deferred();
      const consumer = new TestConsumer({ [TOPIC]: 1 }, async () => {
        started.resolve();
        await release.promise;
        return { kind: 'retry', delayMs: 10, error: 'boom' };
      });
      await driver.start(consumer);
      await driver.schedule(command('a', { delayMs: 10 }));
      const advancing = clock.advance('10ms');
      await started.promise;
      expect(await driver.cancel(TOPIC, 'a')).toBe(true);
      release.resolve();
      await advancing;
      await clock.advance('1h');
      expect(consumer.deliveries).toHaveLength(1);
      expect(await driver.get(TOPIC, 'a')).toBeNull();
    });
  });

  describe('queries', () => {
    beforeEach(() => setUp(1));

    it('fills a page of schedules past a tick cancelled as a plain action, rather than ending the listing there', async () => {
      for (const key of ['a', 'b', 'c', 'd', 'e']) {
        await driver.advanceSeries({ topic: TOPIC, key, expect: { absent: true }, occurrences: [], overlap: 'skip', next: { due: { delayMs: 60_000 }, payload: `@state-${key}` } });
      }
      // A producer that does not know the topic is recurring cancels a tick's key as any action's.
      expect(driver.cancelNow(TOPIC, 'b')).toBe(true);
      const page = async (after: string | null, limit: number): Promise<string[]> => (await driver.listSeries(TOPIC, { after, limit })).map((a) => a.key);
      expect(await page(null, 2)).toEqual(['a', 'c']);
      expect(await page('c', 2)).toEqual(['d', 'e']);
      expect(await page('e', 2)).toEqual([]);
    });

    it('lists by due time then key, paginated, and counts per topic', async () => {
      for (const [key, delayMs] of [
        ['c', 300],
        ['a', 100],
        ['e', 500],
        ['b', 300],
        ['d', 200],
      ] as const) {
        await driver.schedule(command(key, { delayMs }));
      }
      await driver.schedule(command('z', { delayMs: 1 }, { topic: 'other' }));
      const keys = async (offset: number, limit: number): Promise<string[]> => (await driver.list(TOPIC, { offset, limit })).map((a) => a.key);
      expect(await keys(0, 10)).toEqual(['a', 'd', 'b', 'c', 'e']);
      expect(await keys(0, 2)).toEqual(['a', 'd']);
      expect(await keys(2, 2)).toEqual(['b', 'c']);
      expect(await keys(4, 2)).toEqual(['e']);
      expect(await keys(5, 2)).toEqual([]);
      expect(await driver.count(TOPIC)).toBe(5);
      expect(await driver.count('other')).toBe(1);
      expect(await driver.count('unknown')).toBe(0);
      expect(await driver.list('unknown', { offset: 0, limit: 10 })).toEqual([]);
    });

    it('refuses a due time beyond its horizon or too far in the past, and changes nothing', async () => {
      await driver.schedule(command('a', { delayMs: 1_000 }, { payload: '1' }));
      const before = await driver.get(TOPIC, 'a');
      await expect(driver.schedule(command('a', { delayMs: driver.horizonMs + 1 }))).rejects.toBeInstanceOf(DueTimeOutOfRangeError);
      await expect(driver.schedule(command('a', { atMs: t0 - DAY - 1 }))).rejects.toBeInstanceOf(DueTimeOutOfRangeError);
      await expect(driver.reschedule({ topic: TOPIC, key: 'a', due: { atMs: t0 - DAY - 1 }, maxPastMs: DAY })).rejects.toBeInstanceOf(DueTimeOutOfRangeError);
      expect(await driver.get(TOPIC, 'a')).toEqual(before);
      expect(await driver.count(TOPIC)).toBe(1);
    });
  });
});
