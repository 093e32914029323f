import { compileRecurrence, NormalizedRecurrence } from './compile-recurrence';
import type { NextOccurrence } from './next-occurrence';
import { recurrenceOf } from './series-state';

const CACHE_SIZE = 1024;

/**
 * Stored recurrences compiled once each, the most recently used kept (at
 * most 1024): schedules listed or written together mostly share a few.
 */
export class CompiledRecurrences {
  private readonly compiled = new Map<string, NextOccurrence>();

  get(spec: NormalizedRecurrence): NextOccurrence {
    const id = JSON.stringify(spec);
    let compiled = this.compiled.get(id);
    if (compiled) {
      this.compiled.delete(id);
    } else {
      // Stored, so checked when written: the smallest spacing is not checked again.
      compiled = compileRecurrence(recurrenceOf(spec), { minIntervalMs: 0 });
      if (this.compiled.size >= CACHE_SIZE) this.compiled.delete(this.compiled.keys().next().value as string);
    }
    this.compiled.set(id, compiled);
    return compiled;
  }
}
