/**
 * Rows as a SQL client returns them: one object per row, column name to
 * value. Values are as that client parses them, and clients differ (a
 * bigint is a string with pg and knex, a BigInt with Prisma; a timestamp is
 * a Date with pg, a string with Drizzle): a driver that must read a value
 * the same way on every client selects it as text or a plain number.
 */
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
  /**
   * Optional: throws when the object, though recognised, cannot take the
   * write: a pool, or a client known to be outside any transaction (it
   * would commit on its own), or connected to another database. Called
   * when a write binds the transaction, before anything is written.
   * Throw TransactionNotActiveError or UnsupportedTransactionClientError.
   */
  check?(transaction: TTransaction): void;
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
  /**
   * How to open a transaction of your client for a transactional handler
   * (`@OnDelayExpired(topic, { transactional: true })`): run `work` inside a
   * new transaction and resolve what it resolves, committing; roll back if it
   * rejects. The transaction object you pass to `work` is the handler's
   * `context.transaction`. For example `(work) => dataSource.transaction(work)`
   * (TypeORM), `(work) => prisma.$transaction(work)`,
   * `(work) => db.transaction().execute(work)` (Kysely),
   * `(work) => knex.transaction(work)`, `(work) => db.transaction(work)`
   * (Drizzle), or with @nestjs-cls/transactional
   * `(work) => txHost.withTransaction(() => work(txHost.tx))`. Without it the
   * postgres driver opens one on a connection of its own and hands the
   * handler that `pg` client.
   */
  readonly run?: <T>(work: (transaction: unknown) => Promise<T>) => Promise<T>;
}
