import { DelayError } from './delay.error';

/**
 * @OnDelayExpired on a request-scoped or transient provider. Such a provider
 * has no single instance to call when an action fires, outside any request.
 */
export class ScopedHandlerError extends DelayError {
  readonly code = 'ERR_DELAY_SCOPED_HANDLER';

  constructor(
    readonly handler: string,
    readonly scope: string,
  ) {
    super(`@OnDelayExpired handler ${handler} is on a ${scope} provider (or one that depends on a request-scoped provider). Delay handlers run outside any request: make the provider a singleton.`);
  }
}
