import { Client } from 'pg';
import { DatabaseUnreachableError } from './database-unreachable.error';
import { describeDatabaseUrl } from './describe-database-url';

/** How long the startup check waits for the database before the shop gives up. */
const CONNECT_TIMEOUT_MS = 5_000;

/**
 * Connects once and runs `SELECT 1`, so a wrong DATABASE_URL or a server
 * that is down stops the startup at once with one clear line, rather than
 * after retries and under a stack trace.
 */
export async function checkDatabase(url: string): Promise<void> {
  const client = new Client({ connectionString: url, connectionTimeoutMillis: CONNECT_TIMEOUT_MS, query_timeout: CONNECT_TIMEOUT_MS });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query('SELECT 1');
  } catch (error) {
    const reason = error instanceof Error && error.message !== '' ? error.message : String(error);
    throw new DatabaseUnreachableError(describeDatabaseUrl(url), `${reason} (check DATABASE_URL, or unset it to use the embedded PostgreSQL)`);
  } finally {
    await client.end().catch(() => undefined);
  }
}
