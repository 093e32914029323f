import { DriverUnavailableError } from '../../errors/driver-unavailable.error';
import { Row } from './postgres-connection';

/** The columns of the claim's `taken` (claim_taken, migration 6), in order: each an array with a value per action. */
const TAKEN_COLUMNS = ['member', 'key', 'token', 'attempt', 'due_at', 'payload', 'batch', 'items', 'trace', 'tick'] as const;

/**
 * The claim's reply (one row: the head, and what it took as a JSON array of
 * columns), as the head and one row per action taken, each with the columns
 * the claim's rows had.
 */
export function readClaimReply(rows: readonly Row[]): { head: Row; taken: Row[] } {
  const head = rows[0];
  if (head?.now_ms === null || head?.now_ms === undefined) throw new DriverUnavailableError('the claim returned no head row');
  // pg parses json; a pool of the application's whose json parser was replaced may hand the text over instead.
  const raw: unknown = typeof head.taken === 'string' ? JSON.parse(head.taken) : head.taken;
  if (raw === null || raw === undefined) return { head, taken: [] };
  if (!Array.isArray(raw) || raw.length !== TAKEN_COLUMNS.length || !raw.every((column) => Array.isArray(column))) {
    throw new DriverUnavailableError('the claim returned a malformed list of actions');
  }
  const columns = raw as unknown[][];
  const count = columns[0].length;
  if (columns.some((column) => column.length !== count)) throw new DriverUnavailableError('the claim returned a malformed list of actions');
  const taken: Row[] = [];
  for (let n = 0; n < count; n++) {
    const row: Row = {};
    TAKEN_COLUMNS.forEach((name, c) => (row[name] = columns[c][n]));
    taken.push(row);
  }
  return { head, taken };
}
