import { VirtualClock } from 'nestjs-delay/testing';
import { randomUUID } from 'node:crypto';
import { SHOP_ENV_DEFAULTS } from '../../apps/shop/src/config/parse-shop-env';
import { TestRedisServer } from '../support/redis-server';
import { BootedShop, bootShop, ProviderOverride, ShopEnv } from './shop-test-app';
import { REAL_TIME_ON_TIME_MS } from '../support/on-time';

/**
 * The shop's behavioural end-to-end tests run once per delay driver. Each
 * spec is written once against a `ShopTime`, and the driver decides what
 * "time passes" means:
 *
 * - wheel: a VirtualClock. Time moves only when the test says so, the
 *   shop runs on its real defaults (30m, 48h, 30s, 3s), and every check is
 *   exact: one millisecond before a due time nothing has happened, at the
 *   due time the handler has run.
 * - postgres: the actions are rows in the shop's own (fresh, per app)
 *   database, written in the transactions of the changes that arm them.
 *   Its due times come from the database's clock: the test waits in real
 *   time exactly as on Redis, below.
 * - redis: the driver reads Redis's clock, which no test can move. The shop
 *   boots on a harness redis-server with short timeouts and a key prefix of
 *   its own per test, and the test waits in real time: it polls the HTTP API
 *   until the expected state (with a deadline), then checks from the
 *   timestamps the handler wrote that it ran no earlier than its due time
 *   and at most REAL_TIME_MAX_LATE_MS after it.
 */
export type ShopDriver = 'wheel' | 'redis' | 'postgres';

export const SHOP_DRIVERS: readonly ShopDriver[] = ['wheel', 'redis', 'postgres'];

/** A time as the shop's API writes it (ISO string) or in epoch milliseconds. */
export type Instant = string | number;

export interface ShopTime {
  /** The shop's current time in ms: the virtual clock on the wheel, the wall clock on Redis. */
  now(): number;
  /** Lets `ms` of the shop's time go by; on the wheel, handlers due meanwhile have settled when it returns. */
  pass(ms: number): Promise<void>;
  /**
   * Runs `step` as late as possible before `dueAt`: the wheel first moves
   * its clock to 1 ms before it. Real time cannot be moved, so on Redis
   * `step` runs at once, and must be done before `dueAt` (see stillBefore).
   */
  justBefore<T>(dueAt: Instant, step: () => Promise<T>): Promise<T>;
  /**
   * Runs `step` now, which must be before `dueAt`. On Redis the step has to
   * finish before `dueAt` too, or the test fails saying the machine is too
   * slow for the short timeouts: a step that lands after the due time would
   * make a correct shop look wrong.
   */
  stillBefore<T>(dueAt: Instant, step: () => Promise<T>): Promise<T>;
  /**
   * The state once `dueAt` has come. The wheel advances exactly to `dueAt`
   * and reads once: whatever was due must have run by then. Redis polls
   * `read` until `settled` holds or REDIS_POLL_DEADLINE_MS after `dueAt`,
   * and returns the last value read, for the test to assert on.
   */
  at<T>(dueAt: Instant, read: () => Promise<T>, settled: (value: T) => boolean): Promise<T>;
  /**
   * Asserts that the handler that wrote `firedAt` (e.g. an order's
   * cancelledAt) ran on time for `dueAt`: exactly at it on the wheel, no
   * earlier and at most REAL_TIME_MAX_LATE_MS later on Redis and PostgreSQL.
   */
  expectOnTime(firedAt: Instant | undefined, dueAt: Instant): void;
  /**
   * Asserts that `to` is `ms` after `from`, e.g. createdAt to paymentDueAt.
   * Exact on the wheel; on Redis the due time is Redis's clock read a round
   * trip after the shop's own, so it may be up to REAL_TIME_ROUND_TRIP_MS more.
   */
  expectDelay(from: Instant, to: Instant, ms: number): void;
}

/**
 * How late (by the timestamps handlers write) a Redis- or PostgreSQL-driven action may run. An action on time runs
 * within milliseconds on a quiet machine, but a loaded one (2 cores, a run queue 8-10 deep) has been seen to start it
 * 278 ms late. What this bound must catch is a missed wake-up, which the shop's drivers only correct at their safety
 * re-check (`wakeCheck`, 10 s): REAL_TIME_ON_TIME_MS is far below that.
 */
const REAL_TIME_MAX_LATE_MS = REAL_TIME_ON_TIME_MS;
/** How long after a due time a Redis test keeps polling for the expected state. */
const REDIS_POLL_DEADLINE_MS = 3_000;
const REDIS_POLL_EVERY_MS = 10;
const REDIS_TEST_TIMEOUT_MS = 20_000;
/** How much longer than the delay asked for a due time may be after the time the shop noted before its call (the call's round trip, on a loaded machine). */
const REAL_TIME_ROUND_TRIP_MS = 1_500;

export interface DriverProfile {
  /** The shop's timeouts on this driver. */
  readonly env: ShopEnv;
  /** Heartbeats that keep a user online: their spacing (well within OFFLINE_AFTER) and how many. */
  readonly heartbeats: { readonly every: number; readonly count: number };
}

export const DRIVER_PROFILES: Readonly<Record<ShopDriver, DriverProfile>> = {
  // Virtual time is free: the defaults a real deployment starts with.
  wheel: { env: {}, heartbeats: { every: 25_000, count: 24 } },
  // Real time: short enough for a fast suite, long enough that the few HTTP
  // calls a test makes before a due time (a few ms each, a few hundred on a
  // machine busy with other work) are well inside it. OFFLINE_AFTER is the
  // longest: a heartbeat step (a read and a heartbeat after 400 ms) had only
  // 400 ms of slack under 800 ms, which a machine running two suites at once
  // used up; under 2 s it has 1.6 s. WEBHOOK_WINDOW: three HTTP calls and two
  // pauses of a third of it must fit in it; 1.2 s left 400 ms for the calls,
  // which a machine at load 9 used up.
  redis: {
    env: { UNPAID_TIMEOUT: '800ms', AUTO_RATE_AFTER: '800ms', OFFLINE_AFTER: '2s', WEBHOOK_WINDOW: '2s' },
    heartbeats: { every: 400, count: 10 },
  },
  // Real time too, as on Redis.
  postgres: {
    env: { UNPAID_TIMEOUT: '800ms', AUTO_RATE_AFTER: '800ms', OFFLINE_AFTER: '2s', WEBHOOK_WINDOW: '2s' },
    heartbeats: { every: 400, count: 10 },
  },
};

/** The shop's timeouts on `driver` as written in the environment, for test titles. */
export function timeoutsOf(driver: ShopDriver): Record<keyof typeof SHOP_ENV_DEFAULTS, string> {
  return { ...SHOP_ENV_DEFAULTS, ...DRIVER_PROFILES[driver].env };
}

export interface ShopUnderTest extends BootedShop {
  readonly driver: ShopDriver;
  readonly time: ShopTime;
  /** Closes the app (the fixture closes whatever is still open after each test). */
  close(): Promise<void>;
}

export interface StartOptions {
  readonly listen?: boolean;
  /** On top of the driver's profile. */
  readonly env?: ShopEnv;
  /** Redis: the key prefix, by default the current test's own. Instances given the same prefix share their pending actions. */
  readonly prefix?: string;
  readonly overrides?: readonly ProviderOverride[];
}

export interface ShopFixture {
  readonly driver: ShopDriver;
  readonly profile: DriverProfile;
  start(options?: StartOptions): Promise<ShopUnderTest>;
  /** Redis: the harness server's URL, for a test that looks into Redis itself. */
  redisUrl(): string;
}

/**
 * Registers the hooks a spec needs on `driver` (a redis-server for the
 * describe block; closing every app after each test) and returns a way to
 * start shops. Call it at the top of a describe block.
 */
export function useShopFixture(driver: ShopDriver): ShopFixture {
  const profile = DRIVER_PROFILES[driver];
  const open = new Set<ShopUnderTest>();
  let redis: TestRedisServer | undefined;
  let testPrefix = '';

  if (driver !== 'wheel') jest.setTimeout(REDIS_TEST_TIMEOUT_MS);
  if (driver === 'redis') {
    // Real waits (the webhook retries alone take 3 s) plus a polling deadline: past Jest's 5 s default, a
    // regression must end in the assertion that shows the shop's state, not in a timeout.
    jest.setTimeout(REDIS_TEST_TIMEOUT_MS);
    beforeAll(async () => {
      redis = await TestRedisServer.start();
    }, 20_000);
    afterAll(async () => {
      await redis?.dispose();
      redis = undefined;
    });
  }
  beforeEach(() => {
    // Each test's pending actions are its own: nothing left by an earlier test can fire in this one.
    testPrefix = `shop-e2e-${randomUUID()}`;
  });
  afterEach(async () => {
    const apps = [...open];
    open.clear();
    await Promise.all(apps.map((shop) => shop.close()));
  });

  async function start(options: StartOptions = {}): Promise<ShopUnderTest> {
    const clock = driver === 'wheel' ? new VirtualClock() : undefined;
    const driverEnv: ShopEnv =
      driver === 'redis' ? { DELAY_DRIVER: 'redis', REDIS_URL: requireRedis().url, REDIS_PREFIX: options.prefix ?? testPrefix } : { DELAY_DRIVER: driver };
    const booted = await bootShop({
      env: { ...profile.env, ...driverEnv, ...options.env },
      clock,
      listen: options.listen,
      overrides: options.overrides,
    });
    let closed: Promise<void> | undefined;
    const shop: ShopUnderTest = {
      ...booted,
      driver,
      time: clock ? new VirtualShopTime(clock) : new RealShopTime(driver as Exclude<ShopDriver, 'wheel'>),
      close: () => {
        open.delete(shop);
        closed ??= booted.app.close();
        return closed;
      },
    };
    open.add(shop);
    return shop;
  }

  function requireRedis(): TestRedisServer {
    if (!redis) throw new Error(driver === 'redis' ? 'The Redis fixture starts its server in beforeAll: use it from a test or a beforeEach' : 'The wheel driver has no Redis');
    return redis;
  }

  return { driver, profile, start, redisUrl: () => requireRedis().url };
}

/** The wheel on a VirtualClock: time moves only when told, every check is exact. */
class VirtualShopTime implements ShopTime {
  constructor(private readonly clock: VirtualClock) {}

  now(): number {
    return this.clock.now();
  }

  pass(ms: number): Promise<void> {
    return this.clock.advance(ms);
  }

  async justBefore<T>(dueAt: Instant, step: () => Promise<T>): Promise<T> {
    await this.clock.advanceTo(ms(dueAt) - 1);
    return step();
  }

  stillBefore<T>(dueAt: Instant, step: () => Promise<T>): Promise<T> {
    if (this.clock.now() >= ms(dueAt)) {
      throw new Error(`The test is at ${iso(this.clock.now())}, already past ${iso(dueAt)}: this step was meant to come before it`);
    }
    return step();
  }

  async at<T>(dueAt: Instant, read: () => Promise<T>): Promise<T> {
    await this.clock.advanceTo(ms(dueAt));
    return read();
  }

  expectOnTime(firedAt: Instant | undefined, dueAt: Instant): void {
    expect(firedAt).toBeDefined();
    expect(iso(firedAt ?? NaN)).toBe(iso(dueAt));
  }

  expectDelay(from: Instant, to: Instant, delayMs: number): void {
    expect(ms(to) - ms(from)).toBe(delayMs);
  }
}

/** Redis's and PostgreSQL's clocks are the wall clock: the test waits for real, and polls. */
class RealShopTime implements ShopTime {
  constructor(private readonly driver: Exclude<ShopDriver, 'wheel'>) {}

  now(): number {
    return Date.now();
  }

  pass(delayMs: number): Promise<void> {
    return sleep(delayMs);
  }

  justBefore<T>(dueAt: Instant, step: () => Promise<T>): Promise<T> {
    return this.stillBefore(dueAt, step);
  }

  async stillBefore<T>(dueAt: Instant, step: () => Promise<T>): Promise<T> {
    // Settled first, judged after: a step that ended late is reported as such, whatever it returned.
    const outcome = await step().then(
      (value): Outcome<T> => ({ ok: true, value }),
      (error: unknown): Outcome<T> => ({ ok: false, error }),
    );
    const doneAt = Date.now();
    if (doneAt >= ms(dueAt)) {
      throw new StepTooLateError(
        `A step meant to come before ${iso(dueAt)} only finished at ${iso(doneAt)}: this machine is too slow for ` +
          `the short timeouts of DRIVER_PROFILES.${this.driver} (test/shop/shop-drivers.ts); raise them`,
      );
    }
    if (!outcome.ok) throw outcome.error;
    return outcome.value;
  }

  async at<T>(dueAt: Instant, read: () => Promise<T>, settled: (value: T) => boolean): Promise<T> {
    const deadline = ms(dueAt) + REDIS_POLL_DEADLINE_MS;
    for (;;) {
      const value = await read();
      if (settled(value) || Date.now() >= deadline) return value;
      await sleep(REDIS_POLL_EVERY_MS);
    }
  }

  expectOnTime(firedAt: Instant | undefined, dueAt: Instant): void {
    expect(firedAt).toBeDefined();
    const lateMs = ms(firedAt ?? NaN) - ms(dueAt);
    expect(lateMs).toBeGreaterThanOrEqual(0);
    expect(lateMs).toBeLessThanOrEqual(REAL_TIME_MAX_LATE_MS);
    if (process.env.SHOP_E2E_TIMINGS) process.stdout.write(`  [shop ${this.driver}] ran ${lateMs} ms after its due time ${iso(dueAt)}\n`);
  }

  expectDelay(from: Instant, to: Instant, delayMs: number): void {
    const actual = ms(to) - ms(from);
    expect(actual).toBeGreaterThanOrEqual(delayMs);
    // Less than the delay itself, however busy the machine: a delay counted twice still fails.
    expect(actual).toBeLessThan(delayMs + Math.min(REAL_TIME_ROUND_TRIP_MS, delayMs));
  }
}

type Outcome<T> = { ok: true; value: T } | { ok: false; error: unknown };

/** A step meant to come before a due time finished after it (real time only: the machine was too busy). */
export class StepTooLateError extends Error {
  override readonly name = 'StepTooLateError';
}

/** How long a case run by againWhenLate keeps starting new attempts (its Jest timeout is AGAIN_WHEN_LATE_TIMEOUT_MS). */
const AGAIN_WHEN_LATE_WITHIN_MS = 40_000;
/** The Jest timeout of a case run by againWhenLate: its last attempt starts within AGAIN_WHEN_LATE_WITHIN_MS. */
export const AGAIN_WHEN_LATE_TIMEOUT_MS = 60_000;

/**
 * Runs a case that makes its own fresh orders again, up to `attempts` times in all and while less than
 * AGAIN_WHEN_LATE_WITHIN_MS have gone by, while one of its steps ends too late (StepTooLateError): on a machine busy
 * with other work, a few HTTP calls can outlast the short real-time timeouts, which says nothing about the shop. Any
 * other failure fails at once; the last StepTooLateError is thrown when no attempt is left.
 */
export async function againWhenLate(attempt: () => Promise<void>, attempts = 5): Promise<void> {
  const startedAt = Date.now();
  for (let n = 1; ; n++) {
    try {
      await attempt();
      return;
    } catch (error) {
      if (!(error instanceof StepTooLateError) || n >= attempts || Date.now() - startedAt >= AGAIN_WHEN_LATE_WITHIN_MS) throw error;
    }
  }
}

/** A due time the shop returned (paymentDueAt, autoRateAt, offlineDueAt); a missing one fails the test, named. */
export function dueTime(at: string | undefined, what: string): string {
  if (at === undefined) throw new Error(`The shop returned no ${what}`);
  return at;
}

export function ms(instant: Instant): number {
  const value = typeof instant === 'number' ? instant : Date.parse(instant);
  if (!Number.isFinite(value)) throw new Error(`Not a time: ${JSON.stringify(instant)}`);
  return value;
}

function iso(instant: Instant): string {
  return new Date(ms(instant)).toISOString();
}

export function sleep(delayMs: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, delayMs));
}
