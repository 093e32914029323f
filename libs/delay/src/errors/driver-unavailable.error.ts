import { DelayError } from './delay.error';

/**
 * The driver cannot reach its backing store (Redis down, or the driver is
 * closed). Nothing is ever half-written; but when a connection dropped
 * mid-call, the call may have been applied without its reply arriving:
 * schedule with 'replace' is safe to repeat, a repeated collect appends twice.
 */
export class DriverUnavailableError extends DelayError {
  readonly code = 'ERR_DELAY_DRIVER_UNAVAILABLE';

  constructor(reason: string, cause?: unknown) {
    super(`Delay driver unavailable: ${reason}`, cause);
  }
}
