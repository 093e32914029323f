// The change this bench proposed for the postgres driver's claim (the
// claim's one-row values computed once in a one-row CTE instead of once per
// claimed row, and "more due" counted on the waiting index instead of a
// correlated scan with NOT IN). The driver has taken it, so the what-if rows
// (the EXPLAIN phase, and worker processes started with `proposedClaim`) now
// run the driver's own claim; they stay so that a later proposal can be
// measured beside the driver in the same way.
import { dirname, join } from 'node:path';

export function proposedClaim(claim: string, schema: string): string {
  // The driver took this change: its claim is the proposal itself, and the what-if rows now read the same as the driver's.
  if (!claim.includes('head AS MATERIALIZED (')) throw new Error(`the driver's claim on schema ${schema} is not the proposed one`);
  return claim;
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
