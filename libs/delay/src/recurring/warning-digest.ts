/** Where a WarningDigest writes its lines (a Nest Logger). */
export interface WarningSink {
  warn(message: string): void;
}

/** One kind of repeated warning of one topic: how its lines read. */
export interface WarningKind {
  /** The line of a single warning, written at once when its topic has been quiet for an interval. */
  one(topic: string, key: string, count: number, detail: string): string;
  /** The line of the warnings gathered over an interval. */
  many(topic: string, tally: WarningTally, intervalMs: number): string;
}

/** What an interval gathered of one kind and topic. */
export interface WarningTally {
  /** How many warnings (ticks). */
  readonly events: number;
  /** The sum of their counts (occurrences). */
  readonly total: number;
  /** The latest warning's key and detail, as an example. */
  readonly lastKey: string;
  readonly lastDetail: string;
}

interface Open {
  readonly kind: WarningKind;
  readonly topic: string;
  events: number;
  total: number;
  lastKey: string;
  lastDetail: string;
}

/**
 * Keeps a flood of the same warning (thousands of schedules missing runs at
 * once, a store down under every tick) to one line per topic, kind and
 * interval. The first warning after a quiet interval is written at once; the
 * ones that follow within the interval are counted and written as one line
 * when it ends, and while they keep coming each interval ends with one such
 * line. flush() writes what is gathered (at shutdown).
 */
export class WarningDigest {
  private readonly open = new Map<string, Open>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly sink: WarningSink,
    readonly intervalMs: number,
  ) {}

  note(kind: WarningKind, name: string, topic: string, key: string, count: number, detail: string): void {
    const id = `${name}\u0000${topic}`;
    const open = this.open.get(id);
    if (open === undefined) {
      this.sink.warn(kind.one(topic, key, count, detail));
      this.open.set(id, { kind, topic, events: 0, total: 0, lastKey: key, lastDetail: detail });
      this.arm();
      return;
    }
    open.events++;
    open.total += count;
    open.lastKey = key;
    open.lastDetail = detail;
  }

  /** Writes the gathered lines and forgets the intervals: the next warning is written at once. */
  flush(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.writeGathered();
    this.open.clear();
  }

  private arm(): void {
    if (this.timer !== undefined) return;
    this.timer = setTimeout(() => this.endInterval(), this.intervalMs);
    this.timer.unref();
  }

  /** One line per topic and kind that gathered warnings; those stay open for another interval, the quiet ones close. */
  private endInterval(): void {
    this.timer = undefined;
    for (const [id, open] of this.open) {
      if (open.events === 0) this.open.delete(id);
    }
    this.writeGathered();
    for (const open of this.open.values()) {
      open.events = 0;
      open.total = 0;
    }
    if (this.open.size > 0) this.arm();
  }

  private writeGathered(): void {
    for (const open of this.open.values()) {
      if (open.events === 0) continue;
      this.sink.warn(open.kind.many(open.topic, { events: open.events, total: open.total, lastKey: open.lastKey, lastDetail: open.lastDetail }, this.intervalMs));
    }
  }
}
