// A Redis Cluster of the benchmark's own: N masters and no replicas, each a
// redis-server with cluster-enabled on a free port (its bus port, +10000,
// free too) in a temporary folder, no persistence, joined with
// `redis-cli --cluster create`. The bench never touches a Redis it did not
// start. bench/ compiles on its own (rootDir bench/), so this does not share
// the test suite's cluster helper.
import { ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import IORedis, { Cluster } from 'ioredis';
import type { Redis } from 'ioredis';
import { BenchRedisServer } from './redis-server';

/** REDIS_SERVER_BIN / REDIS_CLI_BIN point at other binaries when they are not on PATH. */
const SERVER = process.env.REDIS_SERVER_BIN ?? 'redis-server';
const CLI = process.env.REDIS_CLI_BIN ?? 'redis-cli';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** A port whose cluster bus port (port + 10000) is free too; below the ephemeral range, so both fit. */
async function freeClusterPort(taken: Set<number>): Promise<number> {
  for (let tries = 0; tries < 200; tries++) {
    const port = 20_000 + Math.floor(Math.random() * 10_000);
    if (taken.has(port) || taken.has(port + 10_000)) continue;
    if ((await canListen(port)) && (await canListen(port + 10_000))) {
      taken.add(port);
      taken.add(port + 10_000);
      return port;
    }
  }
  throw new Error('no free port pair for a cluster node');
}

/** One master: its port, the slots it serves, and a direct connection for INFO and FLUSHALL. */
export interface ClusterMaster {
  /** A, B, C, ... in the order of the slots they serve. */
  readonly name: string;
  readonly port: number;
  readonly slots: ReadonlyArray<readonly [number, number]>;
  readonly redis: Redis;
}

export class BenchRedisCluster {
  private readonly root = mkdtempSync(join(tmpdir(), 'nestjs-delay-bench-cluster-'));
  private readonly children: ChildProcess[] = [];
  private readonly ports: number[] = [];
  private mastersBySlot: ClusterMaster[] = [];

  private constructor() {}

  /** The `redis-cli --version` line. */
  static cliVersion(): string {
    const probe = spawnSync(CLI, ['--version'], { encoding: 'utf8' });
    if (probe.error !== undefined || probe.status !== 0) throw new Error(`"${CLI}" was not found: it comes with redis-server (e.g. Debian's redis-tools), or set REDIS_CLI_BIN`);
    return probe.stdout.trim();
  }

  static async start(masters: number): Promise<BenchRedisCluster> {
    BenchRedisServer.version();
    BenchRedisCluster.cliVersion();
    const cluster = new BenchRedisCluster();
    try {
      await cluster.boot(masters);
    } catch (error) {
      await cluster.dispose();
      throw error;
    }
    return cluster;
  }

  get masters(): readonly ClusterMaster[] {
    return this.mastersBySlot;
  }

  /** An ioredis Cluster client on every node; the caller closes it. */
  client(): Cluster {
    const client = new Cluster(
      this.ports.map((port) => ({ host: '127.0.0.1', port })),
      { redisOptions: { maxRetriesPerRequest: 3 } },
    );
    client.on('error', (error: Error) => console.error(`cluster client: ${error.message}`));
    return client;
  }

  /** The master that serves `key`'s slot (CLUSTER KEYSLOT, asked of the cluster itself). */
  async masterOf(key: string): Promise<ClusterMaster> {
    const slot = Number(await this.mastersBySlot[0].redis.call('CLUSTER', 'KEYSLOT', key));
    const owner = this.mastersBySlot.find((master) => master.slots.some(([from, to]) => slot >= from && slot <= to));
    if (owner === undefined) throw new Error(`no master serves slot ${slot}`);
    return owner;
  }

  /** Empties every master (FLUSHALL each: a cluster has no command for all of them). */
  async flushAll(): Promise<void> {
    await Promise.all(this.mastersBySlot.map((master) => master.redis.flushall()));
  }

  async dispose(): Promise<void> {
    for (const master of this.mastersBySlot) master.redis.disconnect();
    await Promise.all(
      this.children.map(
        (child) =>
          new Promise<void>((resolve) => {
            if (child.exitCode !== null || child.signalCode !== null) return resolve();
            child.once('exit', () => resolve());
            child.kill('SIGKILL');
          }),
      ),
    );
    rmSync(this.root, { recursive: true, force: true });
  }

  private async boot(masters: number): Promise<void> {
    const taken = new Set<number>();
    for (let n = 0; n < masters; n++) this.ports.push(await freeClusterPort(taken));
    await Promise.all(this.ports.map((port) => this.startNode(port)));
    const output: string[] = [];
    const create = spawn(CLI, ['--cluster', 'create', ...this.ports.map((port) => `127.0.0.1:${port}`), '--cluster-replicas', '0', '--cluster-yes'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    create.stdout?.on('data', (chunk: Buffer) => output.push(chunk.toString()));
    create.stderr?.on('data', (chunk: Buffer) => output.push(chunk.toString()));
    const code = await new Promise<number | null>((resolve, reject) => {
      create.once('error', reject);
      create.once('exit', resolve);
    });
    if (code !== 0) throw new Error(`redis-cli --cluster create failed (${code}): ${output.join('')}`);
    const deadline = Date.now() + 20_000;
    while (!(await this.allOk())) {
      if (Date.now() > deadline) throw new Error('the cluster did not reach cluster_state:ok within 20 s');
      await sleep(100);
    }
    await this.readSlots();
  }

  /** Who serves which slots, from CLUSTER SLOTS; masters are named A, B, C... by their first slot. */
  private async readSlots(): Promise<void> {
    const probe = new IORedis({ host: '127.0.0.1', port: this.ports[0] });
    try {
      const ranges = (await probe.call('CLUSTER', 'SLOTS')) as Array<[number, number, [string, number, ...unknown[]]]>;
      const byPort = new Map<number, Array<[number, number]>>();
      for (const [from, to, [, port]] of ranges) {
        const list = byPort.get(Number(port)) ?? [];
        list.push([Number(from), Number(to)]);
        byPort.set(Number(port), list);
      }
      const ordered = [...byPort].map(([port, slots]) => ({ port, slots: slots.sort((a, b) => a[0] - b[0]) })).sort((a, b) => a.slots[0][0] - b.slots[0][0]);
      this.mastersBySlot = ordered.map(({ port, slots }, n) => ({ name: String.fromCharCode(65 + n), port, slots, redis: new IORedis({ host: '127.0.0.1', port }) }));
    } finally {
      probe.disconnect();
    }
  }

  private async startNode(port: number): Promise<void> {
    const dir = join(this.root, String(port));
    mkdirSync(dir);
    const args = [
      '--port', String(port),
      '--bind', '127.0.0.1',
      '--dir', dir,
      '--cluster-enabled', 'yes',
      '--cluster-config-file', join(dir, 'nodes.conf'),
      '--appendonly', 'no',
      '--save', '',
      '--daemonize', 'no',
      '--logfile', '',
    ];
    const child = spawn(SERVER, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    this.children.push(child);
    const stderr: string[] = [];
    child.stderr?.on('data', (chunk: Buffer) => stderr.push(chunk.toString()));
    const deadline = Date.now() + 10_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`cluster node ${port} exited with ${child.exitCode}: ${stderr.join('')}`);
      if ((await this.ask(port, 'PING').catch(() => undefined)) === 'PONG') return;
      if (Date.now() > deadline) throw new Error(`cluster node ${port} did not start: ${stderr.join('')}`);
      await sleep(50);
    }
  }

  private async allOk(): Promise<boolean> {
    for (const port of this.ports) {
      const info = String(await this.ask(port, 'CLUSTER', 'INFO').catch(() => ''));
      if (!info.includes('cluster_state:ok')) return false;
    }
    return true;
  }

  /** One command on one node, on a connection of its own. */
  private async ask(port: number, command: string, ...args: string[]): Promise<unknown> {
    const client = new IORedis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 2_000 });
    client.on('error', () => undefined);
    try {
      await client.connect();
      return await client.call(command, ...args);
    } finally {
      client.disconnect();
    }
  }
}
