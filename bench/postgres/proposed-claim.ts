// A change this bench proposes for the postgres driver's claim, applied only
// where the bench asks for it (the EXPLAIN phase, and worker processes started
// with `proposedClaim`), never to the library itself: the claim's one-row
// values (next due time, more due, revived, paused) computed once in a
// one-row CTE instead of once per claimed row, and "more due" counted on the
// waiting index (the first limit + 1 due rows) instead of a correlated scan
// with NOT IN. The statement is the driver's up to its final SELECT, so
// every write it makes is the same.
import { dirname, join } from 'node:path';

export function proposedClaim(claim: string, schema: string): string {
  // The driver took this change: its claim is then the proposal itself, and the what-if rows read the same as the driver's.
  if (claim.includes('head AS MATERIALIZED (')) return claim;
  const tail = claim.indexOf('\n      SELECT c.now AS now_ms');
  if (tail < 0) throw new Error("the driver's claim no longer ends as this bench expects: update proposedClaim");
  const paused = `EXISTS (SELECT 1 FROM ${schema}.paused_topics p WHERE p.topic = $1::text)`;
  return `${claim.slice(0, tail)},
      head AS MATERIALIZED (
        SELECT c.now AS now_ms, (SELECT count(*) FROM revived)::integer AS revived, ${paused} AS paused,
          least((SELECT min(w.due_at) FROM ${schema}.actions w WHERE w.topic = $1::text AND w.state = 'waiting' AND w.due_at > c.now),
                (SELECT min(r.lease_until) FROM ${schema}.actions r WHERE r.topic = $1::text AND r.state = 'running')) AS next_at,
          (SELECT count(*) FROM (SELECT 1 FROM ${schema}.actions w WHERE w.topic = $1::text AND w.state = 'waiting' AND w.due_at <= c.now
             ORDER BY w.due_at, w.member LIMIT $2::integer + 1) d) > (SELECT count(*) FROM picked) AS more_due
        FROM clock c)
      SELECT h.*, k.* FROM head h LEFT JOIN claimed k ON true`;
}

type Statements = Record<string, string> & { claim: string; complete: string };

interface StatementsModule {
  postgresStatements: (schema: string) => Statements;
}

/**
 * The driver's statements module as compiled (not the library's public API:
 * the bench reads it to explain the claim, and to try proposedClaim).
 */
export async function driverStatementsModule(): Promise<StatementsModule> {
  const file = join(dirname(require.resolve('nestjs-delay')), 'drivers', 'postgres', 'postgres-statements.js');
  return (await import(file)) as StatementsModule;
}

/** In this process only: the driver, once created, sends proposedClaim() instead of its own claim. */
export async function useProposedClaim(): Promise<void> {
  const loaded = await driverStatementsModule();
  const original = loaded.postgresStatements;
  loaded.postgresStatements = (schema: string): Statements => {
    const statements = original(schema);
    return { ...statements, claim: proposedClaim(statements.claim, schema) };
  };
}
