import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PrismaPg } from '@prisma/adapter-pg';

/** What the tests use of a generated PrismaClient. */
export interface PrismaClientLike {
  $transaction<T>(work: (tx: unknown) => Promise<T>, options?: { maxWait?: number; timeout?: number }): Promise<T>;
  $queryRawUnsafe(sql: string, ...values: unknown[]): Promise<unknown>;
  $disconnect(): Promise<void>;
}

type PrismaClientConstructor = new (options: { adapter: unknown }) => PrismaClientLike;

const ROOT = join(__dirname, '..', '..', '..');
/** Under node_modules: ignored by git, tsc and eslint, and @prisma/client resolves from there. */
const OUTPUT = join(ROOT, 'node_modules', '.cache', 'nestjs-delay-test-prisma', String(process.pid));

const SCHEMA = `
generator client {
  provider     = "prisma-client"
  output       = "./client"
  moduleFormat = "cjs"
}

datasource db {
  provider = "postgresql"
}

model DelayTxPrismaProbe {
  id Int @id
}
`;

let generated: PrismaClientConstructor | undefined;

/**
 * A PrismaClient (Prisma 7, no query engine binary: its query compiler and
 * the @prisma/adapter-pg driver adapter) connected to `url`. The client is
 * generated once per test process from a one-model schema; the tables are
 * never used, the tests run raw SQL only.
 *
 * `prisma generate` with the query compiler needs no engine, but the CLI
 * still looks for a schema engine binary at start and would download one;
 * PRISMA_SCHEMA_ENGINE_BINARY pointing at any existing file stops that (the
 * file is never run by generate), so the tests need nothing but npm.
 */
export function prismaClient(url: string): PrismaClientLike {
  if (!generated) {
    mkdirSync(OUTPUT, { recursive: true });
    const schema = join(OUTPUT, 'schema.prisma');
    writeFileSync(schema, SCHEMA);
    const placeholderEngine = join(OUTPUT, 'no-schema-engine');
    writeFileSync(placeholderEngine, '');
    const cli = join(ROOT, 'node_modules', 'prisma', 'build', 'index.js');
    if (!existsSync(cli)) throw new Error('The Prisma tests need the prisma package (a devDependency): run npm ci');
    execFileSync(process.execPath, [cli, 'generate', '--schema', schema], {
      cwd: ROOT,
      env: { ...process.env, PRISMA_SCHEMA_ENGINE_BINARY: placeholderEngine, PRISMA_HIDE_UPDATE_MESSAGE: '1', CHECKPOINT_DISABLE: '1' },
      stdio: 'pipe',
      timeout: 120_000,
    });
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    generated = (require(join(OUTPUT, 'client', 'client')) as { PrismaClient: PrismaClientConstructor }).PrismaClient;
  }
  return new generated({ adapter: new PrismaPg({ connectionString: url }) });
}
