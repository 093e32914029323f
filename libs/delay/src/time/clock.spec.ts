import { SystemClock } from 'nestjs-delay';

const MAX_TIMEOUT_MS = 2 ** 31 - 1;

describe('SystemClock', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('reads the system time', () => {
    jest.setSystemTime(1_234_567);
    expect(new SystemClock().now()).toBe(1_234_567);
  });

  it('fires a timer on time', () => {
    const clock = new SystemClock();
    const fired = jest.fn();
    clock.setTimer(fired, 1_000);
    jest.advanceTimersByTime(999);
    expect(fired).not.toHaveBeenCalled();
    jest.advanceTimersByTime(1);
    expect(fired).toHaveBeenCalledTimes(1);
  });

  it('chains timers longer than 2^31 - 1 ms instead of letting setTimeout overflow and fire at once', () => {
    const clock = new SystemClock();
    const fired = jest.fn();
    const delays: number[] = [];
    const realSetTimeout = global.setTimeout;
    const spy = jest.spyOn(global, 'setTimeout').mockImplementation(((callback: () => void, ms?: number) => {
      delays.push(ms ?? 0);
      return realSetTimeout(callback, ms);
    }) as typeof setTimeout);
    const delayMs = 2 * MAX_TIMEOUT_MS + 5_000; // ~50 days
    clock.setTimer(fired, delayMs);
    jest.advanceTimersByTime(delayMs - 1);
    expect(fired).not.toHaveBeenCalled();
    jest.advanceTimersByTime(1);
    expect(fired).toHaveBeenCalledTimes(1);
    spy.mockRestore();
    expect(Math.max(...delays)).toBeLessThanOrEqual(MAX_TIMEOUT_MS);
  });

  it('cancels a chained timer in any link of the chain', () => {
    const clock = new SystemClock();
    const fired = jest.fn();
    const handle = clock.setTimer(fired, MAX_TIMEOUT_MS + 10_000);
    jest.advanceTimersByTime(MAX_TIMEOUT_MS + 1);
    clock.clearTimer(handle);
    jest.advanceTimersByTime(MAX_TIMEOUT_MS);
    expect(fired).not.toHaveBeenCalled();
  });
});
