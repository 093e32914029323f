import { isObjectLike } from './client-shape';

/**
 * What an error a transaction's client raised itself, without a SQLSTATE,
 * says: that the transaction is over, or that the connection is lost.
 * Anything else (a client's own refusal, a bug) is neither, and the caller
 * rethrows it as it is. Clients nest the error they pass on differently: pg's
 * own is reached through `cause` (Drizzle), `driverError` (TypeORM) and
 * Prisma's `meta.driverAdapterError.cause`.
 */

/** Prisma's code for every error of its transaction API: closed (committed, rolled back), expired, unknown. */
const PRISMA_TRANSACTION_API = 'P2028';
/** Prisma's codes for a database it cannot reach, or that closed the connection or timed out. */
const PRISMA_CONNECTION = /^P10(01|02|08|17)$/;
/** The Node.js system errors of a socket that failed or could not connect. */
const SYSTEM_ERROR = /^(ECONNRESET|ECONNREFUSED|ECONNABORTED|EPIPE|ETIMEDOUT|EHOSTUNREACH|EHOSTDOWN|ENETUNREACH|ENETDOWN|ENETRESET|ENOTCONN|ENOTFOUND|EAI_AGAIN)$/;
/** pg's messages for a connection that ended, or never came. */
const CONNECTION_MESSAGE = /connection terminated|server closed the connection|socket hang up|timeout expired/i;
/** The messages of a client refusing a query on a transaction that is over (pg, knex, Kysely). */
const ENDED_MESSAGE = /not queryable|already been released|transaction query already complete|transaction is already (committed|rolled back)/i;

/** Why the client says its transaction is over (committed, rolled back, released, expired), or undefined when it does not. */
export function transactionEnded(error: unknown): string | undefined {
  for (const current of nested(error)) {
    if (typeof current.clientVersion === 'string' && current.code === PRISMA_TRANSACTION_API) return messageOf(current);
    const message = messageOf(current);
    if (ENDED_MESSAGE.test(message)) return message;
  }
  return undefined;
}

/** True when the error says the connection is lost or could not be made: a socket error, a connection the server or the network ended. */
export function connectionLost(error: unknown): boolean {
  for (const current of nested(error)) {
    const { code, originalCode } = current;
    if (typeof code === 'string' && (SYSTEM_ERROR.test(code) || (typeof current.clientVersion === 'string' && PRISMA_CONNECTION.test(code)))) return true;
    if (typeof originalCode === 'string' && SYSTEM_ERROR.test(originalCode)) return true;
    if (CONNECTION_MESSAGE.test(messageOf(current))) return true;
  }
  return false;
}

/** The error and those it carries, breadth first, at most 10. */
function nested(error: unknown): Array<Record<string, unknown>> {
  const found: Array<Record<string, unknown>> = [];
  const queue: unknown[] = [error];
  while (queue.length > 0 && found.length < 10) {
    const current = queue.shift();
    if (!isObjectLike(current) || found.includes(current)) continue;
    found.push(current);
    const { meta } = current;
    const adapterError = isObjectLike(meta) && isObjectLike(meta.driverAdapterError) ? meta.driverAdapterError.cause : undefined;
    queue.push(current.cause, current.driverError, adapterError);
  }
  return found;
}

function messageOf(error: Record<string, unknown>): string {
  return typeof error.message === 'string' ? error.message : '';
}
