import { UnsupportedTransactionClientError } from '../errors/unsupported-transaction-client.error';

/**
 * Shape checks for the built-in transaction adapters: they recognise a
 * client by the methods it has, never by importing its package.
 */

/** An object or a function (knex's transaction is a function): something that can carry methods. */
export function isObjectLike(value: unknown): value is Record<string, unknown> {
  return (typeof value === 'object' && value !== null) || typeof value === 'function';
}

/** True when `value` has a callable property of each name (own or inherited). */
export function hasMethods(value: unknown, ...names: string[]): value is Record<string, unknown> {
  if (!isObjectLike(value)) return false;
  for (const name of names) {
    if (typeof value[name] !== 'function') return false;
  }
  return true;
}

/**
 * The rows of what a client resolved: a bare array of rows (Prisma,
 * postgres.js), or a result carrying them as `rows` (pg, and the ORMs
 * running on it). Anything else is refused rather than read as "no rows".
 */
export function rowsOf(adapter: string, result: unknown): Array<Record<string, unknown>> {
  if (Array.isArray(result)) return result as Array<Record<string, unknown>>;
  if (isObjectLike(result) && Array.isArray(result.rows)) return result.rows as Array<Record<string, unknown>>;
  throw new UnsupportedTransactionClientError(adapter, `a statement resolved ${result === null ? 'null' : typeof result}, not rows nor { rows }`);
}
