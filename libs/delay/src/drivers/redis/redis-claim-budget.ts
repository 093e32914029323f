/**
 * The handler slots of one topic in this process (its `concurrency`),
 * shared by the consumers of the topic's shards. A consumer takes slots
 * before it claims and gives back what it did not fill; one that found more
 * due work than it could take waits in line, and freed slots go to the
 * waiting consumers in turn, so a busy shard cannot starve the others.
 * With one shard it is a plain counter.
 */
export class ClaimBudget {
  private used = 0;
  /** Consumers waiting for a slot, in the order they started waiting (a Set keeps insertion order). */
  private readonly waiting = new Set<() => void>();

  constructor(readonly limit: number) {}

  get hasRoom(): boolean {
    return this.used < this.limit;
  }

  /**
   * Takes up to `want` slots: at most an even share of the free ones between
   * this consumer and those waiting in line, so one claim cannot take every
   * slot while other shards have work too.
   */
  take(want: number): number {
    const free = this.limit - this.used;
    const share = Math.ceil(free / (this.waiting.size + 1));
    const taken = Math.max(0, Math.min(want, share));
    this.used += taken;
    return taken;
  }

  /** Gives back `count` slots and wakes as many waiting consumers, first come first served. */
  give(count: number): void {
    if (count <= 0) return;
    this.used -= count;
    let free = this.limit - this.used;
    for (const wake of this.waiting) {
      if (free <= 0) break;
      this.waiting.delete(wake);
      free--;
      wake();
    }
  }

  /** `wake` is called once a slot frees (once, however often it asked). */
  waitForRoom(wake: () => void): void {
    this.waiting.add(wake);
  }

  /** A stopped consumer leaves the line. */
  leave(wake: () => void): void {
    this.waiting.delete(wake);
  }
}
