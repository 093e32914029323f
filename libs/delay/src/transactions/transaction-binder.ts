import { TransactionNotSupportedError } from '../errors/transaction-not-supported.error';
import { UnknownTransactionError } from '../errors/unknown-transaction.error';
import { DelayDriver } from '../interfaces/delay-driver.interface';
import { DelayTransactionAdapter, DelayTransactionOptions, DriverTransaction } from '../interfaces/delay-transaction.interface';
import { BUILT_IN_TRANSACTION_ADAPTERS } from './built-in-adapters';
import { currentHandlerRun } from './handler-transaction';
import { TransactionNotActiveError } from '../errors/transaction-not-active.error';

/**
 * Turns what a caller passed as `transaction` (or the ambient one) into a
 * DriverTransaction for the driver, or refuses it. Refusals come before any
 * write, so a refused call changes nothing:
 * - a transaction for a driver that cannot join one (its writes would not
 *   roll back with the caller's: silently ignoring it is the bug this
 *   prevents);
 * - an object no adapter recognises;
 * - an object an adapter recognises but cannot write through (its
 *   `check`): a pool, a client known to be outside any transaction.
 * `null` opts out of the ambient transaction; `undefined` means "the ambient
 * one, if any".
 */
export class TransactionBinder {
  private readonly adapters: ReadonlyArray<DelayTransactionAdapter>;
  private readonly ambient: (() => unknown) | undefined;

  constructor(
    private readonly driver: Pick<DelayDriver, 'name' | 'supportsTransactions'>,
    options: DelayTransactionOptions | undefined,
  ) {
    this.adapters = [...(options?.adapters ?? []), ...BUILT_IN_TRANSACTION_ADAPTERS];
    this.ambient = options?.ambient;
  }

  /** The driver transaction for `given`, or undefined to write on the driver's own connection. */
  bind(given: unknown): DriverTransaction | undefined {
    // Not given: the ambient one, else the transaction of the transactional handler this call is made from.
    const transaction = given === undefined ? (this.ambient?.() ?? handlerTransaction()) : given;
    if (transaction === undefined || transaction === null) return undefined;
    if (this.driver.supportsTransactions !== true) throw new TransactionNotSupportedError(this.driver.name);
    for (const adapter of this.adapters) {
      if (adapter.matches(transaction)) return bindTo(adapter, transaction);
    }
    throw new UnknownTransactionError(describe(transaction), [...new Set(this.adapters.map((adapter) => adapter.name))]);
  }
}

/** The transaction of the transactional run the calling code belongs to; refused once that run is over. */
function handlerTransaction(): unknown {
  const run = currentHandlerRun();
  if (run && !run.open) {
    throw new TransactionNotActiveError('handler', 'the transactional run this call was made from is over (it ended, or was given up at its timeout); pass transaction: null to write on its own');
  }
  return run?.transaction;
}

function bindTo<T>(adapter: DelayTransactionAdapter<T>, transaction: T): DriverTransaction {
  adapter.check?.(transaction);
  return { adapter: adapter.name, query: (sql, params) => adapter.query(transaction, sql, params) };
}

function describe(value: unknown): string {
  if (typeof value !== 'object') return `a ${typeof value}`;
  const name = (value as { constructor?: { name?: unknown } }).constructor?.name;
  return typeof name === 'string' && name !== '' && name !== 'Object' ? `an instance of ${name.slice(0, 60)}` : 'a plain object';
}
