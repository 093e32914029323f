import { VirtualClock } from 'nestjs-delay/testing';

describe('VirtualClock', () => {
  it('starts at the current time by default, so an `at` built from Date.now() is valid on it', () => {
    const before = Date.now();
    const clock = new VirtualClock();
    expect(clock.now()).toBeGreaterThanOrEqual(before);
    expect(clock.now()).toBeLessThanOrEqual(Date.now());
  });

  it('refuses a start that is not a time', () => {
    expect(() => new VirtualClock(new Date('not a date'))).toThrow(RangeError);
    expect(() => new VirtualClock(Number.NaN)).toThrow(RangeError);
  });

  it('starts at the given time and only moves when told', async () => {
    const clock = new VirtualClock(new Date('2031-05-01T00:00:00Z'));
    const start = clock.now();
    expect(start).toBe(Date.UTC(2031, 4, 1));
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(clock.now()).toBe(start);
    await clock.advance('1h30m');
    expect(clock.now()).toBe(start + 5_400_000);
    await clock.advanceTo(start + 7_200_000);
    expect(clock.now()).toBe(start + 7_200_000);
  });

  it('fires the timers due within an advance in time order, each at its own time', async () => {
    const clock = new VirtualClock(0);
    const fired: Array<[string, number]> = [];
    clock.setTimer(() => fired.push(['c', clock.now()]), 300);
    clock.setTimer(() => fired.push(['a', clock.now()]), 100);
    clock.setTimer(() => fired.push(['b', clock.now()]), 100);
    clock.setTimer(() => fired.push(['late', clock.now()]), 10_000);
    expect(clock.pendingTimers).toBe(4);
    await clock.advance(300);
    expect(fired).toEqual([
      ['a', 100],
      ['b', 100],
      ['c', 300],
    ]);
    expect(clock.pendingTimers).toBe(1);
  });

  it('fires a timer set by a timer within the same advance', async () => {
    const clock = new VirtualClock(0);
    const fired: number[] = [];
    clock.setTimer(() => {
      fired.push(clock.now());
      clock.setTimer(() => fired.push(clock.now()), 50);
    }, 100);
    await clock.advance(1_000);
    expect(fired).toEqual([100, 150]);
  });

  it('never fires a cleared timer', async () => {
    const clock = new VirtualClock(0);
    const fired = jest.fn();
    const handle = clock.setTimer(fired, 10);
    clock.clearTimer(handle);
    await clock.advance('1d');
    expect(fired).not.toHaveBeenCalled();
    expect(clock.pendingTimers).toBe(0);
  });

  it('waits for tracked work to settle before advance returns', async () => {
    const clock = new VirtualClock(0);
    let busy = 0;
    clock.trackIdle(async () => {
      while (busy > 0) await new Promise((resolve) => setImmediate(resolve));
    });
    let done = false;
    clock.setTimer(() => {
      busy++;
      void new Promise((resolve) => setTimeout(resolve, 20)).then(() => {
        done = true;
        busy--;
      });
    }, 10);
    await clock.advance(10);
    expect(done).toBe(true);
  });

  it('refuses to move backwards', async () => {
    const clock = new VirtualClock(1_000);
    await expect(clock.advanceTo(999)).rejects.toBeInstanceOf(RangeError);
    await expect(clock.advanceTo(Number.NaN)).rejects.toBeInstanceOf(RangeError);
    expect(clock.now()).toBe(1_000);
  });
});
