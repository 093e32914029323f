import { ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import IORedis, { Cluster, ClusterOptions } from 'ioredis';
import { assertRedisServerAvailable } from './redis-server';

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

/** One node as CLUSTER NODES tells it. */
export interface ClusterNodeInfo {
  readonly id: string;
  readonly port: number;
  readonly role: 'master' | 'replica';
  /** A replica's master id. */
  readonly masterId?: string;
  readonly failed: boolean;
}

export interface RedisClusterOptions {
  readonly masters?: number;
  readonly replicasPerMaster?: number;
  /** cluster-node-timeout: a replica is promoted about this long after its master stops answering. */
  readonly nodeTimeoutMs?: number;
}

class Node {
  process: ChildProcess | undefined;
  readonly stderr: string[] = [];

  constructor(
    readonly port: number,
    readonly dir: string,
  ) {}

  get alive(): boolean {
    return this.process !== undefined && this.process.exitCode === null && this.process.signalCode === null;
  }
}

/**
 * A real Redis Cluster of the suite's own, from redis-server with
 * cluster-enabled: masters and replicas on free ports in a temporary folder,
 * joined with `redis-cli --cluster create`. A master can be killed -9 and
 * its replica's promotion awaited.
 */
export class TestRedisCluster {
  readonly root = mkdtempSync(join(tmpdir(), 'nestjs-delay-cluster-'));
  private readonly nodes: Node[] = [];

  private constructor(private readonly options: Required<RedisClusterOptions>) {}

  static async start(options: RedisClusterOptions = {}): Promise<TestRedisCluster> {
    assertRedisServerAvailable();
    const cluster = new TestRedisCluster({ masters: 3, replicasPerMaster: 1, nodeTimeoutMs: 1_000, ...options });
    try {
      await cluster.boot();
    } catch (error) {
      await cluster.dispose();
      throw error;
    }
    return cluster;
  }

  /** Where a client starts: every node. */
  get startupNodes(): Array<{ host: string; port: number }> {
    return this.nodes.map((node) => ({ host: '127.0.0.1', port: node.port }));
  }

  /** An ioredis Cluster client on this cluster; the caller closes it. */
  client(options: ClusterOptions = {}): Cluster {
    const client = new Cluster(this.startupNodes, { ...options });
    client.on('error', () => undefined);
    return client;
  }

  /** The topology, as a live node sees it. */
  async topology(): Promise<ClusterNodeInfo[]> {
    const text = String(await this.ask(this.liveNodes()[0].port, 'CLUSTER', 'NODES'));
    return text
      .trim()
      .split('\n')
      .map((line) => {
        const [id, address, flags, masterId] = line.split(' ');
        return {
          id,
          port: Number(address.split(':')[1].split('@')[0]),
          role: flags.includes('master') ? 'master' : 'replica',
          masterId: masterId === '-' ? undefined : masterId,
          failed: flags.includes('fail'),
        } as ClusterNodeInfo;
      });
  }

  /** The master that serves `key`'s slot. */
  async masterOf(key: string): Promise<ClusterNodeInfo> {
    const port = this.liveNodes()[0].port;
    const slot = Number(await this.ask(port, 'CLUSTER', 'KEYSLOT', key));
    const slots = (await this.ask(port, 'CLUSTER', 'SLOTS')) as Array<[number, number, [string, number, string]]>;
    const owner = slots.find(([from, to]) => slot >= from && slot <= to);
    if (!owner) throw new Error(`no node serves slot ${slot}`);
    const info = (await this.topology()).find((node) => node.port === Number(owner[2][1]));
    if (!info) throw new Error(`the node on port ${owner[2][1]} is not in the topology`);
    return info;
  }

  /**
   * kill -9 of a master; resolves once one of its replicas is master and
   * every live node says cluster_state:ok. Returns the promoted node's port.
   */
  async killMaster(port: number, withinMs = 20_000, afterKill: () => void = () => undefined): Promise<number> {
    const topology = await this.topology();
    const master = topology.find((node) => node.port === port && node.role === 'master');
    if (!master) throw new Error(`port ${port} is not a master`);
    const replicas = topology.filter((node) => node.masterId === master.id).map((node) => node.port);
    const node = this.nodes.find((candidate) => candidate.port === port);
    await new Promise<void>((resolve) => {
      if (!node?.alive) return resolve();
      node.process?.once('exit', () => resolve());
      node.process?.kill('SIGKILL');
    });
    afterKill();
    const deadline = Date.now() + withinMs;
    for (;;) {
      for (const replica of replicas) {
        const role = (await this.ask(replica, 'ROLE').catch(() => [])) as unknown[];
        if (role[0] === 'master' && (await this.allOk())) return replica;
      }
      if (Date.now() > deadline) throw new Error(`no replica of ${port} (${replicas.join(', ')}) took over within ${withinMs} ms`);
      await sleep(100);
    }
  }

  /** The ports of a master's replicas. */
  async replicasOf(port: number): Promise<number[]> {
    const topology = await this.topology();
    const master = topology.find((node) => node.port === port && node.role === 'master');
    if (!master) throw new Error(`port ${port} is not a master`);
    return topology.filter((node) => node.masterId === master.id).map((node) => node.port);
  }

  /** SIGSTOP of one node: it keeps its sockets and answers nothing (a replica falls behind). */
  pause(port: number): void {
    this.nodeAt(port).process?.kill('SIGSTOP');
  }

  /** SIGCONT after pause(). */
  resume(port: number): void {
    this.nodeAt(port).process?.kill('SIGCONT');
  }

  async dispose(): Promise<void> {
    await Promise.all(
      this.nodes.map(
        (node) =>
          new Promise<void>((resolve) => {
            if (!node.alive) return resolve();
            node.process?.once('exit', () => resolve());
            node.process?.kill('SIGKILL');
            node.process?.kill('SIGCONT');
          }),
      ),
    );
    rmSync(this.root, { recursive: true, force: true });
  }

  private nodeAt(port: number): Node {
    const node = this.nodes.find((candidate) => candidate.port === port && candidate.alive);
    if (!node) throw new Error(`no running cluster node on port ${port}`);
    return node;
  }

  private liveNodes(): Node[] {
    const live = this.nodes.filter((node) => node.alive);
    if (live.length === 0) throw new Error('no cluster node is running');
    return live;
  }

  private async boot(): Promise<void> {
    const taken = new Set<number>();
    const count = this.options.masters * (1 + this.options.replicasPerMaster);
    for (let n = 0; n < count; n++) {
      const port = await freeClusterPort(taken);
      const dir = join(this.root, String(port));
      mkdirSync(dir);
      this.nodes.push(new Node(port, dir));
    }
    await Promise.all(this.nodes.map((node) => this.startNode(node)));
    const create = spawn(
      CLI,
      ['--cluster', 'create', ...this.nodes.map((node) => `127.0.0.1:${node.port}`), '--cluster-replicas', String(this.options.replicasPerMaster), '--cluster-yes'],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const output: string[] = [];
    create.stdout?.on('data', (chunk: Buffer) => output.push(chunk.toString()));
    create.stderr?.on('data', (chunk: Buffer) => output.push(chunk.toString()));
    const code = await new Promise<number | null>((resolve, reject) => {
      create.once('error', (error) => reject(new Error(`${CLI} could not be started (it comes with redis-server, e.g. Debian's redis-tools): ${error.message}`)));
      create.once('exit', (exitCode) => resolve(exitCode));
    });
    if (code !== 0) throw new Error(`redis-cli --cluster create failed (${code}): ${output.join('')}`);
    const deadline = Date.now() + 20_000;
    while (!(await this.allOk()) || !(await this.replicasInSync())) {
      if (Date.now() > deadline) throw new Error('the cluster did not reach cluster_state:ok with every replica in sync within 20 s');
      await sleep(100);
    }
  }

  /** Every replica has finished its first sync and follows its master. */
  private async replicasInSync(): Promise<boolean> {
    for (const node of this.nodes.filter((candidate) => candidate.alive)) {
      const info = String(await this.ask(node.port, 'INFO', 'replication').catch(() => ''));
      if (info.includes('role:slave') && !info.includes('master_link_status:up')) return false;
      if (info.includes('role:slave') && info.includes('master_sync_in_progress:1')) return false;
    }
    return true;
  }

  private async startNode(node: Node): Promise<void> {
    const args = [
      '--port', String(node.port),
      '--bind', '127.0.0.1',
      '--dir', node.dir,
      '--cluster-enabled', 'yes',
      '--cluster-config-file', join(node.dir, 'nodes.conf'),
      '--cluster-node-timeout', String(this.options.nodeTimeoutMs),
      // A replica may take over however long ago it last heard from its master: tests kill masters at will.
      '--cluster-replica-validity-factor', '0',
      '--cluster-require-full-coverage', 'no',
      // Replicas sync at once (Redis waits 5 s by default, for more replicas to share one transfer).
      '--repl-diskless-sync-delay', '0',
      '--appendonly', 'no',
      '--save', '',
      '--daemonize', 'no',
      '--logfile', '',
    ];
    const child = spawn(SERVER, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    node.process = child;
    child.stderr?.on('data', (chunk: Buffer) => node.stderr.push(chunk.toString()));
    const deadline = Date.now() + 10_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`cluster node ${node.port} exited with ${child.exitCode}: ${node.stderr.join('')}`);
      if ((await this.ask(node.port, 'PING').catch(() => undefined)) === 'PONG') return;
      if (Date.now() > deadline) throw new Error(`cluster node ${node.port} did not start: ${node.stderr.join('')}`);
      await sleep(50);
    }
  }

  private async allOk(): Promise<boolean> {
    for (const node of this.nodes.filter((candidate) => candidate.alive)) {
      const info = String(await this.ask(node.port, 'CLUSTER', 'INFO').catch(() => ''));
      if (!info.includes('cluster_state:ok')) return false;
    }
    return true;
  }

  /** One command on one node, on a connection of its own. */
  private async ask(port: number, command: string, ...args: string[]): Promise<unknown> {
    const client = new IORedis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 2_000, commandTimeout: 2_000 });
    client.on('error', () => undefined);
    try {
      await client.connect();
      return await client.call(command, ...args);
    } finally {
      client.disconnect();
    }
  }
}
