import { isObjectLike } from './client-shape';

const SQL_STATE = /^[0-9A-Z]{5}$/;

/**
 * The PostgreSQL SQLSTATE (e.g. '23505', '25P02') of an error a
 * transaction adapter's statement rejected with, whichever client raised
 * it: adapters rethrow their client's own error, and clients carry the code
 * differently. pg, knex and Kysely reject with pg's error (`code`); TypeORM
 * copies `code` onto its QueryFailedError; Drizzle wraps pg's error as its
 * `cause`; Prisma's own `code` is a Prisma one ('P2010'), the database's is
 * in `meta.driverAdapterError.cause`. Undefined when there is none.
 */
export function sqlStateOf(error: unknown): string | undefined {
  for (let depth = 0, current = error; depth < 5 && isObjectLike(current); depth++, current = current.cause) {
    const fromPrisma = prismaSqlState(current);
    if (fromPrisma !== undefined) return fromPrisma;
    const { code } = current;
    if (typeof code === 'string' && SQL_STATE.test(code) && !isPrismaError(current)) return code;
  }
  return undefined;
}

/** A SQLSTATE of the connection's, not the statement's: connection exceptions (08), the server shutting down (57P01-57P04), system errors (58). */
export function isConnectionState(state: string): boolean {
  return /^(08|57P0[1-4]|58)/.test(state);
}

/** An error with a SQLSTATE the server sent about the statement, not the connection's: the transaction is over or aborted, and the connection is still good. */
export function refusedByServer(error: unknown): boolean {
  const state = sqlStateOf(error);
  return state !== undefined && !isConnectionState(state);
}

/** Prisma's errors carry its own codes ('P2028' looks like a SQLSTATE, and is none): the database's is read apart. */
function isPrismaError(error: Record<string, unknown>): boolean {
  return typeof error.clientVersion === 'string';
}

function prismaSqlState(error: Record<string, unknown>): string | undefined {
  const { meta } = error;
  if (!isObjectLike(meta) || !isObjectLike(meta.driverAdapterError)) return undefined;
  const { cause } = meta.driverAdapterError;
  if (!isObjectLike(cause)) return undefined;
  const code = typeof cause.originalCode === 'string' ? cause.originalCode : cause.code;
  return typeof code === 'string' && SQL_STATE.test(code) ? code : undefined;
}
