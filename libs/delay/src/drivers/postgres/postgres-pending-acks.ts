/**
 * Completions of one consumer's runs waiting to be recorded, in batches.
 * A batch is recorded by one statement: the topic's next claim (which
 * deletes completed rows besides claiming, so a drain commits once per
 * claim), or a completion statement of its own. Every run waits on its
 * batch's `done`, which settles once the batch is recorded (true) or given
 * up on (false).
 */
export class AckBatch {
  readonly members: string[] = [];
  readonly tokens: string[] = [];
  /** A recurring occurrence's start time (its last run is recorded with it), null for any other run. */
  readonly startedAt: Array<number | null> = [];
  readonly done: Promise<boolean>;
  private resolve!: (recorded: boolean) => void;

  constructor(private readonly parts: readonly AckBatch[] = []) {
    this.done = new Promise<boolean>((resolve) => (this.resolve = resolve));
    for (const part of parts) {
      this.members.push(...part.members);
      this.tokens.push(...part.tokens);
      this.startedAt.push(...part.startedAt);
    }
  }

  get size(): number {
    return this.members.length;
  }

  /** The statement that recorded it returned (true), or recording was given up (false: the lease then brings the runs back). */
  recorded(recorded = true): void {
    this.resolve(recorded);
    for (const part of this.parts) part.recorded(recorded);
  }
}

export class PendingAcks {
  /** Completions a claim can carry. */
  private plain = new AckBatch();
  /** Completions of recurring occurrences, which also record their schedule's last run: never carried by a claim. */
  private occurrences = new AckBatch();
  /** A statement of their own is queued for what no claim takes in this turn. */
  flushQueued = false;

  add(member: string, token: string, startedAt: number | null): Promise<boolean> {
    const batch = startedAt === null ? this.plain : this.occurrences;
    batch.members.push(member);
    batch.tokens.push(token);
    batch.startedAt.push(startedAt);
    return batch.done;
  }

  /** The completions a claim carries (possibly none). */
  takeForClaim(): AckBatch {
    const taken = this.plain;
    this.plain = new AckBatch();
    return taken;
  }

  /** The completions of recurring occurrences waiting, or undefined if there is none. */
  takeOccurrences(): AckBatch | undefined {
    const taken = this.occurrences;
    this.occurrences = new AckBatch();
    return taken.size > 0 ? taken : undefined;
  }

  /** Every completion still waiting, as one batch, or undefined if there is none. */
  takeAll(): AckBatch | undefined {
    const parts = [this.plain, this.occurrences].filter((batch) => batch.size > 0);
    this.plain = new AckBatch();
    this.occurrences = new AckBatch();
    if (parts.length === 0) return undefined;
    return parts.length === 1 ? parts[0] : new AckBatch(parts);
  }
}
