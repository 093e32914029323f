/** A consumer of one shard, as the budget knows it: the function that makes it claim again. */
export type BudgetMember = () => void;

/**
 * The handler slots of one topic in this process (its `concurrency`),
 * shared by the consumers of the topic's shards. A consumer takes slots
 * before it claims and gives back what it did not fill; one that found more
 * due work than it could take waits in line. Freed slots wake the waiting
 * consumers first come first served, and until a woken consumer has
 * claimed it still counts when the others' shares are worked out, so a
 * busy shard cannot take every slot freed at once. With one shard it is a
 * plain counter.
 */
export class ClaimBudget {
  private used = 0;
  /** Waiting for a slot, in the order they started waiting (a Set keeps insertion order). */
  private readonly waiting = new Set<BudgetMember>();
  /** Woken by a freed slot and not yet claimed. */
  private readonly woken = new Set<BudgetMember>();

  constructor(readonly limit: number) {}

  get hasRoom(): boolean {
    return this.used < this.limit;
  }

  /**
   * Takes up to `want` slots for `member`: at most an even share of the
   * free ones between it and the consumers waiting or woken.
   */
  take(want: number, member: BudgetMember): number {
    this.waiting.delete(member);
    this.woken.delete(member);
    const free = this.limit - this.used;
    const share = Math.ceil(free / (this.waiting.size + this.woken.size + 1));
    const taken = Math.max(0, Math.min(want, share));
    this.used += taken;
    return taken;
  }

  /** Counts slots in use that were not taken first (a claim asked again hands back what it took earlier, whatever it asks now). */
  occupy(count: number): void {
    if (count > 0) this.used += count;
  }

  /** Gives back `count` slots and wakes as many waiting consumers, first come first served. */
  give(count: number): void {
    if (count <= 0) return;
    this.used -= count;
    let free = this.limit - this.used;
    for (const member of this.waiting) {
      if (free <= 0) break;
      this.waiting.delete(member);
      this.woken.add(member);
      free--;
      member();
    }
  }

  /** `member` is called once a slot frees (once, however often it asked). */
  waitForRoom(member: BudgetMember): void {
    if (!this.woken.has(member)) this.waiting.add(member);
  }

  /** A stopped consumer leaves the line. */
  leave(member: BudgetMember): void {
    this.waiting.delete(member);
    this.woken.delete(member);
  }
}
