import { DelayError } from './delay.error';

/** The transaction passed in is no longer open (committed, rolled back or aborted): writing through it would not be atomic with anything. */
export class TransactionNotActiveError extends DelayError {
  readonly code = 'ERR_DELAY_TRANSACTION_NOT_ACTIVE';

  constructor(adapter: string, detail: string, cause?: unknown) {
    super(`The ${adapter} transaction passed to nestjs-delay is not open (${detail}): nothing was written. Call inside the transaction, before it commits.`, cause);
  }
}
