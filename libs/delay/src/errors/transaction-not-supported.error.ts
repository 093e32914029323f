import { DelayError } from './delay.error';

/** A transaction was passed to (or found ambient for) a driver that cannot write inside one: the wheel, Redis, or a custom driver without `supportsTransactions`. */
export class TransactionNotSupportedError extends DelayError {
  readonly code = 'ERR_DELAY_TRANSACTION_NOT_SUPPORTED';

  constructor(driver: string) {
    super(
      `The "${driver}" delay driver cannot join a database transaction: its writes would not roll back with yours. ` +
        `Use the postgres driver to schedule inside a transaction, or call without \`transaction\`.`,
    );
  }
}
