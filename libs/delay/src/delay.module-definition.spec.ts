import { DelayClock, DelayModuleOptions, InvalidDelayOptionsError, VirtualClock, WheelDriver } from 'nestjs-delay';
import { backoffDelay, resolveDelayOptions, resolveHandlerOptions } from './delay.module-definition';

function problemsOf(run: () => unknown): readonly string[] {
  let thrown: unknown;
  try {
    run();
  } catch (error) {
    thrown = error;
  }
  expect(thrown).toBeInstanceOf(InvalidDelayOptionsError);
  expect(thrown).toMatchObject({ code: 'ERR_DELAY_INVALID_OPTIONS' });
  return (thrown as InvalidDelayOptionsError).problems;
}

describe('resolveDelayOptions', () => {
  it('fills every default when given nothing', () => {
    expect(resolveDelayOptions()).toMatchObject({
      driver: { type: 'wheel' },
      clock: undefined,
      defaults: { attempts: 3, backoff: { type: 'exponential', delayMs: 1_000, maxDelayMs: 3_600_000 }, concurrency: 10 },
      maxPayloadBytes: 65_536,
      maxPastMs: 86_400_000,
      shutdownTimeoutMs: 10_000,
      consume: true,
    });
  });

  it('caps a batch at 4 MiB by default, or at maxPayloadBytes if larger, and refuses a cap below maxPayloadBytes', () => {
    expect(resolveDelayOptions().maxBatchBytes).toBe(4 * 1024 * 1024);
    expect(resolveDelayOptions({ maxPayloadBytes: 8_000_000 }).maxBatchBytes).toBe(8_000_000);
    expect(resolveDelayOptions({ maxBatchBytes: 100_000 }).maxBatchBytes).toBe(100_000);
    expect(problemsOf(() => resolveDelayOptions({ maxBatchBytes: 1_000 }))).toEqual(['maxBatchBytes (1000) must be at least maxPayloadBytes (65536)']);
    expect(problemsOf(() => resolveDelayOptions({ maxBatchBytes: 0 }))).toEqual(['maxBatchBytes must be a whole number >= 1, got 0']);
    expect(problemsOf(() => resolveDelayOptions({ maxBatchBytes: '1MB' as unknown as number }))).toEqual(['maxBatchBytes must be a whole number >= 1, got "1MB"']);
  });

  it('accepts and converts valid options', () => {
    const clock = new VirtualClock();
    const resolved = resolveDelayOptions({
      clock,
      driver: { type: 'wheel', tickMs: 5 },
      defaults: { attempts: 7, backoff: '2s', concurrency: 2 },
      maxPayloadBytes: 100,
      maxPast: '1h',
      shutdownTimeout: 500,
      consume: false,
    });
    expect(resolved.clock).toBe(clock);
    expect(resolved.driver).toEqual({ type: 'wheel', tickMs: 5 });
    expect(resolved.defaults).toEqual({ attempts: 7, backoff: { type: 'fixed', delayMs: 2_000, maxDelayMs: 2_000 }, concurrency: 2, timeoutMs: 300_000, transactional: false });
    expect(resolved).toMatchObject({ maxPayloadBytes: 100, maxPastMs: 3_600_000, shutdownTimeoutMs: 500, consume: false });
  });

  it('passes a driver instance through as it is', () => {
    const driver = new WheelDriver({ clock: new VirtualClock() });
    expect(resolveDelayOptions({ driver }).driver).toBe(driver);
  });

  it('lists every problem in one InvalidDelayOptionsError', () => {
    const bad = {
      driver: { type: 'wheel', tickMs: 0 },
      clock: { now: () => 0 },
      defaults: { attempts: 0, concurrency: 1.5, backoff: 'soon' },
      maxPayloadBytes: -1,
      maxPast: 'yesterday',
      shutdownTimeout: -5,
      consume: 'yes',
    } as unknown as DelayModuleOptions;
    const problems = problemsOf(() => resolveDelayOptions(bad));
    const mentions = ['driver.tickMs', 'clock', 'defaults.attempts', 'defaults.concurrency', 'defaults.backoff', 'maxPayloadBytes', 'maxPast', 'shutdownTimeout', 'consume'];
    expect(problems).toHaveLength(mentions.length);
    for (const name of mentions) expect(problems.some((problem) => problem.startsWith(name))).toBe(true);
  });

  it('names every problem in the error message, for the bootstrap log', () => {
    let message = '';
    try {
      resolveDelayOptions({ maxPayloadBytes: 0, driver: { type: 'wheel', tickMs: 60_001 } });
    } catch (error) {
      message = error instanceof Error ? error.message : '';
    }
    expect(message).toContain('maxPayloadBytes');
    expect(message).toContain('driver.tickMs');
  });

  it('rejects an unknown driver type and a driver that is not an object', () => {
    expect(problemsOf(() => resolveDelayOptions({ driver: { type: 'kafka' } } as unknown as DelayModuleOptions))).toEqual([
      expect.stringContaining('driver.type'),
    ]);
    expect(problemsOf(() => resolveDelayOptions({ driver: 'wheel' } as unknown as DelayModuleOptions))).toEqual([expect.stringContaining('driver')]);
  });

  it('accepts a postgres driver config and lists every problem of a bad one', () => {
    const good = { type: 'postgres', connectionString: 'postgres://app@db:5432/app', schema: 'delay_1', lease: '10s', pooler: 'transaction', vacuum: false } as const;
    expect(resolveDelayOptions({ driver: good, transactions: { ambient: () => undefined } }).driver).toBe(good);
    const problems = problemsOf(() =>
      resolveDelayOptions({
        driver: { type: 'postgres', connectionString: 'mysql://x', schema: 'Bad-Schema', migrate: 'yes', lease: '10ms', claimBatch: 5000, commandTimeout: 5, wakeCheck: 1, pooler: 'statement', vacuum: 'yes' },
      } as unknown as DelayModuleOptions),
    );
    expect(problems).toEqual([
      expect.stringContaining('driver.connectionString'),
      expect.stringContaining('driver.schema'),
      expect.stringContaining('driver.migrate'),
      expect.stringContaining('driver.lease'),
      expect.stringContaining('driver.claimBatch'),
      expect.stringContaining('driver.commandTimeout'),
      expect.stringContaining('driver.wakeCheck'),
      expect.stringContaining('driver.pooler'),
      expect.stringContaining('driver.vacuum must be true or false'),
    ]);
    expect(problemsOf(() => resolveDelayOptions({ driver: { type: 'postgres' } }))).toEqual([expect.stringContaining('connectionString')]);
    expect(problemsOf(() => resolveDelayOptions({ driver: { type: 'postgres', connectionString: 'postgres://x', pool: { connect: () => Promise.reject(new Error('unused')) } } }))).toEqual([
      expect.stringContaining('not both'),
    ]);
  });

  it('takes a recurringLease of at least 1s on Redis and PostgreSQL', () => {
    expect(resolveDelayOptions({ driver: { type: 'redis', recurringLease: '2s' } }).driver).toMatchObject({ recurringLease: '2s' });
    expect(problemsOf(() => resolveDelayOptions({ driver: { type: 'redis', recurringLease: '500ms' } }))).toEqual([expect.stringContaining('driver.recurringLease')]);
    const problems = problemsOf(() => resolveDelayOptions({ driver: { type: 'postgres', connectionString: 'postgres://x', recurringLease: 'soon' } }));
    expect(problems.length).toBeGreaterThan(0);
    expect(problems.every((problem) => problem.startsWith('driver.recurringLease'))).toBe(true);
  });

  it('rejects attempts above the ceiling and a malformed backoff object', () => {
    const problems = problemsOf(() => resolveDelayOptions({ defaults: { attempts: 1001, backoff: { type: 'linear', delay: '1s' } } } as unknown as DelayModuleOptions));
    expect(problems).toEqual([expect.stringContaining('defaults.attempts'), expect.stringContaining('defaults.backoff')]);
  });

  it('accepts any DelayClock subclass as the clock', () => {
    class FixedClock extends DelayClock {
      now(): number {
        return 42;
      }
      setTimer(): unknown {
        return undefined;
      }
      clearTimer(): void {}
    }
    const clock = new FixedClock();
    expect(resolveDelayOptions({ clock }).clock).toBe(clock);
  });
});

describe('resolveHandlerOptions', () => {
  const defaults = resolveDelayOptions().defaults;

  it('overrides the defaults field by field', () => {
    expect(resolveHandlerOptions({ attempts: 5 }, defaults, 'here')).toEqual({ ...defaults, attempts: 5 });
    expect(resolveHandlerOptions({ backoff: { type: 'exponential', delay: '1s', maxDelay: '10s' } }, defaults, 'here').backoff).toEqual({
      type: 'exponential',
      delayMs: 1_000,
      maxDelayMs: 10_000,
    });
  });

  it('takes transactional as a boolean only, and transactions.run only as a function on a driver that joins transactions', () => {
    expect(resolveHandlerOptions({ transactional: true }, defaults, 'here').transactional).toBe(true);
    expect(problemsOf(() => resolveHandlerOptions({ transactional: 'yes' as unknown as boolean }, defaults, 'here'))).toEqual([expect.stringContaining('transactional must be true or false')]);
    expect(problemsOf(() => resolveDelayOptions({ driver: { type: 'postgres', connectionString: 'postgres://x/y' }, transactions: { run: 'nope' as unknown as <T>(work: (tx: unknown) => Promise<T>) => Promise<T> } }))).toEqual([
      expect.stringContaining('transactions.run must be a function'),
    ]);
    expect(problemsOf(() => resolveDelayOptions({ driver: { type: 'wheel' }, transactions: { run: (work) => work(undefined) } }))).toEqual([
      expect.stringContaining('transactions.run needs a driver that joins transactions (postgres); the "wheel" driver cannot'),
    ]);
  });

  it('says where the bad options are', () => {
    let thrown: unknown;
    try {
      resolveHandlerOptions({ concurrency: 0 }, defaults, '@OnDelayExpired options of A.b');
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(InvalidDelayOptionsError);
    expect(thrown).toMatchObject({ where: '@OnDelayExpired options of A.b', problems: [expect.stringContaining('concurrency')] });
  });
});

describe('backoffDelay', () => {
  it('doubles an exponential backoff up to its ceiling and keeps a fixed one flat', () => {
    const exponential = { type: 'exponential', delayMs: 1_000, maxDelayMs: 5_000 } as const;
    expect([1, 2, 3, 4, 5].map((retry) => backoffDelay(exponential, retry))).toEqual([1_000, 2_000, 4_000, 5_000, 5_000]);
    const fixed = { type: 'fixed', delayMs: 300, maxDelayMs: 300 } as const;
    expect([1, 2, 3].map((retry) => backoffDelay(fixed, retry))).toEqual([300, 300, 300]);
  });
});
