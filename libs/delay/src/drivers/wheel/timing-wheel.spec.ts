import { ActionArena } from './action-arena';
import { TimingWheel } from './timing-wheel';

/** A small deterministic PRNG (mulberry32), so a failure can be replayed from its seed. */
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

/** A wheel with tick 1 ms and origin 0, so a due time in ms is its due tick. */
function makeWheel(): { arena: ActionArena; wheel: TimingWheel; add: (dueTick: number) => number } {
  const arena = new ActionArena();
  const wheel = new TimingWheel(arena, 0, 1);
  const add = (dueTick: number): number => {
    const i = arena.alloc(0, `k${dueTick}`, undefined, dueTick);
    wheel.insert(i);
    return i;
  };
  return { arena, wheel, add };
}

/**
 * Runs the wheel the way the driver does: jump to the next deadline, advance
 * there, repeat. Returns the tick at which each action fell due, and how
 * many times the wheel had to wake up.
 */
function runUntilEmpty(wheel: TimingWheel, limitTick = Number.MAX_SAFE_INTEGER): { firedAt: Map<number, number>; order: number[]; wakeUps: number } {
  const firedAt = new Map<number, number>();
  const order: number[] = [];
  let wakeUps = 0;
  for (let deadline = wheel.nextDeadline(); deadline <= limitTick; deadline = wheel.nextDeadline()) {
    wakeUps++;
    wheel.advance(deadline, (i) => {
      expect(firedAt.has(i)).toBe(false);
      firedAt.set(i, deadline);
      order.push(i);
    });
  }
  return { firedAt, order, wakeUps };
}

describe('TimingWheel', () => {
  it('hands out actions in due-time order, whatever order they were filed in', () => {
    const next = random(1);
    const { arena, wheel, add } = makeWheel();
    const ids = Array.from({ length: 2_000 }, () => add(1 + Math.floor(next() * 5_000_000)));
    const { order } = runUntilEmpty(wheel);
    expect(order).toHaveLength(ids.length);
    const dueTimes = order.map((i) => arena.dueAt[i]);
    expect(dueTimes).toEqual([...dueTimes].sort((a, b) => a - b));
  });

  it('keeps due-time order when one late advance covers many buckets at once', () => {
    const next = random(2);
    const { arena, wheel, add } = makeWheel();
    for (let n = 0; n < 2_000; n++) add(1 + Math.floor(next() * 100_000));
    const dueTimes: number[] = [];
    wheel.advance(200_000, (i) => dueTimes.push(arena.dueAt[i]));
    expect(dueTimes).toHaveLength(2_000);
    expect(dueTimes).toEqual([...dueTimes].sort((a, b) => a - b));
    expect(wheel.nextDeadline()).toBe(Infinity);
  });

  it('fires actions many revolutions and levels ahead exactly on their tick', () => {
    const { wheel, add } = makeWheel();
    const dueTicks = [1, 31, 32, 33, 1_023, 1_024, 1_025, 32 ** 3 + 7, 32 ** 4 - 1, 32 ** 5 * 3 + 32 ** 2 + 5, 32 ** 7 + 1, 2 ** 45 + 12_345];
    const ids = dueTicks.map(add);
    const { firedAt, wakeUps } = runUntilEmpty(wheel);
    expect(ids.map((i) => firedAt.get(i))).toEqual(dueTicks);
    // Each action is re-filed at most once per level: the wheel never walks the empty ticks in between.
    expect(wakeUps).toBeLessThanOrEqual(dueTicks.length * 10);
  });

  it('never hands out an action before its due time, and at most one tick after it', () => {
    const next = random(3);
    const arena = new ActionArena();
    const tickMs = 100;
    const origin = 1_000_000;
    const wheel = new TimingWheel(arena, origin, tickMs);
    const ids: number[] = [];
    for (let n = 0; n < 3_000; n++) {
      const i = arena.alloc(0, `k${n}`, undefined, origin + 1 + next() * 50_000_000);
      if (wheel.insert(i) >= 0) ids.push(i);
    }
    const seen = new Set<number>();
    for (let deadline = wheel.nextDeadline(); deadline !== Infinity; deadline = wheel.nextDeadline()) {
      const now = wheel.timeOf(deadline);
      wheel.advance(wheel.tickAt(now), (i) => {
        seen.add(i);
        expect(now).toBeGreaterThanOrEqual(arena.dueAt[i]);
        expect(now - arena.dueAt[i]).toBeLessThan(tickMs);
      });
    }
    expect(seen.size).toBe(ids.length);
  });

  it('files an action that is already due nowhere and reports it with -1', () => {
    const { arena, wheel, add } = makeWheel();
    add(5);
    wheel.advance(10, () => undefined);
    const late = arena.alloc(0, 'late', undefined, 7);
    expect(wheel.insert(late)).toBe(-1);
    const onTime = arena.alloc(0, 'on-time', undefined, 10);
    expect(wheel.insert(onTime)).toBe(-1);
    const future = arena.alloc(0, 'future', undefined, 11);
    expect(wheel.insert(future)).toBe(11);
  });

  it('forgets a removed action, and its bucket when that was the last one in it', () => {
    const { wheel, add } = makeWheel();
    const a = add(100);
    const b = add(100);
    const c = add(5_000);
    wheel.remove(b);
    const first = runUntilEmpty(wheel, 100);
    expect([...first.firedAt.keys()]).toEqual([a]);
    wheel.remove(c);
    expect(wheel.nextDeadline()).toBe(Infinity);
  });

  it('reports the first bucket with work as the next deadline, and Infinity when empty', () => {
    const { wheel, add } = makeWheel();
    expect(wheel.nextDeadline()).toBe(Infinity);
    add(20);
    expect(wheel.nextDeadline()).toBe(20);
    // 40 is in the next revolution of level 0: its level-1 bucket is visited at tick 32.
    add(40);
    add(10);
    expect(wheel.nextDeadline()).toBe(10);
  });

  it('maps times to ticks and back around its origin', () => {
    const wheel = new TimingWheel(new ActionArena(), 1_000, 100);
    expect(wheel.tickAt(1_000)).toBe(0);
    expect(wheel.tickAt(1_099)).toBe(0);
    expect(wheel.tickAt(1_100)).toBe(1);
    expect(wheel.timeOf(3)).toBe(1_300);
  });
});

describe('TimingWheel bucket order', () => {
  it('fires actions due in the same tick in the order they were filed, on every level', () => {
    const { wheel, add } = makeWheel();
    // Same tick, near (level 0) and far (filed high, cascaded down): first in, first out.
    const near = [add(5), add(5), add(5)];
    const far = [add(40_000), add(40_000), add(40_000)];
    const { order } = runUntilEmpty(wheel);
    expect(order).toEqual([...near, ...far]);
  });
});
