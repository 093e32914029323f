import { DelayError } from './delay.error';

/**
 * The driver cannot reach its backing store: Redis down, silent for longer
 * than `commandTimeout`, a write not confirmed by enough replicas
 * (`waitForReplicas`), or the driver is closed. Nothing is ever
 * half-written; but when a reply was lost, the call may have been applied:
 * schedule with 'replace', cancel and reschedule are safe to repeat, a
 * repeated collect appends twice.
 */
export class DriverUnavailableError extends DelayError {
  readonly code = 'ERR_DELAY_DRIVER_UNAVAILABLE';

  constructor(reason: string, cause?: unknown) {
    super(`Delay driver unavailable: ${reason}`, cause);
  }
}
