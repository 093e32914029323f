/** Rows as a SQL client returns them: one object per row, column name to value. */
export type SqlRows = ReadonlyArray<Record<string, unknown>>;

/**
 * One open transaction of the application's, bound to the adapter that knows
 * how to run SQL on it. DelayService hands it to a driver that supports
 * transactions (`DelayDriver.supportsTransactions`); the driver writes
 * through it, so its writes commit or roll back with the caller's own.
 */
export interface DriverTransaction {
  /** The adapter's name ('pg', 'typeorm', ...), for messages. */
  readonly adapter: string;
  /** Runs one statement, with `$1, $2, ...` placeholders, inside the caller's transaction. */
  query(sql: string, params: readonly unknown[]): Promise<SqlRows>;
}

/**
 * Teaches nestjs-delay one way an application holds a transaction: a `pg`
 * client, an ORM's transaction object. The built-in adapters cover the usual
 * ones; register your own in `DelayModuleOptions.transactions.adapters`.
 * Adapters are tried in order, yours first; the first that `matches` is used.
 */
export interface DelayTransactionAdapter<TTransaction = unknown> {
  /** Shown in messages: 'pg', 'typeorm', ... */
  readonly name: string;
  /** True when `transaction` is an object this adapter can run SQL on. */
  matches(transaction: unknown): transaction is TTransaction;
  /** Runs one statement (`$1, $2, ...` placeholders; translate them if your client wants others) and resolves its rows. */
  query(transaction: TTransaction, sql: string, params: readonly unknown[]): Promise<SqlRows>;
}

export interface DelayTransactionOptions {
  /** Adapters for transaction objects the built-in ones do not know; tried before them. */
  readonly adapters?: ReadonlyArray<DelayTransactionAdapter>;
  /**
   * The transaction the calling code is in, when it passed none: for
   * example `() => txHost.isTransactionActive() ? txHost.tx : undefined`
   * with @nestjs-cls/transactional. Return undefined outside a transaction.
   * A call that passes `transaction: null` opts out and writes on its own.
   */
  readonly ambient?: () => unknown;
}
