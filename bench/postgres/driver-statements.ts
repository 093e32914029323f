// The postgres driver's statements as compiled, for the bench's look inside
// the claim (phase 9). Not the library's public API.
import { dirname, join } from 'node:path';

type Statements = Record<string, string> & { claim: string; complete: string };

interface StatementsModule {
  postgresStatements: (schema: string) => Statements;
}

export async function driverStatementsModule(): Promise<StatementsModule> {
  const file = join(dirname(require.resolve('nestjs-delay')), 'drivers', 'postgres', 'postgres-statements.js');
  return (await import(file)) as StatementsModule;
}
