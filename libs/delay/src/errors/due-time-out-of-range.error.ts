import { DelayError } from './delay.error';

/** An absolute due time too far in the past, or a due time beyond the driver's horizon. */
export class DueTimeOutOfRangeError extends DelayError {
  readonly code = 'ERR_DELAY_DUE_TIME_OUT_OF_RANGE';

  constructor(
    readonly dueAt: number,
    reason: string,
  ) {
    super(`Due time ${Number.isFinite(dueAt) ? new Date(dueAt).toISOString() : String(dueAt)} is out of range: ${reason}`);
  }
}
