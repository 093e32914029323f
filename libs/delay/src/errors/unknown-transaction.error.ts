import { DelayError } from './delay.error';

/** No transaction adapter recognises the object passed as `transaction`. */
export class UnknownTransactionError extends DelayError {
  readonly code = 'ERR_DELAY_UNKNOWN_TRANSACTION';

  constructor(described: string, adapters: readonly string[]) {
    super(
      `No transaction adapter recognises ${described} passed as \`transaction\` (known: ${adapters.join(', ')}). ` +
        `Pass the transaction object your client or ORM gives you, or register an adapter in DelayModule's transactions.adapters.`,
    );
  }
}
