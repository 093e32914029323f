import { DelayError } from './delay.error';

/** An absolute due time too far in the past, or a due time beyond the driver's horizon. */
export class DueTimeOutOfRangeError extends DelayError {
  readonly code = 'ERR_DELAY_DUE_TIME_OUT_OF_RANGE';

  constructor(
    readonly dueAt: number,
    reason: string,
  ) {
    // Beyond Date's ±8.64e15 ms, toISOString would throw a RangeError instead.
    super(`Due time ${Number.isNaN(new Date(dueAt).getTime()) ? String(dueAt) : new Date(dueAt).toISOString()} is out of range: ${reason}`);
  }
}
