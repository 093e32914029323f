import { DelayError } from './delay.error';

/** The driver cannot reach its backing store (Redis down, or the driver is closed). Nothing was written. */
export class DriverUnavailableError extends DelayError {
  readonly code = 'ERR_DELAY_DRIVER_UNAVAILABLE';

  constructor(reason: string, cause?: unknown) {
    super(`Delay driver unavailable: ${reason}`, cause);
  }
}
