// A redis-server of the benchmark's own: a free port, a temporary folder, no
// persistence. The bench never touches a Redis it did not start.
import { ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import IORedis from 'ioredis';

/** REDIS_SERVER_BIN points at another binary when redis-server is not on PATH. */
const BINARY = process.env.REDIS_SERVER_BIN ?? 'redis-server';

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

export class BenchRedisServer {
  private constructor(
    readonly port: number,
    private readonly dir: string,
    private readonly child: ChildProcess,
  ) {}

  /** The `redis-server --version` line, e.g. "Redis server v=7.0.15 ...". */
  static version(): string {
    const probe = spawnSync(BINARY, ['--version'], { encoding: 'utf8' });
    if (probe.error !== undefined || probe.status !== 0) {
      throw new Error(`"${BINARY}" was not found: install redis-server (Redis 6.2 or later) or set REDIS_SERVER_BIN`);
    }
    return probe.stdout.trim();
  }

  static async start(): Promise<BenchRedisServer> {
    BenchRedisServer.version();
    const port = await freePort();
    const dir = mkdtempSync(join(tmpdir(), 'nestjs-delay-bench-redis-'));
    const args = ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'no', '--daemonize', 'no', '--logfile', ''];
    const child = spawn(BINARY, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    const stderr: string[] = [];
    child.stderr?.on('data', (chunk: Buffer) => stderr.push(chunk.toString()));
    const server = new BenchRedisServer(port, dir, child);
    const deadline = Date.now() + 10_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`redis-server exited with ${child.exitCode}: ${stderr.join('')}`);
      const probe = new IORedis({ host: '127.0.0.1', port, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
      probe.on('error', () => undefined);
      try {
        await probe.connect();
        const pong = await probe.ping();
        probe.disconnect();
        if (pong === 'PONG') return server;
      } catch {
        probe.disconnect();
      }
      if (Date.now() > deadline) {
        await server.dispose();
        throw new Error(`redis-server did not start on port ${port}: ${stderr.join('')}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  async dispose(): Promise<void> {
    if (this.child.exitCode === null) {
      await new Promise<void>((resolve) => {
        this.child.once('exit', () => resolve());
        this.child.kill('SIGKILL');
      });
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}
