import { ActionArena, NIL } from './action-arena';

/**
 * A hierarchical timing wheel (the shape Kafka's purgatory and tokio's timer
 * use) over arena indices.
 *
 * Time is counted in ticks from the driver's origin. Level L has 32 buckets,
 * each spanning 32^L ticks; an action is filed at the level of the highest
 * base-32 digit in which its due tick differs from the current tick. When
 * the current tick reaches a bucket of level L > 0, its actions are re-filed
 * one level down or more, until they reach level 0 and fall due. Compared to
 * a single ring of slots with round counters, nothing is re-visited each
 * revolution: an action is touched at most once per level (ten levels),
 * whatever its delay, and an idle wheel has no work until its next bucket.
 *
 * Ten levels of 32 cover 2^50 ticks: millennia even at a 1 ms tick.
 */
const SLOTS = 32;
const LEVELS = 10;
/** SPAN[L] = ticks covered by one bucket of level L = 32^L. */
const SPAN = Array.from({ length: LEVELS + 1 }, (_, level) => SLOTS ** level);
/** Ticks below this (2^30) take insert's fast path: bit operations work on 32-bit integers. */
const SMALL_TICKS = 2 ** 30;

export class TimingWheel {
  /** Ticks up to and including `elapsed` have been processed. */
  private elapsed = 0;
  private readonly heads = new Int32Array(LEVELS * SLOTS).fill(NIL);
  /** Buckets are FIFO: actions due in the same tick fire in the order they were filed. */
  private readonly tails = new Int32Array(LEVELS * SLOTS).fill(NIL);
  /** Bit s of occupied[L] is set when bucket s of level L is non-empty. */
  private readonly occupied = new Int32Array(LEVELS);

  /**
   * @param origin the time (ms) of tick 0
   * @param tickMs the length of one tick: the wheel's precision
   */
  constructor(
    private readonly arena: ActionArena,
    private readonly origin: number,
    private readonly tickMs: number,
  ) {}

  /** The tick that contains time `ms`. */
  tickAt(ms: number): number {
    return Math.floor((ms - this.origin) / this.tickMs);
  }

  /** The time (ms) at which tick `tick` starts. */
  timeOf(tick: number): number {
    return this.origin + tick * this.tickMs;
  }

  /**
   * Files action i by its due time. Returns the tick at which its bucket
   * must be visited, or -1 if the action is already due (the caller runs it).
   */
  insert(i: number): number {
    const elapsed = this.elapsed;
    // The first tick boundary at or after the due time: never early, at most one tick late.
    const when = Math.ceil((this.arena.dueAt[i] - this.origin) / this.tickMs);
    if (when <= elapsed) return -1;
    let level: number;
    let slot: number;
    let deadline: number;
    if (when < SMALL_TICKS) {
      // Both ticks fit in 30 bits (34 years of 1 s ticks, 12 days of 1 ms ticks): the level is the
      // base-32 digit of their highest differing bit, found with bit operations instead of ten divisions.
      level = ((31 - Math.clz32(elapsed ^ when)) / 5) | 0;
      const shift = level * 5;
      slot = (when >>> shift) & (SLOTS - 1);
      deadline = ((elapsed >>> (shift + 5)) << (shift + 5)) + (slot << shift);
    } else {
      level = LEVELS - 1;
      while (level > 0 && Math.floor(elapsed / SPAN[level]) === Math.floor(when / SPAN[level])) level--;
      slot = Math.floor(when / SPAN[level]) % SLOTS;
      deadline = Math.floor(elapsed / SPAN[level + 1]) * SPAN[level + 1] + slot * SPAN[level];
    }
    const bucket = level * SLOTS + slot;
    const { next, prev, where } = this.arena;
    const tail = this.tails[bucket];
    next[i] = NIL;
    prev[i] = tail;
    if (tail === NIL) this.heads[bucket] = i;
    else next[tail] = i;
    this.tails[bucket] = i;
    where[i] = bucket;
    this.occupied[level] |= 1 << slot;
    return deadline;
  }

  /** Unfiles action i, which must be in a bucket. */
  remove(i: number): void {
    const { next, prev, where } = this.arena;
    const bucket = where[i];
    if (prev[i] === NIL) this.heads[bucket] = next[i];
    else next[prev[i]] = next[i];
    if (next[i] === NIL) this.tails[bucket] = prev[i];
    else prev[next[i]] = prev[i];
    if (this.heads[bucket] === NIL) {
      this.occupied[Math.floor(bucket / SLOTS)] &= ~(1 << bucket % SLOTS);
    }
  }

  /** The tick at which the earliest non-empty bucket must be visited, or Infinity. */
  nextDeadline(): number {
    let best = Infinity;
    for (let level = 0; level < LEVELS; level++) {
      const deadline = this.bucketDeadline(level);
      if (deadline < best) best = deadline;
    }
    return best;
  }

  /**
   * Moves the wheel to `nowTick`, visiting every bucket whose deadline has
   * passed in deadline order; `onDue` receives each action that fell due.
   * Cost: the actions due plus those moved down a level, nothing else.
   */
  advance(nowTick: number, onDue: (i: number) => void): void {
    for (;;) {
      let level = -1;
      let deadline = Infinity;
      for (let l = 0; l < LEVELS; l++) {
        const d = this.bucketDeadline(l);
        if (d < deadline) {
          deadline = d;
          level = l;
        }
      }
      if (level < 0 || deadline > nowTick) break;
      if (deadline > this.elapsed) this.elapsed = deadline;

      const slot = Math.floor(deadline / SPAN[level]) % SLOTS;
      const bucket = level * SLOTS + slot;
      let i = this.heads[bucket];
      this.heads[bucket] = NIL;
      this.tails[bucket] = NIL;
      this.occupied[level] &= ~(1 << slot);
      const next = this.arena.next;
      while (i !== NIL) {
        const following = next[i];
        if (this.insert(i) < 0) onDue(i);
        i = following;
      }
    }
    if (nowTick > this.elapsed) this.elapsed = nowTick;
  }

  private bucketDeadline(level: number): number {
    const bits = this.occupied[level];
    if (bits === 0) return Infinity;
    const position = Math.floor(this.elapsed / SPAN[level]) % SLOTS;
    const ahead = bits & (-1 << position);
    // Buckets behind the current position cannot be occupied (they were
    // visited on the way); `bits` is checked as a fallback all the same.
    const candidates = ahead !== 0 ? ahead : bits;
    const slot = 31 - Math.clz32(candidates & -candidates);
    return Math.floor(this.elapsed / SPAN[level + 1]) * SPAN[level + 1] + slot * SPAN[level];
  }
}
