const NOT_COMMITTED = Symbol.for('nestjs-delay.notCommitted');

/**
 * Marks a transactional run's failure as known to have committed nothing
 * (its transaction was rolled back, or its COMMIT never sent), so it is an
 * ordinary failure, not a commit in doubt, even when it has no SQLSTATE of
 * the server's. Returns the error.
 */
export function markNotCommitted<T>(error: T): T {
  if (typeof error === 'object' && error !== null) (error as Record<symbol, unknown>)[NOT_COMMITTED] = true;
  return error;
}

/** Whether markNotCommitted marked this error. */
export function isNotCommitted(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as Record<symbol, unknown>)[NOT_COMMITTED] === true;
}
