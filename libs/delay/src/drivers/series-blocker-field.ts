import type { SeriesBlocker } from '../interfaces/delay-driver.interface';

/**
 * A skipped last run, as Redis and PostgreSQL store it: the occurrence key,
 * then the blocker's state, due time (ms), attempt and key, each after a
 * U+001F (which no key holds). Any other record is the occurrence key alone.
 */
export function readSkippedOccurrence(field: string): { occurrenceKey: string; blockedBy?: SeriesBlocker } {
  const [occurrenceKey, state, dueAt, attempt, ...rest] = field.split('\u001f');
  if (rest.length === 0) return { occurrenceKey: field };
  return { occurrenceKey, blockedBy: { occurrenceKey: rest.join('\u001f'), state: state === 'running' ? 'running' : 'waiting', dueAt: Number(dueAt), attempt: Number(attempt) } };
}
