import { ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import IORedis from 'ioredis';

/** The binary the suite runs; REDIS_SERVER_BIN points elsewhere if it is not on PATH. */
const BINARY = process.env.REDIS_SERVER_BIN ?? 'redis-server';

const INSTALL_HINT =
  `The Redis tests start their own redis-server, and "${BINARY}" was not found.\n` +
  'Install it (Debian/Ubuntu: apt-get install redis-server; macOS: brew install redis),\n' +
  'or set REDIS_SERVER_BIN to the path of a redis-server binary (Redis 6.2 or later).';

export function assertRedisServerAvailable(): void {
  const probe = spawnSync(BINARY, ['--version'], { encoding: 'utf8' });
  if (probe.error || probe.status !== 0) throw new Error(INSTALL_HINT);
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

export interface RedisServerOptions {
  /** Persist with an append-only file (fsync always), so a restart loses nothing. */
  readonly appendonly?: boolean;
  /** More redis-server arguments, e.g. ['--maxmemory-policy', 'allkeys-lru']. */
  readonly args?: readonly string[];
}

/**
 * A redis-server of the suite's own, on a free port, in a temporary folder.
 * It can be killed and started again on the same port and folder, which is
 * how the tests prove that nothing accepted is lost.
 */
export class TestRedisServer {
  readonly dir = mkdtempSync(join(tmpdir(), 'nestjs-delay-redis-'));
  private process: ChildProcess | undefined;

  private constructor(
    readonly port: number,
    private options: RedisServerOptions,
  ) {}

  static async start(options: RedisServerOptions = {}): Promise<TestRedisServer> {
    assertRedisServerAvailable();
    const server = new TestRedisServer(await freePort(), options);
    await server.boot();
    return server;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /**
   * Starts it again after stop() or kill(), with the same port and data
   * folder; `options` changes how it persists from now on.
   */
  async boot(options?: RedisServerOptions): Promise<void> {
    if (options) this.options = options;
    const args = ['--port', String(this.port), '--bind', '127.0.0.1', '--dir', this.dir, '--save', '', '--daemonize', 'no', '--logfile', ''];
    args.push('--appendonly', this.options.appendonly ? 'yes' : 'no');
    if (this.options.appendonly) args.push('--appendfsync', 'always');
    args.push(...(this.options.args ?? []));
    const child = spawn(BINARY, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    this.process = child;
    const stderr: string[] = [];
    child.stderr?.on('data', (chunk: Buffer) => stderr.push(chunk.toString()));
    const deadline = Date.now() + 10_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`redis-server exited with ${child.exitCode}: ${stderr.join('')}`);
      const probe = new IORedis({ port: this.port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, disconnectTimeout: 0 });
      probe.on('error', () => undefined);
      try {
        await probe.connect();
        if ((await probe.ping()) === 'PONG') {
          probe.disconnect();
          return;
        }
      } catch {
        // not up yet
      }
      probe.disconnect();
      if (Date.now() > deadline) throw new Error(`redis-server did not start on port ${this.port}: ${stderr.join('')}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  /** SIGKILL: no chance to save anything that is not already on disk. */
  async kill(): Promise<void> {
    await this.terminate('SIGKILL');
  }

  /** SIGSTOP: the process keeps its sockets open and answers nothing, as a stalled server does. */
  pause(): void {
    this.signal('SIGSTOP');
  }

  /** SIGCONT after pause(): it answers everything it was sent meanwhile. */
  resume(): void {
    this.signal('SIGCONT');
  }

  /**
   * CLIENT KILL of every client connection but the one asking (the suite's
   * own, opened for this and closed after). `filter` narrows it, e.g.
   * ['TYPE', 'pubsub']. Returns how many were killed.
   */
  async killClients(filter: string[] = ['TYPE', 'normal']): Promise<number> {
    const admin = new IORedis({ port: this.port, host: '127.0.0.1', maxRetriesPerRequest: 0, retryStrategy: () => null });
    admin.on('error', () => undefined);
    try {
      const killed = await admin.call('CLIENT', 'KILL', ...filter, 'SKIPME', 'yes');
      return Number(killed);
    } finally {
      admin.disconnect();
    }
  }

  async stop(): Promise<void> {
    await this.terminate('SIGTERM');
  }

  async dispose(): Promise<void> {
    await this.terminate('SIGKILL');
    rmSync(this.dir, { recursive: true, force: true });
  }

  private signal(signal: NodeJS.Signals): void {
    const child = this.process;
    if (!child || child.exitCode !== null) throw new Error(`redis-server on port ${this.port} is not running`);
    child.kill(signal);
  }

  private async terminate(signal: NodeJS.Signals): Promise<void> {
    const child = this.process;
    this.process = undefined;
    if (!child || child.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      child.once('exit', () => resolve());
      child.kill(signal);
      // A paused server must be let go on, or SIGTERM waits for ever.
      child.kill('SIGCONT');
    });
  }
}
