// The wheel benchmark: native setTimeout (with a different random delay per
// timer, and with one fixed delay), an indexed binary heap and nestjs-delay's
// WheelDriver (bare, through DelayService with random delays and with one
// fixed delay, and through DelayService with one events$ subscriber), side
// by side in one process, at 10k, 100k and 1M pending actions.
//
//   npm run bench:wheel
//   BENCH_WHEEL_QUICK=1 npm run bench:wheel   (a smoke run: 2k and 10k, one round each; figures not comparable)
//   BENCH_SIZES=10000,100000 npm run bench:wheel   (a quicker run)
//   BENCH_ONLY=timeout,service npm run bench:wheel   (some rows only)
//   BENCH_RESULTS_DIR=<dir> ...   (the headline figures to <dir>/wheel.json, not bench/results)
//
// A run whose largest size is 1M, not QUICK, writes its headline figures at
// 1M into bench/results/wheel.json (bench/results.ts); others leave it as it was.
//
// bench/wheel-scale.bench.ts measures memory at larger sizes and dispatch.
//
// Figures: heap + array-buffer bytes per pending action, schedule and cancel
// ns/op, and a burst of N actions due at one moment (callbacks per second,
// lateness). See BENCHMARKS.md for how to read them.
import 'reflect-metadata';
import { Injectable, Module } from '@nestjs/common';
import type { DynamicModule, INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { availableParallelism, cpus, totalmem } from 'node:os';
import { relative } from 'node:path';
import { performance } from 'node:perf_hooks';
import { DelayModule, DelayService, OnDelayExpired, SystemClock, WheelDriver } from 'nestjs-delay';
import type { DeliveryOutcome, TimerHandle } from 'nestjs-delay';
import { HeapTimer } from './indexed-heap';
import { recordResults } from './results';
import type { RatioRow, ResultsUpdate } from './results';
import { collectGarbage, fmt, libraryUnderTest, loadAverage, markdownTable, median, quantile, randomDelays, readMemory, settle, shuffle, sizeLabel, xorshift32 } from './support';

const TOPIC = 'bench.action';
const TICK_MS = 100;
/** Handlers at once for the topic: the library's default for a handler. */
const CONCURRENCY = 10;
const MAX_PAST_MS = 86_400_000;
const SEED = 20_240_601;
const MIN_DELAY_MS = 1_000;
const MAX_DELAY_MS = 3_600_000;
const QUICK = process.env.BENCH_WHEEL_QUICK === '1';
const DEFAULT_SIZES = QUICK ? [2_000, 10_000] : [10_000, 100_000, 1_000_000];
/** The size of the headline figures in bench/results/wheel.json. */
const HEADLINE_SIZE = 1_000_000;
/** "Flat" means the 1M per-op cost is at most this multiple of the 10k one, in wall and in CPU time. */
const FLAT_LIMIT = 1.5;
/** Timer jitter allowed on top of one tick before a burst counts as late. */
const JITTER_MS = 5;

// ---- the contenders -----------------------------------------------------

interface Instance {
  /** Arms keys[0..count) with delays[i] ms, replacing an existing arming of the key. */
  scheduleAll(keys: readonly string[], delays: Float64Array, count: number): Promise<void>;
  /** Cancels keys[0..count) by key. */
  cancelAll(keys: readonly string[], count: number): Promise<void>;
  /** Arms keys[0..count) all due at `dueAtMs` (epoch ms), that is `delayMs` from now. */
  scheduleBurst(keys: readonly string[], count: number, dueAtMs: number, delayMs: number): Promise<void>;
  pending(): Promise<number>;
  close(): Promise<void>;
  /** For the wheel: [start, end, start, end, ...] of its timer callbacks (performance.now() ms). */
  timerRuns?(): number[];
}

/**
 * The system clock, timing each callback of the wheel's one timer: that is
 * where the driver moves due actions to its ready queues (user code never
 * runs there). Lets the burst tell the wheel's own work from its tick.
 */
class TimedClock extends SystemClock {
  readonly runs: number[] = [];

  override setTimer(callback: () => void, delayMs: number): TimerHandle {
    return super.setTimer(() => {
      const start = performance.now();
      callback();
      this.runs.push(start, performance.now());
    }, delayMs);
  }
}

type ContenderId = 'timeout' | 'timeout-fixed' | 'heap' | 'wheel' | 'service' | 'service-fixed' | 'service-events' | 'map';

interface Contender {
  readonly id: ContenderId;
  readonly label: string;
  /** False for the Map floor (it keeps keys, not timers), and for the variants whose burst would repeat another row's. */
  readonly fires: boolean;
  create(onFire: () => void): Promise<Instance>;
}

/** One delay for every timer: the common case (every unpaid order waits 30 minutes), and setTimeout's best. */
const FIXED_DELAY_MS = 1_800_000;

/**
 * A Map<key, Timeout>, as a user would write it; re-arming clears the old
 * timer first. With `fixedDelayMs`, every timer gets that delay: Node keeps
 * one list per distinct delay, so one delay is setTimeout's cheapest case,
 * and a different delay per timer its dearest.
 */
class TimeoutInstance implements Instance {
  private readonly timers = new Map<string, NodeJS.Timeout>();

  constructor(
    private readonly onFire: () => void,
    private readonly fixedDelayMs?: number,
  ) {}

  async scheduleAll(keys: readonly string[], delays: Float64Array, count: number): Promise<void> {
    const fixed = this.fixedDelayMs;
    if (fixed !== undefined) for (let i = 0; i < count; i++) this.arm(keys[i], fixed);
    else for (let i = 0; i < count; i++) this.arm(keys[i], delays[i]);
  }

  async cancelAll(keys: readonly string[], count: number): Promise<void> {
    const { timers } = this;
    for (let i = 0; i < count; i++) {
      const key = keys[i];
      const timer = timers.get(key);
      if (timer !== undefined) {
        clearTimeout(timer);
        timers.delete(key);
      }
    }
  }

  async scheduleBurst(keys: readonly string[], count: number, _dueAtMs: number, delayMs: number): Promise<void> {
    for (let i = 0; i < count; i++) this.arm(keys[i], delayMs);
  }

  async pending(): Promise<number> {
    return this.timers.size;
  }

  async close(): Promise<void> {
    for (const timer of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
  }

  private arm(key: string, delayMs: number): void {
    const { timers } = this;
    const existing = timers.get(key);
    if (existing !== undefined) clearTimeout(existing);
    timers.set(
      key,
      setTimeout(() => {
        timers.delete(key);
        this.onFire();
      }, delayMs),
    );
  }
}

class HeapInstance implements Instance {
  private readonly timer: HeapTimer;

  constructor(onFire: () => void) {
    this.timer = new HeapTimer(() => onFire());
  }

  async scheduleAll(keys: readonly string[], delays: Float64Array, count: number): Promise<void> {
    const { timer } = this;
    for (let i = 0; i < count; i++) timer.schedule(keys[i], delays[i]);
  }

  async cancelAll(keys: readonly string[], count: number): Promise<void> {
    const { timer } = this;
    for (let i = 0; i < count; i++) timer.cancel(keys[i]);
  }

  async scheduleBurst(keys: readonly string[], count: number, dueAtMs: number): Promise<void> {
    const { timer } = this;
    for (let i = 0; i < count; i++) timer.scheduleAt(keys[i], dueAtMs);
  }

  async pending(): Promise<number> {
    return this.timer.size;
  }

  async close(): Promise<void> {
    this.timer.close();
  }
}

/** The driver on its own, awaited call by call as DelayService awaits it. */
class WheelInstance implements Instance {
  private constructor(
    private readonly driver: WheelDriver,
    private readonly clock: TimedClock,
  ) {}

  static async create(onFire: () => void): Promise<WheelInstance> {
    const clock = new TimedClock();
    const driver = new WheelDriver({ tickMs: TICK_MS, clock });
    await driver.start({
      topics: new Map([[TOPIC, CONCURRENCY]]),
      handle: async (): Promise<DeliveryOutcome> => {
        onFire();
        return { kind: 'completed' };
      },
    });
    return new WheelInstance(driver, clock);
  }

  async scheduleAll(keys: readonly string[], delays: Float64Array, count: number): Promise<void> {
    const { driver } = this;
    for (let i = 0; i < count; i++) {
      await driver.schedule({ topic: TOPIC, key: keys[i], due: { delayMs: delays[i] }, payload: undefined, ifExists: 'replace', maxPastMs: MAX_PAST_MS });
    }
  }

  async cancelAll(keys: readonly string[], count: number): Promise<void> {
    const { driver } = this;
    for (let i = 0; i < count; i++) await driver.cancel(TOPIC, keys[i]);
  }

  async scheduleBurst(keys: readonly string[], count: number, dueAtMs: number): Promise<void> {
    const { driver } = this;
    for (let i = 0; i < count; i++) {
      await driver.schedule({ topic: TOPIC, key: keys[i], due: { atMs: dueAtMs }, payload: undefined, ifExists: 'replace', maxPastMs: MAX_PAST_MS });
    }
  }

  async pending(): Promise<number> {
    return this.driver.count(TOPIC);
  }

  async close(): Promise<void> {
    await this.driver.close();
  }

  timerRuns(): number[] {
    return this.clock.runs;
  }
}

/** The handler DelayService's wheel calls; each burst points `fire` at its recorder. */
@Injectable()
class BurstHandler {
  fire: () => void = () => undefined;

  @OnDelayExpired(TOPIC)
  async onExpired(): Promise<void> {
    this.fire();
  }
}

@Module({ providers: [BurstHandler] })
class ServiceBenchModule {
  static withClock(clock: TimedClock): DynamicModule {
    return { module: ServiceBenchModule, imports: [DelayModule.forRoot({ driver: { type: 'wheel', tickMs: TICK_MS }, clock })] };
  }
}

/** Keeps each events$ listener's count reachable, so its work cannot be optimised away. */
const keepAlive: Array<() => number> = [];

/** The full path: DelayModule in a Nest application context, calls through DelayService. */
class ServiceInstance implements Instance {
  private constructor(
    private readonly app: INestApplicationContext,
    private readonly service: DelayService,
    private readonly clock: TimedClock,
    private readonly fixedDelayMs: number | undefined,
  ) {}

  /**
   * With `listen`, one events$ subscriber counts the events, as a metrics
   * exporter would. With `fixedDelayMs`, every schedule gets that delay:
   * the like-for-like row for setTimeout's one-fixed-delay case.
   */
  static async create(onFire: () => void, listen = false, fixedDelayMs?: number): Promise<ServiceInstance> {
    const clock = new TimedClock();
    const app = await NestFactory.createApplicationContext(ServiceBenchModule.withClock(clock), { logger: false });
    app.get(BurstHandler).fire = onFire;
    const service = app.get(DelayService);
    if (listen) {
      // The cheapest listener there is, so the row shows what the library spends on events, not the listener.
      let seen = 0;
      service.events$.subscribe(() => {
        seen++;
      });
      keepAlive.push(() => seen);
    }
    return new ServiceInstance(app, service, clock, fixedDelayMs);
  }

  async scheduleAll(keys: readonly string[], delays: Float64Array, count: number): Promise<void> {
    const { service } = this;
    const fixed = this.fixedDelayMs;
    if (fixed !== undefined) for (let i = 0; i < count; i++) await service.schedule(TOPIC, keys[i], { delay: fixed });
    else for (let i = 0; i < count; i++) await service.schedule(TOPIC, keys[i], { delay: delays[i] });
  }

  async cancelAll(keys: readonly string[], count: number): Promise<void> {
    const { service } = this;
    for (let i = 0; i < count; i++) await service.cancel(TOPIC, keys[i]);
  }

  async scheduleBurst(keys: readonly string[], count: number, dueAtMs: number): Promise<void> {
    const { service } = this;
    for (let i = 0; i < count; i++) await service.schedule(TOPIC, keys[i], { at: dueAtMs });
  }

  async pending(): Promise<number> {
    return this.service.count(TOPIC);
  }

  async close(): Promise<void> {
    await this.app.close();
  }

  timerRuns(): number[] {
    return this.clock.runs;
  }
}

/** Not a timer: the cost of keeping a Map<key, number> alone, the floor under any keyed structure. */
class MapFloorInstance implements Instance {
  private readonly map = new Map<string, number>();

  async scheduleAll(keys: readonly string[], delays: Float64Array, count: number): Promise<void> {
    const { map } = this;
    for (let i = 0; i < count; i++) map.set(keys[i], delays[i]);
  }

  async cancelAll(keys: readonly string[], count: number): Promise<void> {
    const { map } = this;
    for (let i = 0; i < count; i++) map.delete(keys[i]);
  }

  async scheduleBurst(): Promise<void> {
    throw new Error('the Map floor has no timers');
  }

  async pending(): Promise<number> {
    return this.map.size;
  }

  async close(): Promise<void> {
    this.map.clear();
  }
}

const ALL_CONTENDERS: readonly Contender[] = [
  { id: 'timeout', label: 'setTimeout (Map<key, Timeout>), random delays', fires: true, create: async (onFire) => new TimeoutInstance(onFire) },
  { id: 'timeout-fixed', label: 'setTimeout (Map<key, Timeout>), one fixed delay', fires: false, create: async (onFire) => new TimeoutInstance(onFire, FIXED_DELAY_MS) },
  { id: 'heap', label: 'indexed binary heap', fires: true, create: async (onFire) => new HeapInstance(onFire) },
  { id: 'wheel', label: 'nestjs-delay WheelDriver', fires: true, create: (onFire) => WheelInstance.create(onFire) },
  { id: 'service', label: 'nestjs-delay DelayService (wheel)', fires: true, create: (onFire) => ServiceInstance.create(onFire) },
  {
    id: 'service-fixed',
    label: 'nestjs-delay DelayService (wheel), one fixed delay',
    fires: false,
    create: (onFire) => ServiceInstance.create(onFire, false, FIXED_DELAY_MS),
  },
  {
    id: 'service-events',
    label: 'nestjs-delay DelayService (wheel), one events$ subscriber',
    fires: false,
    create: (onFire) => ServiceInstance.create(onFire, true),
  },
  { id: 'map', label: 'Map<string, number> only (floor)', fires: false, create: async () => new MapFloorInstance() },
];

/** BENCH_ONLY=timeout,service runs only those rows (ids as in ContenderId): for a quick look, not for the figures. */
const CONTENDERS: readonly Contender[] = ((): readonly Contender[] => {
  const only = process.env.BENCH_ONLY?.split(',').map((id) => id.trim());
  if (!only || only.join('') === '') return ALL_CONTENDERS;
  const unknown = only.filter((id) => !ALL_CONTENDERS.some((contender) => contender.id === id));
  if (unknown.length > 0) throw new Error(`BENCH_ONLY: unknown row(s) ${unknown.join(', ')}`);
  return ALL_CONTENDERS.filter((contender) => only.includes(contender.id));
})();

// ---- phases -------------------------------------------------------------

interface OpsSample {
  /** Per pending action: heapUsed + arrayBuffers, and each part. */
  readonly bytes: number;
  readonly heapBytes: number;
  readonly arrayBufferBytes: number;
  readonly externalBytes: number;
  readonly scheduleNs: number;
  /** Cancelling in the order of scheduling, then (after scheduling again) in a shuffled order. */
  readonly cancelNs: number;
  readonly cancelRandomNs: number;
  /**
   * The same three as process CPU time (all threads, so GC helper threads
   * count): unlike wall time, it does not grow while other processes hold
   * the cores, which makes it the steadier figure on a shared machine.
   */
  readonly scheduleCpuNs: number;
  readonly cancelCpuNs: number;
  readonly cancelRandomCpuNs: number;
}

interface Timing {
  readonly wallMs: number;
  readonly cpuMs: number;
}

async function timed(run: () => Promise<void>): Promise<Timing> {
  const cpuBefore = process.cpuUsage();
  const start = performance.now();
  await run();
  const wallMs = performance.now() - start;
  const cpu = process.cpuUsage(cpuBefore);
  return { wallMs, cpuMs: (cpu.user + cpu.system) / 1000 };
}

interface BurstSample {
  readonly leadMs: number;
  readonly scheduleMs: number;
  /** Due moment → first callback, due moment → last callback, first → last. */
  readonly firstLateMs: number;
  readonly dueToAllMs: number;
  readonly drainMs: number;
  /**
   * Wheel only (else NaN): when its timer woke for the burst, after the due
   * moment, and how long its timer callbacks ran from the due moment on
   * (moving the burst to the ready queue: the burst's own work before any callback).
   */
  readonly timerWokeMs: number;
  readonly timerWorkMs: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
  readonly minMs: number;
}

const noop = (): void => undefined;

async function expectPending(instance: Instance, expected: number, contender: Contender, when: string): Promise<void> {
  const actual = await instance.pending();
  if (actual !== expected) throw new Error(`${contender.label}: ${actual} pending ${when}, expected ${expected}`);
}

/** Keys used only to warm a fresh instance up; never counted. */
const WARM_KEYS = Array.from({ length: 1_000 }, (_, i) => `warm:${i}`);
const WARM_DELAYS = randomDelays(WARM_KEYS.length, MIN_DELAY_MS, MAX_DELAY_MS, xorshift32(SEED));

/**
 * Runs a fresh instance's schedule and cancel paths until the JIT has
 * optimised them. Needed because code optimised for an earlier, now
 * collected instance is thrown away by V8 ("weak objects" deopts), which a
 * long-lived instance in an application never sees. 1,000 keys stay inside
 * the wheel arena's initial capacity, so the baseline is not inflated.
 */
async function warmOps(instance: Instance): Promise<void> {
  for (let round = 0; round < 5; round++) {
    await instance.scheduleAll(WARM_KEYS, WARM_DELAYS, WARM_KEYS.length);
    await instance.cancelAll(WARM_KEYS, WARM_KEYS.length);
  }
}

/**
 * Schedules `count` actions with varied delays, reads the memory they hold,
 * cancels them all by key in the order they were scheduled; then schedules
 * them again and cancels them in a shuffled order.
 */
async function measureOps(contender: Contender, keys: readonly string[], shuffled: readonly string[], delays: Float64Array, count: number): Promise<OpsSample> {
  await settle();
  const instance = await contender.create(noop);
  await warmOps(instance);
  await expectPending(instance, 0, contender, 'after warming up');
  // Everything below up to cancelAll runs without an event-loop turn: no timer can fire in between.
  const before = readMemory();
  const schedule = await timed(() => instance.scheduleAll(keys, delays, count));
  const after = readMemory();
  await expectPending(instance, count, contender, 'after scheduling');
  const cancel = await timed(() => instance.cancelAll(keys, count));
  await expectPending(instance, 0, contender, 'after cancelling');
  // Payments do not arrive in the order orders were created: the same again, cancelled at random.
  await instance.scheduleAll(keys, delays, count);
  await expectPending(instance, count, contender, 'after scheduling again');
  const cancelRandom = await timed(() => instance.cancelAll(shuffled, count));
  await expectPending(instance, 0, contender, 'after cancelling in a shuffled order');
  await instance.close();
  const heapBytes = (after.heapUsed - before.heapUsed) / count;
  const arrayBufferBytes = (after.arrayBuffers - before.arrayBuffers) / count;
  return {
    bytes: heapBytes + arrayBufferBytes,
    heapBytes,
    arrayBufferBytes,
    externalBytes: (after.external - before.external) / count,
    scheduleNs: (schedule.wallMs * 1e6) / count,
    cancelNs: (cancel.wallMs * 1e6) / count,
    cancelRandomNs: (cancelRandom.wallMs * 1e6) / count,
    scheduleCpuNs: (schedule.cpuMs * 1e6) / count,
    cancelCpuNs: (cancel.cpuMs * 1e6) / count,
    cancelRandomCpuNs: (cancelRandom.cpuMs * 1e6) / count,
  };
}

/** How long scheduling a burst of `count` takes, from a sample of it on a throwaway instance. */
async function estimateBurstScheduleMs(contender: Contender, keys: readonly string[], count: number): Promise<number> {
  const sample = Math.min(count, 20_000);
  const instance = await contender.create(noop);
  await warmOps(instance);
  const t0 = performance.now();
  await instance.scheduleBurst(keys, sample, Date.now() + 3_600_000, 3_600_000);
  const elapsed = performance.now() - t0;
  await instance.cancelAll(keys, sample);
  await instance.close();
  return (elapsed * count) / sample;
}

type BurstAttempt = { readonly ok: true; readonly sample: BurstSample } | { readonly ok: false; readonly scheduleMs: number };

/**
 * Arms `count` actions all due `leadMs` from now, then waits for every
 * callback. Lateness of each callback = the time it ran − the due moment,
 * both on the monotonic clock. The lead must outlast the scheduling itself,
 * or the attempt is reported as overrun (and retried with a longer lead).
 */
async function burstAttempt(contender: Contender, keys: readonly string[], count: number, leadMs: number): Promise<BurstAttempt> {
  await settle();
  const lateness = new Float64Array(count);
  let recording = false;
  let warmFired = 0;
  let fired = 0;
  let first = 0;
  let last = 0;
  let duePerf = Infinity;
  let finish: () => void = noop;
  const done = new Promise<void>((resolve) => {
    finish = resolve;
  });
  const onFire = (): void => {
    const now = performance.now();
    if (!recording) {
      warmFired++;
      return;
    }
    if (fired === 0) first = now;
    if (fired < count) lateness[fired] = now - duePerf;
    fired++;
    if (fired === count) {
      last = now;
      finish();
    }
  };
  const instance = await contender.create(onFire);
  // Warm this instance's schedule, cancel and firing paths (see warmOps).
  await warmOps(instance);
  await instance.scheduleBurst(WARM_KEYS, WARM_KEYS.length, Date.now() + 1, 1);
  const warmDeadline = performance.now() + 10_000;
  while ((warmFired < WARM_KEYS.length || (await instance.pending()) > 0) && performance.now() < warmDeadline) {
    await new Promise<void>((resolve) => setTimeout(resolve, 5));
  }
  await expectPending(instance, 0, contender, 'after the warm-up burst');
  collectGarbage();
  recording = true;
  const timerRuns = instance.timerRuns?.();
  if (timerRuns) timerRuns.length = 0;
  // Start on a fresh loop iteration: setTimeout measures its delay from the loop's cached time.
  await new Promise<void>((resolve) => setImmediate(resolve));
  const startDate = Date.now();
  const startPerf = performance.now();
  duePerf = startPerf + leadMs;
  await instance.scheduleBurst(keys, count, startDate + leadMs, leadMs);
  const scheduleMs = performance.now() - startPerf;
  if (fired > 0 || startPerf + scheduleMs > duePerf) {
    await instance.close();
    return { ok: false, scheduleMs };
  }
  let guard: NodeJS.Timeout | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    guard = setTimeout(() => reject(new Error(`${contender.label}: only ${fired} of ${count} burst callbacks ran`)), leadMs + 300_000);
  });
  try {
    await Promise.race([done, timedOut]);
  } finally {
    clearTimeout(guard);
  }
  // The last callback has run; its outcome is applied a few microtasks later.
  for (let turn = 0; turn < 100 && (await instance.pending()) > 0; turn++) await new Promise<void>((resolve) => setImmediate(resolve));
  await expectPending(instance, 0, contender, 'after the burst');
  await instance.close();
  lateness.sort();
  let timerWokeMs = NaN;
  let timerWorkMs = NaN;
  if (timerRuns) {
    timerWorkMs = 0;
    for (let k = 0; k + 1 < timerRuns.length; k += 2) {
      const start = timerRuns[k];
      const end = Math.min(timerRuns[k + 1], last);
      if (end <= duePerf) continue;
      if (Number.isNaN(timerWokeMs)) timerWokeMs = start - duePerf;
      timerWorkMs += end - Math.max(start, duePerf);
    }
  }
  return {
    ok: true,
    sample: {
      leadMs,
      scheduleMs,
      firstLateMs: first - duePerf,
      dueToAllMs: last - duePerf,
      drainMs: last - first,
      timerWokeMs,
      timerWorkMs,
      p50Ms: quantile(lateness, 0.5),
      p99Ms: quantile(lateness, 0.99),
      maxMs: lateness[count - 1],
      minMs: lateness[0],
    },
  };
}

async function measureBurst(contender: Contender, keys: readonly string[], count: number): Promise<BurstSample> {
  const estimate = await estimateBurstScheduleMs(contender, keys, count);
  let leadMs = Math.max(50, Math.ceil(50 + 3 * estimate));
  for (let attempt = 0; attempt < 4; attempt++) {
    const result = await burstAttempt(contender, keys, count, leadMs);
    if (result.ok) return result.sample;
    leadMs = Math.ceil(50 + 2 * result.scheduleMs);
  }
  throw new Error(`${contender.label}: scheduling the burst kept outlasting its lead`);
}

// ---- the run ------------------------------------------------------------

interface SizeResult {
  readonly count: number;
  readonly ops: Map<ContenderId, OpsSample>;
  readonly burst: Map<ContenderId, BurstSample>;
}

function opsRounds(count: number): number {
  if (QUICK) return 1;
  return count <= 10_000 ? 9 : count <= 100_000 ? 3 : 1;
}

function burstRounds(count: number): number {
  if (QUICK) return 1;
  return count <= 100_000 ? 3 : 1;
}

function medianOps(samples: readonly OpsSample[]): OpsSample {
  const of = (pick: (sample: OpsSample) => number): number => median(samples.map(pick));
  return {
    bytes: of((s) => s.bytes),
    heapBytes: of((s) => s.heapBytes),
    arrayBufferBytes: of((s) => s.arrayBufferBytes),
    externalBytes: of((s) => s.externalBytes),
    scheduleNs: of((s) => s.scheduleNs),
    cancelNs: of((s) => s.cancelNs),
    cancelRandomNs: of((s) => s.cancelRandomNs),
    scheduleCpuNs: of((s) => s.scheduleCpuNs),
    cancelCpuNs: of((s) => s.cancelCpuNs),
    cancelRandomCpuNs: of((s) => s.cancelRandomCpuNs),
  };
}

/** The burst whose due→all time is the median one, so its figures stay consistent with each other. */
function medianBurst(samples: readonly BurstSample[]): BurstSample {
  const sorted = [...samples].sort((a, b) => a.dueToAllMs - b.dueToAllMs);
  return sorted[(sorted.length - 1) >> 1];
}

function sizesFromEnv(): number[] {
  const text = process.env.BENCH_SIZES;
  if (text === undefined || text.trim() === '') return DEFAULT_SIZES;
  const sizes = text.split(',').map((part) => Number(part.trim()));
  if (sizes.some((size) => !Number.isInteger(size) || size < 1)) throw new Error(`BENCH_SIZES must be whole numbers, got "${text}"`);
  return sizes;
}

function log(message: string): void {
  process.stderr.write(`${message}\n`);
}

/**
 * One closed, empty instance of every contender, kept alive for the whole
 * run. V8 holds an object's final hidden class only through its instances
 * (map transitions are weak), so when every instance of a class has been
 * collected, the class's map dies and all code optimised for it is thrown
 * away ("weak objects" deopts). An application's long-lived driver never
 * sees that; without keepers, each fresh instance here would start on cold
 * code after the forced GCs, and small sizes would mostly measure the JIT.
 */
const keepers: Instance[] = [];

async function warmUp(keys: readonly string[], delays: Float64Array): Promise<void> {
  for (const contender of CONTENDERS) {
    const keeper = await contender.create(noop);
    await warmOps(keeper);
    await keeper.close();
    keepers.push(keeper);
    for (let round = 0; round < 2; round++) await measureOps(contender, keys, keys, delays, keys.length);
    if (contender.fires) await burstAttempt(contender, keys, keys.length, 200);
  }
}

async function runSize(count: number): Promise<SizeResult> {
  const random = xorshift32(SEED ^ count);
  // Keys and delays exist before any baseline is read: only the structures are counted.
  const keys = Array.from({ length: count }, (_, i) => `order:${i}`);
  const delays = randomDelays(count, MIN_DELAY_MS, MAX_DELAY_MS, random);
  const shuffled = shuffle(keys, random);
  const ops = new Map<ContenderId, OpsSample>();
  const burst = new Map<ContenderId, BurstSample>();
  for (const contender of CONTENDERS) {
    const samples: OpsSample[] = [];
    for (let round = 0; round < opsRounds(count); round++) samples.push(await measureOps(contender, keys, shuffled, delays, count));
    const result = medianOps(samples);
    ops.set(contender.id, result);
    log(`  ${sizeLabel(count)} ${contender.label}: ${fmt(result.bytes)} B/action, schedule ${fmt(result.scheduleNs)} ns, cancel ${fmt(result.cancelNs)} ns (shuffled ${fmt(result.cancelRandomNs)} ns)`);
  }
  for (const contender of CONTENDERS) {
    if (!contender.fires) continue;
    const samples: BurstSample[] = [];
    for (let round = 0; round < burstRounds(count); round++) samples.push(await measureBurst(contender, keys, count));
    const result = medianBurst(samples);
    burst.set(contender.id, result);
    log(`  ${sizeLabel(count)} ${contender.label}: burst ${fmt(count / (result.dueToAllMs / 1000))} cb/s, lateness max ${fmt(result.maxMs, 1)} ms`);
  }
  return { count, ops, burst };
}

// ---- reporting ----------------------------------------------------------

const LABELS = new Map(CONTENDERS.map((contender) => [contender.id, contender.label]));

function label(id: ContenderId): string {
  return LABELS.get(id) ?? id;
}

function ratio(value: number): string {
  return `${fmt(value, value >= 10 ? 1 : 2)}x`;
}

function opsTable(results: readonly SizeResult[]): string {
  const rows: string[][] = [];
  for (const { count, ops } of results) {
    for (const contender of CONTENDERS) {
      const s = ops.get(contender.id);
      if (!s) continue;
      rows.push([
        sizeLabel(count),
        contender.label,
        fmt(s.bytes),
        fmt(s.heapBytes),
        fmt(s.arrayBufferBytes),
        fmt(s.externalBytes),
        fmt(s.scheduleNs),
        fmt(s.cancelNs),
        fmt(s.cancelRandomNs),
      ]);
    }
  }
  return markdownTable(
    ['N', 'implementation', 'B/action (heap+AB)', 'heapUsed B', 'arrayBuffers B', 'external B', 'schedule ns/op', 'cancel ns/op', 'cancel shuffled ns/op'],
    rows,
    [false, false, true, true, true, true, true, true, true],
  );
}

function burstTable(results: readonly SizeResult[]): string {
  const rows: string[][] = [];
  for (const { count, burst } of results) {
    for (const contender of CONTENDERS) {
      const s = burst.get(contender.id);
      if (!s) continue;
      rows.push([
        sizeLabel(count),
        contender.label,
        fmt(s.dueToAllMs, 1),
        fmt(count / (s.dueToAllMs / 1000)),
        fmt(count / (s.drainMs / 1000)),
        fmt(s.firstLateMs, 1),
        Number.isNaN(s.timerWokeMs) ? '-' : fmt(s.timerWokeMs, 1),
        Number.isNaN(s.timerWorkMs) ? '-' : fmt(s.timerWorkMs, 1),
        fmt(s.p50Ms, 1),
        fmt(s.p99Ms, 1),
        fmt(s.maxMs, 1),
        fmt(s.minMs, 1),
        fmt(s.leadMs),
      ]);
    }
  }
  return markdownTable(
    [
      'N',
      'implementation',
      'due→all ms',
      'cb/s (N / due→all)',
      'drain cb/s (first→last)',
      'first cb late ms',
      'wheel woke ms',
      'wheel timer work ms',
      'late p50 ms',
      'late p99 ms',
      'late max ms',
      'late min ms',
      'lead ms',
    ],
    rows,
    [false, false, true, true, true, true, true, true, true, true, true, true, true],
  );
}

function ratioTable(results: readonly SizeResult[]): string {
  const rows: string[][] = [];
  for (const { count, ops, burst } of results) {
    const baseOps = ops.get('timeout');
    const baseBurst = burst.get('timeout');
    if (!baseOps) continue;
    for (const contender of CONTENDERS) {
      const s = ops.get(contender.id);
      if (!s) continue;
      const b = burst.get(contender.id);
      const rate = (sample: BurstSample): number => count / sample.dueToAllMs;
      const drain = (sample: BurstSample): number => count / sample.drainMs;
      rows.push([
        sizeLabel(count),
        contender.label,
        ratio(s.bytes / baseOps.bytes),
        ratio(baseOps.scheduleNs / s.scheduleNs),
        ratio(baseOps.cancelNs / s.cancelNs),
        ratio(baseOps.cancelRandomNs / s.cancelRandomNs),
        b && baseBurst ? ratio(rate(b) / rate(baseBurst)) : '-',
        b && baseBurst ? ratio(drain(b) / drain(baseBurst)) : '-',
      ]);
    }
  }
  return markdownTable(
    ['N', 'implementation', 'memory (x setTimeout, lower is better)', 'schedule speed-up', 'cancel speed-up', 'cancel shuffled speed-up', 'burst cb/s (x)', 'drain cb/s (x)'],
    rows,
    [false, false, true, true, true, true, true, true],
  );
}

/** Each timed operation: its name, its wall time per op, its CPU time per op. */
const OPERATIONS: ReadonlyArray<readonly [string, (sample: OpsSample) => number, (sample: OpsSample) => number]> = [
  ['schedule', (sample) => sample.scheduleNs, (sample) => sample.scheduleCpuNs],
  ['cancel', (sample) => sample.cancelNs, (sample) => sample.cancelCpuNs],
  ['cancel shuffled', (sample) => sample.cancelRandomNs, (sample) => sample.cancelRandomCpuNs],
];

function cpuTable(results: readonly SizeResult[]): string {
  const rows: string[][] = [];
  for (const { count, ops } of results) {
    const base = ops.get('timeout');
    for (const contender of CONTENDERS) {
      const s = ops.get(contender.id);
      if (!s || !base) continue;
      rows.push([
        sizeLabel(count),
        contender.label,
        ...OPERATIONS.map(([, , cpu]) => fmt(cpu(s))),
        ...OPERATIONS.map(([, , cpu]) => ratio(cpu(base) / cpu(s))),
      ]);
    }
  }
  return markdownTable(
    ['N', 'implementation', ...OPERATIONS.map(([name]) => `${name} CPU ns/op`), ...OPERATIONS.map(([name]) => `${name} speed-up`)],
    rows,
    [false, false, ...OPERATIONS.map(() => true), ...OPERATIONS.map(() => true)],
  );
}

function flatnessTable(results: readonly SizeResult[]): string {
  const smallest = results[0];
  const largest = results[results.length - 1];
  const rows: string[][] = [];
  for (const contender of CONTENDERS) {
    for (const [operation, pick, cpu] of OPERATIONS) {
      const cells = [contender.label, operation];
      for (const result of results) {
        const s = result.ops.get(contender.id);
        cells.push(s ? fmt(pick(s)) : '-');
      }
      const small = smallest.ops.get(contender.id);
      const large = largest.ops.get(contender.id);
      cells.push(small && large ? ratio(pick(large) / pick(small)) : '-');
      cells.push(small && large ? ratio(cpu(large) / cpu(small)) : '-');
      rows.push(cells);
    }
  }
  const sizes = results.map((result) => sizeLabel(result.count));
  return markdownTable(
    [
      'implementation',
      'operation',
      ...sizes.map((size) => `${size} ns/op`),
      `${sizeLabel(largest.count)}/${sizeLabel(smallest.count)}`,
      `${sizeLabel(largest.count)}/${sizeLabel(smallest.count)} in CPU time`,
    ],
    rows,
    [false, false, ...sizes.map(() => true), true, true],
  );
}

function verdicts(results: readonly SizeResult[]): string {
  const smallest = results[0];
  const largest = results[results.length - 1];
  const at = sizeLabel(largest.count);
  const lines: string[] = [];
  const mark = (met: boolean): string => (met ? 'MET' : 'NOT MET');
  const base = largest.ops.get('timeout');
  for (const id of ['wheel', 'service'] as const) {
    const s = largest.ops.get(id);
    const small = smallest.ops.get(id);
    if (!base || !s || !small) continue;
    const floor = largest.ops.get('map');
    const smallFloor = smallest.ops.get('map');
    const memory = s.bytes / base.bytes;
    lines.push(`${label(id)}, at ${at}:`);
    lines.push(`- memory ${fmt(s.bytes)} B/action = ${ratio(memory)} setTimeout's ${fmt(base.bytes)} B (target <= 0.33x): ${mark(memory <= 1 / 3)}`);
    for (const [operation, pick, cpu] of OPERATIONS) {
      const speedUp = pick(base) / pick(s);
      lines.push(
        `- ${operation} ${fmt(pick(s))} ns, ${ratio(speedUp)} faster than setTimeout's ${fmt(pick(base))} ns (in CPU time ${ratio(cpu(base) / cpu(s))}) (target >= 5x): ${mark(speedUp >= 5)}`,
      );
    }
    if (results.length > 1) {
      for (const [operation, pick, cpu] of OPERATIONS) {
        const growth = pick(s) / pick(small);
        const cpuGrowth = cpu(s) / cpu(small);
        const floorGrowth = floor && smallFloor ? `; the bare Map floor: ${ratio(pick(floor) / pick(smallFloor))}, in CPU time ${ratio(cpu(floor) / cpu(smallFloor))}` : '';
        lines.push(
          `- ${operation} flat ${sizeLabel(smallest.count)} -> ${at} (per-op growth <= ${FLAT_LIMIT}x): ${ratio(growth)}, in CPU time ${ratio(cpuGrowth)}${floorGrowth}: ${mark(Math.max(growth, cpuGrowth) <= FLAT_LIMIT)}`,
        );
      }
    }
    const burst = largest.burst.get(id);
    const baseBurst = largest.burst.get('timeout');
    if (burst && baseBurst) {
      const faster = baseBurst.dueToAllMs / burst.dueToAllMs;
      const drainFaster = baseBurst.drainMs / burst.drainMs;
      const work = burst.timerWorkMs + burst.drainMs;
      const allowed = TICK_MS + work + JITTER_MS;
      lines.push(`- burst ${ratio(faster)} setTimeout's callbacks/s due->all, ${ratio(drainFaster)} first->last (target > 1x): ${mark(faster > 1)}`);
      lines.push(
        `- burst lateness max ${fmt(burst.maxMs, 1)} ms vs one tick + the burst's own work (${TICK_MS} + ${fmt(burst.timerWorkMs, 1)} moving it to the ready queue + ${fmt(burst.drainMs, 1)} running the callbacks + ${JITTER_MS} jitter = ${fmt(allowed, 1)} ms); the wheel woke ${fmt(burst.timerWokeMs, 1)} ms after the due moment, first callback ${fmt(burst.firstLateMs, 1)} ms: ${mark(burst.maxMs <= allowed)}`,
      );
    }
  }
  return lines.join('\n');
}

/**
 * The service-path targets, at the largest N: verdicts on process CPU time
 * (steady on a shared machine), wall time shown beside.
 */
function serviceTargets(results: readonly SizeResult[]): string {
  const largest = results[results.length - 1];
  const at = sizeLabel(largest.count);
  const get = (id: ContenderId): OpsSample | undefined => largest.ops.get(id);
  const service = get('service');
  const serviceFixed = get('service-fixed');
  const listened = get('service-events');
  const random = get('timeout');
  const fixed = get('timeout-fixed');
  if (!service || !serviceFixed || !listened || !random || !fixed) return '(run every contender for these)';
  const mark = (met: boolean): string => (met ? 'MET' : 'NOT MET');
  const lines = [`DelayService (wheel) at ${at}, CPU time (wall time in brackets):`];
  // Like for like: each setTimeout row against the DelayService row scheduled with the same delays.
  const faster = (name: string, ours: OpsSample, base: OpsSample, pick: (sample: OpsSample) => number, cpu: (sample: OpsSample) => number, target: number): void => {
    const speedUp = cpu(base) / cpu(ours);
    lines.push(`- ${name}: ${fmt(cpu(ours))} ns vs ${fmt(cpu(base))} ns = ${ratio(speedUp)} (wall ${ratio(pick(base) / pick(ours))}) (target >= ${target}x): ${mark(speedUp >= target)}`);
  };
  faster('schedule vs setTimeout, both with one fixed delay', serviceFixed, fixed, (x) => x.scheduleNs, (x) => x.scheduleCpuNs, 2);
  faster('schedule vs setTimeout, both with random delays', service, random, (x) => x.scheduleNs, (x) => x.scheduleCpuNs, 4);
  faster('cancel vs setTimeout, both with random delays', service, random, (x) => x.cancelNs, (x) => x.cancelCpuNs, 2);
  faster('cancel vs setTimeout, both with one fixed delay', serviceFixed, fixed, (x) => x.cancelNs, (x) => x.cancelCpuNs, 2);
  for (const [operation, pick, cpu] of OPERATIONS) {
    const cost = cpu(listened) / cpu(service);
    lines.push(
      `- ${operation} with one events$ subscriber: ${fmt(cpu(listened))} ns vs ${fmt(cpu(service))} ns without = ${ratio(cost)} the cost (wall ${ratio(pick(listened) / pick(service))}) (target <= 1.3x): ${mark(cost <= 1.3)}`,
    );
  }
  return lines.join('\n');
}

/**
 * This run's headline comparisons at its largest size, for
 * bench/results/wheel.json: the service-path speed-ups in CPU time, the
 * burst in callbacks per second (due->all) and the WheelDriver's memory, each
 * against setTimeout. Rows whose contenders did not run (BENCH_ONLY) are left out.
 */
function wheelResults(largest: SizeResult, runs: string): ResultsUpdate {
  const rows: RatioRow[] = [];
  const round = (value: number): number => Math.round(value * 100) / 100;
  const push = (label: string, value: number | undefined, target: number, better: 'higher' | 'lower'): void => {
    if (value !== undefined && Number.isFinite(value)) rows.push({ label, runs: [round(value)], target, better });
  };
  const ops = (id: ContenderId): OpsSample | undefined => largest.ops.get(id);
  const faster = (ours: ContenderId, base: ContenderId, cpu: (sample: OpsSample) => number): number | undefined => {
    const a = ops(ours);
    const b = ops(base);
    return a && b ? cpu(b) / cpu(a) : undefined;
  };
  push('DelayService.schedule, random delays', faster('service', 'timeout', (x) => x.scheduleCpuNs), 4, 'higher');
  push('DelayService.schedule, one fixed delay', faster('service-fixed', 'timeout-fixed', (x) => x.scheduleCpuNs), 2, 'higher');
  push('DelayService.cancel, random delays', faster('service', 'timeout', (x) => x.cancelCpuNs), 2, 'higher');
  push('DelayService.cancel, one fixed delay', faster('service-fixed', 'timeout-fixed', (x) => x.cancelCpuNs), 2, 'higher');
  const baseBurst = largest.burst.get('timeout');
  for (const [id, name] of [
    ['wheel', 'WheelDriver'],
    ['service', 'DelayService'],
  ] as const) {
    const burst = largest.burst.get(id);
    push(`burst of 1M due at once, ${name}`, burst && baseBurst ? baseBurst.dueToAllMs / burst.dueToAllMs : undefined, 1, 'higher');
  }
  const wheel = ops('wheel');
  const timeout = ops('timeout');
  push('memory per pending action', wheel && timeout ? wheel.bytes / timeout.bytes : undefined, 0.33, 'lower');
  const memory = wheel && timeout ? { label: 'wheel at 1M pending', ours: Math.round(wheel.bytes), peers: { setTimeout: Math.round(timeout.bytes) } } : undefined;
  return { runs, rows: { 'wheel-vs-settimeout': rows }, ...(memory ? { memory } : {}) };
}

async function main(): Promise<void> {
  // Refused before any server starts when the library is another checkout's.
  const library = libraryUnderTest();
  const sizes = sizesFromEnv();
  const script = relative(process.cwd(), process.argv[1]);
  const npmScript = process.env.npm_lifecycle_event;
  const overrides = ['BENCH_WHEEL_QUICK', 'BENCH_SIZES', 'BENCH_ONLY', 'BENCH_RESULTS_DIR'].filter((name) => process.env[name] !== undefined).map((name) => `${name}=${process.env[name]} `);
  const command = `${overrides.join('')}${npmScript ? `npm run ${npmScript}  ->  ` : ''}node ${[...process.execArgv, script].join(' ')}`;
  const startedAt = performance.now();
  console.log('# nestjs-delay wheel benchmark\n');
  console.log(`- date: ${new Date().toISOString()}`);
  console.log(`- command: ${command}${QUICK ? '  (QUICK: smaller and shorter, not for comparison)' : ''}`);
  console.log(`- ${library}`);
  console.log(`- node ${process.version} (V8 ${process.versions.v8}), ${process.platform}/${process.arch}`);
  console.log(`- cpus: ${availableParallelism()} available (${cpus()[0]?.model ?? 'unknown'}), memory ${fmt(totalmem() / 2 ** 30, 1)} GiB`);
  const loadAtStart = loadAverage();
  console.log(`- load average at start: ${loadAtStart} (the machine is shared: other processes compete for the cores)`);
  console.log(`- sizes: ${sizes.map(sizeLabel).join(', ')}; delays ${MIN_DELAY_MS} ms to ${MAX_DELAY_MS} ms, xorshift32 seed ${SEED}`);
  console.log(`- wheel: tickMs ${TICK_MS}, handler concurrency ${CONCURRENCY}; memory counted as heapUsed + arrayBuffers after forced GC`);
  console.log('');

  log('warming up...');
  const warmKeys = Array.from({ length: QUICK ? 2_000 : 20_000 }, (_, i) => `warm:${i}`);
  await warmUp(warmKeys, randomDelays(warmKeys.length, MIN_DELAY_MS, MAX_DELAY_MS, xorshift32(SEED)));

  const results: SizeResult[] = [];
  for (const count of sizes) {
    log(`N = ${sizeLabel(count)}`);
    results.push(await runSize(count));
    await settle();
  }

  console.log('## Memory, schedule, cancel (varied delays 1 s to 1 h)\n');
  console.log(opsTable(results));
  console.log('\n## Burst: N actions due at one moment\n');
  console.log(burstTable(results));
  console.log('\n## Ratios to setTimeout (same N)\n');
  console.log(ratioTable(results));
  console.log('\n## Process CPU time per op (all threads; steadier than wall time when other processes compete)\n');
  console.log(cpuTable(results));
  console.log('\n## Per-op cost from the smallest to the largest N (ns/op)\n');
  console.log(flatnessTable(results));
  console.log('\n## Targets (DESIGN.md)\n');
  console.log(verdicts(results));
  console.log('\n## Service-path targets\n');
  console.log(serviceTargets(results));
  const largest = results[results.length - 1];
  const comparable = !QUICK && largest.count === HEADLINE_SIZE;
  const why = QUICK ? 'QUICK run' : `Largest size ${sizeLabel(largest.count)}, not ${sizeLabel(HEADLINE_SIZE)}`;
  recordResults('wheel', comparable, () => wheelResults(largest, `one run (${command}), CPU time, load average ${loadAtStart.split(' / ')[0]} at the start`), why);
  console.log(`\ntotal time ${fmt((performance.now() - startedAt) / 1000, 1)} s; load average at the end: ${loadAverage()}`);
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
