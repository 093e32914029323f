import { DriverUnavailableError } from '../errors/driver-unavailable.error';

/** The shortest pause between two asks, so that a connection that fails at once is not asked in a tight loop. */
const MIN_PAUSE_MS = 50;

/**
 * Calls `ask` until it answers, as long as it fails only because the store is
 * unreachable (DriverUnavailableError: its connection closed, or the call
 * timed out) and `deadline` (local ms) is still ahead when the next ask would
 * start; between two asks it waits for `reconnected`, given the time left.
 * Any other error, or the last one once the deadline has come, is thrown.
 * `ask` bounds its own calls by the deadline.
 */
export async function untilDeadline<T>(deadline: number, ask: () => Promise<T>, reconnected: (leftMs: number) => Promise<void>): Promise<T> {
  for (;;) {
    try {
      return await ask();
    } catch (error) {
      if (!(error instanceof DriverUnavailableError) || deadline - Date.now() <= MIN_PAUSE_MS) throw error;
      await Promise.all([reconnected(deadline - Date.now()), new Promise((resolve) => setTimeout(resolve, MIN_PAUSE_MS))]);
      if (Date.now() >= deadline) throw error;
    }
  }
}
