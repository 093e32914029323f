import { DelayError } from './delay.error';

/**
 * The reason a handler's `context.signal` aborts: the run outlived its
 * topic's timeout, or shutdown stopped waiting for it.
 */
export class HandlerAbortedError extends DelayError {
  readonly code = 'ERR_DELAY_HANDLER_ABORTED';

  constructor(
    readonly reason: 'timeout' | 'shutdown',
    message: string,
  ) {
    super(message);
  }
}
