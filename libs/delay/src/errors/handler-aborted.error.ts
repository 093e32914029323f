import { DelayError } from './delay.error';

/**
 * The reason a handler's `context.signal` aborts: the run outlived its
 * topic's timeout, shutdown stopped waiting for it, or (a recurring
 * occurrence) it was cancelled while running, by the overlap policy
 * `cancelPrevious` or by `cancel`, so its outcome is ignored.
 */
export class HandlerAbortedError extends DelayError {
  readonly code = 'ERR_DELAY_HANDLER_ABORTED';

  constructor(
    readonly reason: 'timeout' | 'shutdown' | 'cancelled',
    message: string,
  ) {
    super(message);
  }
}
