import { planBufferOne } from './buffer-one';

describe('planBufferOne', () => {
  it('nothing held back, nothing due: nothing to decide', () => {
    expect(planBufferOne(undefined, [])).toBeUndefined();
  });

  it('one instant due: created if nothing is alive, else held back', () => {
    expect(planBufferOne(undefined, [10])).toEqual({ free: { create: 10, buffered: undefined, skipped: [] }, alive: { buffered: 10, skipped: [] } });
  });

  it('one held back and a new one due: the held one is created first and the new one held behind it; while alive, the held one keeps its place and the new one is skipped', () => {
    expect(planBufferOne(5, [10])).toEqual({ free: { create: 5, buffered: 10, skipped: [] }, alive: { buffered: 5, skipped: [10] } });
  });

  it('a catch-up of several: one created, the next held back, the others skipped', () => {
    expect(planBufferOne(undefined, [1, 2, 3, 4])).toEqual({ free: { create: 1, buffered: 2, skipped: [3, 4] }, alive: { buffered: 1, skipped: [2, 3, 4] } });
  });

  it('an instant not after the held one (a replanned tick) is not taken twice', () => {
    expect(planBufferOne(5, [5, 6])).toEqual({ free: { create: 5, buffered: 6, skipped: [] }, alive: { buffered: 5, skipped: [6] } });
  });
});
