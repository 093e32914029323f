import { DelayError } from './delay.error';

/**
 * The transaction object was recognised, but its client cannot take the
 * write: it is connected to a database other than PostgreSQL, or to another
 * PostgreSQL database than the driver's (the write would commit there, and
 * never fire), or it answered in a form the adapter cannot read. Nothing
 * was written.
 */
export class UnsupportedTransactionClientError extends DelayError {
  readonly code = 'ERR_DELAY_UNSUPPORTED_TRANSACTION_CLIENT';

  constructor(adapter: string, detail: string, cause?: unknown) {
    super(`The ${adapter} transaction passed to nestjs-delay cannot be used: ${detail}. Transactions are joined on PostgreSQL only, on the driver's own database.`, cause);
  }
}
