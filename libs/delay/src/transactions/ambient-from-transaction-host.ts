/**
 * What nestjs-delay uses of @nestjs-cls/transactional's TransactionHost
 * (typed by shape, so that package is not needed to compile or run).
 */
export interface TransactionHostLike {
  isTransactionActive(): boolean;
  readonly tx: unknown;
}

/**
 * The `transactions.ambient` function for @nestjs-cls/transactional: the
 * transaction of the `@Transactional()` method (or `withTransaction`
 * callback) the write is called from, or undefined outside one. Outside a
 * transaction `txHost.tx` is the adapter's plain client (a data source's
 * manager, a knex instance...), on which a write would commit on its own:
 * hence the check.
 *
 * ```ts
 * DelayModule.forRootAsync({
 *   inject: [TransactionHost],
 *   useFactory: (txHost: TransactionHost) => ({
 *     driver: { type: 'postgres', ... },
 *     transactions: { ambient: ambientFromTransactionHost(txHost) },
 *   }),
 * })
 * ```
 */
export function ambientFromTransactionHost(txHost: TransactionHostLike): () => unknown {
  return () => (txHost.isTransactionActive() ? txHost.tx : undefined);
}
