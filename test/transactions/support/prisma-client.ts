import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
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
const CACHE = join(ROOT, 'node_modules', '.cache', 'nestjs-delay-test-prisma');
const OUTPUT = join(CACHE, String(process.pid));

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
    removeClientsOfEndedProcesses();
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

/** Each test process generates its own client; those of processes that have ended are removed. */
function removeClientsOfEndedProcesses(): void {
  if (!existsSync(CACHE)) return;
  for (const name of readdirSync(CACHE)) {
    const pid = Number(name);
    if (!Number.isInteger(pid) || pid === process.pid || isRunning(pid)) continue;
    rmSync(join(CACHE, name), { recursive: true, force: true });
  }
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
