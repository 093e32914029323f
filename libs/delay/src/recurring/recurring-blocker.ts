import type { SeriesBlocker } from '../interfaces/delay-driver.interface';
import { quoteInput } from '../utils/quote-input';
import type { RecurringBlocker } from './recurring-options';

/** A driver's blocker as users read it (events, last run). */
export function recurringBlocker(blocker: SeriesBlocker): RecurringBlocker {
  return { occurrence: blocker.occurrenceKey, state: blocker.state, dueAt: new Date(blocker.dueAt), attempt: blocker.attempt };
}

/** For a log line: which previous occurrence, running or waiting, due since when, which attempt. */
export function describeBlocker(blocker: SeriesBlocker): string {
  const taken = blocker.attempt > 1 ? `, attempt ${blocker.attempt}` : '';
  return `the previous occurrence ${quoteInput(blocker.occurrenceKey)} is still ${blocker.state} (due since ${new Date(blocker.dueAt).toISOString()}${taken})`;
}
