import { DelayError } from './delay.error';

/** A recurrence spec that does not make sense: neither or both of cron and every, an interval of zero or below the minimum, an unknown field, a bad policy or anchor. */
export class InvalidRecurrenceError extends DelayError {
  readonly code = 'ERR_DELAY_INVALID_RECURRENCE';

  constructor(reason: string, cause?: unknown) {
    super(`Invalid recurrence: ${reason}`, cause);
  }
}
