import { compileRecurrence, NormalizedRecurrence } from './compile-recurrence';
import type { NextOccurrence } from './next-occurrence';
import { recurrenceOf } from './series-state';

const CACHE_SIZE = 1024;

/** A compiled recurrence and its last answer: `after(from)` for every `from` in [from, next) is `next`. */
interface Entry {
  readonly recurrence: NextOccurrence;
  from: number;
  next: number | null;
}

/**
 * Stored recurrences compiled once each, the most recently used kept (at
 * most 1024): schedules listed, written or ticking together mostly share a
 * few. Each keeps its last answer: schedules made at about the same time
 * share their next run, which is then not walked again.
 */
export class CompiledRecurrences {
  private readonly entries = new Map<string, Entry>();
  /** The id of each spec object seen: a decoded tick's spec is shared (decodeSeriesState), so it is serialized once, not at every tick. */
  private readonly ids = new WeakMap<NormalizedRecurrence, string>();
  /** The spec asked last and its entry (the most recently used, so kept in the cache until others are asked). */
  private lastSpec: NormalizedRecurrence | undefined;
  private lastEntry: Entry | undefined;

  /** The first occurrence of `spec` strictly after `from`, null if none. */
  after(spec: NormalizedRecurrence, from: number): number | null {
    const entry = this.entry(spec);
    // No occurrence lies strictly between entry.from and entry.next: any from in [entry.from, entry.next) has the same answer.
    if (entry.next !== null && from >= entry.from && from < entry.next) return entry.next;
    const next = entry.recurrence.after(from);
    entry.from = from;
    entry.next = next;
    return next;
  }

  /** The compiled recurrence of a stored spec (for a tick's plan). */
  recurrence(spec: NormalizedRecurrence): NextOccurrence {
    return this.entry(spec).recurrence;
  }

  private entry(spec: NormalizedRecurrence): Entry {
    // The schedules ticking together mostly share one spec object (decodeSeriesState): the most recent needs no lookup.
    if (spec === this.lastSpec && this.lastEntry !== undefined) return this.lastEntry;
    const entry = this.lookUp(spec);
    this.lastSpec = spec;
    this.lastEntry = entry;
    return entry;
  }

  private lookUp(spec: NormalizedRecurrence): Entry {
    let id = this.ids.get(spec);
    if (id === undefined) {
      id = JSON.stringify(spec);
      this.ids.set(spec, id);
    }
    let entry = this.entries.get(id);
    if (entry) {
      this.entries.delete(id);
    } else {
      // Stored, so checked when written: the smallest spacing is not checked again.
      entry = { recurrence: compileRecurrence(recurrenceOf(spec), { minIntervalMs: 0 }), from: Infinity, next: null };
      if (this.entries.size >= CACHE_SIZE) this.entries.delete(this.entries.keys().next().value as string);
    }
    this.entries.set(id, entry);
    return entry;
  }
}
