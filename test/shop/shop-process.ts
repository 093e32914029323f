import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** The repository's root: where `npm start` runs. */
export const ROOT = join(__dirname, '..', '..');
const MAIN = join(ROOT, 'dist', 'apps', 'shop', 'main.js');

/** Held while one test file builds, so two files (Jest runs two at once) never write dist together. */
const BUILD_LOCK = join(ROOT, 'dist', '.shop-build.lock');
/** A lock older than this was left by a run that died mid-build. */
const STALE_LOCK_MS = 5 * 60_000;

/**
 * Builds the library and the shop (`npm run build`) unless dist is newer
 * than every source file of both: the tests run the shop as `npm start`
 * does, from its build. Another test file building meanwhile is waited for.
 */
export async function buildShop(): Promise<void> {
  for (;;) {
    if (isBuilt()) return;
    mkdirSync(join(ROOT, 'dist'), { recursive: true });
    try {
      mkdirSync(BUILD_LOCK);
    } catch {
      if (Date.now() - (mtimeOf(BUILD_LOCK) ?? Date.now()) > STALE_LOCK_MS) rmSync(BUILD_LOCK, { recursive: true, force: true });
      await new Promise((resolve) => setTimeout(resolve, 250));
      continue;
    }
    try {
      if (!isBuilt()) execFileSync('npm', ['run', 'build'], { cwd: ROOT, stdio: 'ignore' });
      return;
    } finally {
      rmSync(BUILD_LOCK, { recursive: true, force: true });
    }
  }
}

function isBuilt(): boolean {
  const sources = Math.max(newest(join(ROOT, 'apps', 'shop', 'src')), newest(join(ROOT, 'libs', 'delay', 'src')));
  return (mtimeOf(MAIN) ?? 0) > sources && (mtimeOf(join(ROOT, 'libs', 'delay', 'dist', 'index.js')) ?? 0) > sources;
}

function mtimeOf(file: string): number | undefined {
  try {
    return statSync(file).mtimeMs;
  } catch {
    return undefined;
  }
}

function newest(dir: string): number {
  let latest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    latest = Math.max(latest, entry.isDirectory() ? newest(path) : statSync(path).mtimeMs);
  }
  return latest;
}

export interface ShopProcess {
  readonly child: ChildProcess;
  readonly baseUrl: string;
  /** Resolves with the exit code (or signal) once the process has exited. */
  readonly exited: Promise<number | string>;
  /** Everything it wrote to stdout and stderr so far. */
  output(): string;
}

/** What a shop process printed before it exited, when it did not start. */
export interface FailedStart {
  readonly code: number | string;
  readonly output: string;
}

/** The shop's environment: the caller's, less the variables that would change what a test sees, plus `env`. */
export function shopEnv(env: Record<string, string>): NodeJS.ProcessEnv {
  const inherited = { ...process.env };
  for (const name of ['DATABASE_URL', 'DELAY_DRIVER', 'REDIS_URL', 'REDIS_PREFIX', 'SHOP_DATA_DIR', 'ADMIN_TOKEN', 'UNPAID_TIMEOUT', 'PORT']) delete inherited[name];
  // No colours: the tests read the log lines.
  return { ...inherited, NO_COLOR: '1', PORT: '0', ...env };
}

/**
 * Spawns `node dist/apps/shop/main.js` and resolves once it logs the URL it
 * listens on; rejects with a FailedStart if it exits first. The bound only
 * keeps a start that hangs from hanging the test: a start after a kill -9 of
 * the shop and its embedded PostgreSQL (recovery, then the shop's migrations)
 * took over 30 s on a two-core machine running two suites at once.
 */
export function spawnShop(env: Record<string, string>, startWithinMs = 60_000): Promise<ShopProcess> {
  const child = spawn(process.execPath, [MAIN], { cwd: ROOT, env: shopEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<number | string>((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal ?? 'unknown')));
  let output = '';
  return new Promise<ShopProcess>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`The shop did not start within ${startWithinMs} ms:\n${output}`));
    }, startWithinMs);
    const read = (chunk: Buffer): void => {
      output += chunk.toString();
      const match = /Shop listening on (http:\/\/localhost:\d+)/.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve({ child, baseUrl: match[1] as string, exited, output: () => output });
      }
    };
    child.stdout?.on('data', read);
    child.stderr?.on('data', read);
    void exited.then((code) => {
      clearTimeout(timer);
      const failed: FailedStart = { code, output };
      reject(failed);
    });
  });
}

/** Runs the shop to its exit, for a start that must fail: its exit code and output. */
export async function failedStart(env: Record<string, string>): Promise<FailedStart> {
  try {
    const shop = await spawnShop(env);
    shop.child.kill('SIGKILL');
    throw new Error(`The shop started on ${shop.baseUrl}, though it should not have`);
  } catch (error) {
    if (error instanceof Error) throw error;
    return error as FailedStart;
  }
}

export async function killShop(shop: ShopProcess, signal: NodeJS.Signals = 'SIGKILL'): Promise<number | string> {
  shop.child.kill(signal);
  return shop.exited;
}
