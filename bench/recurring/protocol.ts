// What the recurring benchmark's main process and its worker processes share.
// The worker pool, the IPC messages and the report are the Redis bench's
// (../redis/worker-pool.ts, ../redis/protocol.ts); only the names differ.
import type { ContenderKind } from '../redis/protocol';

/** The nestjs-delay recurring topic and the BullMQ queue: the same short name for both. */
export const RECURRING_TOPIC = 'rec';
export const RECURRING_QUEUE = 'rec';
export const RECURRING_JOB = 'tick';

export interface RecurringWorkerConfig {
  readonly kind: ContenderKind;
  readonly url: string;
  readonly concurrency: number;
  /** No timer of the bench's own in the worker (no progress, no event-loop monitor): for measuring an idle worker's CPU. */
  readonly quiet: boolean;
}

/**
 * A run is reported under `occurrenceId(key, scheduledAt)` so the main
 * process can tell each occurrence apart (duplicates, misses); its `dueAt`
 * is when the occurrence was due, jitter included.
 */
export function occurrenceId(key: string, scheduledAt: number): string {
  return `${key}|${scheduledAt}`;
}

export function parseOccurrenceId(id: string): { key: string; scheduledAt: number } {
  const bar = id.lastIndexOf('|');
  return { key: id.slice(0, bar), scheduledAt: Number(id.slice(bar + 1)) };
}
