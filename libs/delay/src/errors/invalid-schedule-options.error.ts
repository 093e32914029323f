import { DelayError } from './delay.error';

/** Options of schedule / reschedule / collect that do not make sense together (no due time, both delay and at, unknown ifExists). */
export class InvalidScheduleOptionsError extends DelayError {
  readonly code = 'ERR_DELAY_INVALID_SCHEDULE_OPTIONS';

  constructor(reason: string) {
    super(`Invalid schedule options: ${reason}`);
  }
}
