// The parent side of the multi-instance tests: starts worker processes
// (test/instances/worker/worker.ts, each a separate Node process running a
// Nest application with the Redis driver, or the postgres one with driver
// 'postgres'), sends them DelayService calls,
// and collects every handler run they report.
import { ChildProcess, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import * as ts from 'typescript';
import { RedisServerOptions, TestRedisServer } from '../../support/redis-server';
import type { EndEvent, ReplyValue, StartEvent, WorkerConfig, WorkerMessage, WorkerReply, WorkerRequest } from './protocol';

const REPO_ROOT = resolve(__dirname, '..', '..', '..');
const WORKER_ENTRY = join(REPO_ROOT, 'test', 'instances', 'worker', 'worker.ts');
/** Transpiled sources, by content hash (never stale); shared by the workers of every run. */
const CACHE_DIR = join(tmpdir(), 'nestjs-delay-instances-ts-cache');

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

let hookPath: string | undefined;

/** The require hook, compiled from register.ts to plain JavaScript once. */
export function registerHook(): string {
  // Checked each time: the cache lives in the shared temporary folder, which someone may clean.
  if (hookPath && existsSync(hookPath)) return hookPath;
  const source = readFileSync(join(__dirname, 'register.ts'), 'utf8');
  const target = join(CACHE_DIR, `register-${createHash('sha1').update(source).update(ts.version).digest('hex')}.js`);
  const output = ts.transpileModule(source, {
    compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, esModuleInterop: true },
    fileName: 'register.ts',
  }).outputText;
  mkdirSync(CACHE_DIR, { recursive: true });
  const partial = `${target}.${process.pid}.tmp`;
  writeFileSync(partial, output);
  renameSync(partial, target);
  hookPath = target;
  return target;
}

type OkReply = Extract<WorkerReply, { ok: true }>;

/** One worker process. */
export class Instance {
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (reply: WorkerReply) => void; reject: (error: Error) => void }>();
  private readonly log: string[] = [];
  private exitInfo: string | undefined;
  readonly exited: Promise<void>;

  constructor(
    readonly name: string,
    private readonly child: ChildProcess,
    onMessage: (message: WorkerMessage) => void,
  ) {
    const keep = (chunk: Buffer): void => {
      this.log.push(...chunk.toString().split('\n').filter((line) => line.length > 0));
      if (this.log.length > 200) this.log.splice(0, this.log.length - 200);
    };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    child.on('message', (message: unknown) => {
      const typed = message as WorkerMessage;
      if (typed.type === 'reply') {
        const waiter = this.pending.get(typed.id);
        this.pending.delete(typed.id);
        waiter?.resolve(typed);
      } else {
        onMessage(typed);
      }
    });
    this.exited = new Promise((resolve) => {
      child.once('exit', (code, signal) => {
        this.exitInfo = signal ? `killed by ${signal}` : `exited with ${code}`;
        this.exitedAt = Date.now();
        for (const waiter of this.pending.values()) waiter.reject(new Error(`${name} ${this.exitInfo} before it answered`));
        this.pending.clear();
        resolve();
      });
    });
  }

  /** When the process ended (Date.now()), or undefined while it runs. */
  exitedAt: number | undefined;

  get pid(): number | undefined {
    return this.child.pid;
  }

  get alive(): boolean {
    return this.exitInfo === undefined;
  }

  /** The last lines the worker printed, for failure messages. */
  tail(): string {
    return `--- ${this.name} (${this.exitInfo ?? 'running'}) ---\n${this.log.slice(-30).join('\n')}`;
  }

  /** Sends one DelayService call; resolves with the reply (ok or not), rejects on timeout or exit. */
  send(request: WorkerRequest, timeoutMs = 15_000): Promise<WorkerReply> {
    if (!this.alive) return Promise.reject(new Error(`${this.name} is not running (${this.exitInfo})`));
    const id = this.nextId++;
    return new Promise<WorkerReply>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error(`${this.name} did not answer ${request.op} within ${timeoutMs} ms\n${this.tail()}`));
      }, timeoutMs);
      this.pending.set(id, {
        resolve: (reply) => {
          clearTimeout(timer);
          resolve(reply);
        },
        reject: (error) => {
          clearTimeout(timer);
          reject(error);
        },
      });
      this.child.send({ ...request, id });
    });
  }

  /** Like send, but a failed call rejects. */
  async call(request: WorkerRequest, timeoutMs?: number): Promise<OkReply> {
    const reply = await this.send(request, timeoutMs);
    if (!reply.ok) throw new Error(`${this.name}: ${request.op} failed: ${reply.error}`);
    return reply;
  }

  async value(request: WorkerRequest, timeoutMs?: number): Promise<ReplyValue> {
    return (await this.call(request, timeoutMs)).value;
  }

  async count(): Promise<number> {
    return Number(await this.value({ op: 'count' }));
  }

  /** kill -9: the process gets no chance to do anything. */
  async kill(): Promise<void> {
    if (!this.alive) return;
    this.child.kill('SIGKILL');
    await this.exited;
  }

  /**
   * app.close() in the worker; then waits up to `exitWithinMs` for the process to end, and SIGKILLs it if
   * it has not (check `exitedAt` to tell).
   */
  async close(timeoutMs = 20_000, exitWithinMs = 5_000): Promise<OkReply> {
    try {
      const reply = await this.call({ op: 'close' }, timeoutMs);
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([this.exited, new Promise((resolve) => (timer = setTimeout(resolve, exitWithinMs)))]);
      clearTimeout(timer);
      return reply;
    } finally {
      await this.kill();
    }
  }
}

export type InstanceOptions = Omit<WorkerConfig, 'name' | 'url' | 'prefix' | 'topic'>;

/**
 * The instances of one test, all on one Redis, prefix and topic. It records
 * every handler start and end they report, in arrival order.
 */
export class Fleet {
  readonly starts: StartEvent[] = [];
  readonly ends: EndEvent[] = [];
  private readonly instances: Instance[] = [];

  /** `entry`: the worker script, test/instances/worker/worker.ts unless given (it must speak protocol.ts). */
  constructor(private readonly base: { readonly url: string; readonly prefix: string; readonly topic: string; readonly entry?: string }) {}

  /** Starts one worker process and waits until its application is up (consuming, if it consumes). */
  async spawn(name: string, options: InstanceOptions): Promise<Instance> {
    const { entry = WORKER_ENTRY, ...base } = this.base;
    const config: WorkerConfig = { ...base, ...options, name };
    const child = spawn(process.execPath, ['--enable-source-maps', '--require', registerHook(), entry], {
      cwd: REPO_ROOT,
      env: { ...process.env, NESTJS_DELAY_ROOT: REPO_ROOT, NESTJS_DELAY_TS_CACHE: CACHE_DIR, NESTJS_DELAY_WORKER: JSON.stringify(config) },
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    });
    let ready: () => void = () => undefined;
    const isReady = new Promise<void>((resolve) => (ready = resolve));
    const instance = new Instance(name, child, (message) => {
      if (message.type === 'ready') ready();
      else if (message.type === 'start') this.starts.push(message);
      else if (message.type === 'end') this.ends.push(message);
    });
    this.instances.push(instance);
    let timer: NodeJS.Timeout | undefined;
    const outcome = await Promise.race([
      isReady.then(() => 'ready'),
      instance.exited.then(() => 'exited'),
      new Promise<string>((resolve) => (timer = setTimeout(() => resolve('timeout'), 45_000))),
    ]);
    clearTimeout(timer);
    if (outcome !== 'ready') {
      await instance.kill();
      throw new Error(`worker ${name} did not start (${outcome})\n${instance.tail()}`);
    }
    return instance;
  }

  async spawnAll(names: readonly string[], options: InstanceOptions): Promise<Instance[]> {
    return Promise.all(names.map((name) => this.spawn(name, options)));
  }

  /** Polls `condition` until it holds; fails after `timeoutMs` with `what` and the workers' last output. */
  async until(condition: () => boolean | Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (await condition()) return;
      if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}\n${this.tails()}`);
      await sleep(20);
    }
  }

  startsOf(key: string): StartEvent[] {
    return this.starts.filter((start) => start.key === key);
  }

  endsOf(key: string): EndEvent[] {
    return this.ends.filter((end) => end.key === key);
  }

  /** Handler starts per instance name. */
  split(): Record<string, number> {
    const split: Record<string, number> = {};
    for (const instance of this.instances) split[instance.name] = 0;
    for (const start of this.starts) split[start.instance] = (split[start.instance] ?? 0) + 1;
    return split;
  }

  tails(): string {
    return this.instances.map((instance) => instance.tail()).join('\n');
  }

  /** SIGKILLs every worker still running. Safe to call more than once, and after a failure. */
  async dispose(): Promise<void> {
    await Promise.all(this.instances.map((instance) => instance.kill()));
  }
}

/** p50 / p99 / max of a list of numbers, for reports. */
export function summary(values: readonly number[]): { n: number; p50: number; p99: number; max: number } {
  if (values.length === 0) return { n: 0, p50: NaN, p99: NaN, max: NaN };
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number): number => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
  return { n: sorted.length, p50: at(0.5), p99: at(0.99), max: sorted[sorted.length - 1] };
}

/** Prints a figure of a test to the terminal (the suite's reports, not debugging output). */
export function report(line: string): void {
  process.stdout.write(`  [instances] ${line}\n`);
}

/**
 * Gives a spec file one redis-server of its own (for the whole file) and a
 * fresh Fleet per test, whose processes are killed after the test even when
 * it fails.
 */
export function fleetSuite(serverOptions: RedisServerOptions = {}): { server(): TestRedisServer; fleet(prefix: string, topic: string): Fleet } {
  let redis: TestRedisServer | undefined;
  let current: Fleet | undefined;
  beforeAll(async () => {
    redis = await TestRedisServer.start(serverOptions);
  }, 20_000);
  afterEach(async () => {
    await current?.dispose();
    current = undefined;
  });
  afterAll(async () => {
    await redis?.dispose();
  });
  const server = (): TestRedisServer => {
    if (!redis) throw new Error('the suite redis-server did not start');
    return redis;
  };
  return {
    server,
    fleet: (prefix, topic) => {
      current = new Fleet({ url: server().url, prefix, topic });
      return current;
    },
  };
}
