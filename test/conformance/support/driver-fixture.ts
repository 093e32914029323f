import { INestApplication, Provider } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { DelayModule, DelayModuleOptions, DelayService, VirtualClock } from 'nestjs-delay';
import type { Cluster } from 'ioredis';
import { TestRedisCluster } from '../../support/redis-cluster';
import { TestRedisServer } from '../../support/redis-server';
import { TestPostgresServer } from '../../support/postgres-server';
import { REAL_TIME_ON_TIME_MS } from '../../support/on-time';
import { Probe } from './probe';

export type Condition = () => boolean | Promise<boolean>;

export interface Booted {
  readonly app: INestApplication;
  readonly delay: DelayService;
  readonly probe: Probe;
}

/** Real time, whatever the test does with fake timers. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));
}

/** Polls `condition` in real time until it holds; throws after `withinMs`. */
export async function pollUntil(condition: Condition, what: string, withinMs: number, everyMs = 5): Promise<void> {
  const deadline = performance.now() + withinMs;
  for (;;) {
    if (await condition()) return;
    if (performance.now() > deadline) throw new Error(`${what} did not happen within ${withinMs} ms`);
    await sleep(everyMs);
  }
}

/** Boots a Nest app around DelayModule with the given providers; logs off (failures are asserted, not read). */
export async function bootDelayApp(options: DelayModuleOptions, providers: Provider[]): Promise<INestApplication> {
  const moduleRef = await Test.createTestingModule({ imports: [DelayModule.forRoot(options)], providers }).compile();
  const app = moduleRef.createNestApplication({ logger: false });
  await app.init();
  return app;
}

/**
 * One driver under the conformance suite. The cases only talk to this, so
 * they read the same for both drivers: `waitFor` lets the driver's time run
 * until something holds, `elapse`/`elapseTo` let a span of it pass, `pause`
 * lets work proceed while handlers are being held on gates.
 */
export abstract class DriverFixture {
  abstract readonly name: 'wheel' | 'redis' | 'redis-cluster' | 'redis, 8 shards' | 'redis-cluster, 8 shards' | 'postgres';
  /** How late, in the driver's ms, a due action may fire in these tests. */
  abstract readonly latenessMs: number;
  /** How late a run may start and still count as on time, in assertions on `firedAt` (a busy machine's room). */
  abstract readonly onTimeMs: number;
  /** How long before a due time a "not fired yet" check is safe. */
  abstract readonly marginMs: number;

  private current: Booted | undefined;

  /** beforeAll */
  async start(): Promise<void> {
    // Nothing by default.
  }

  /** afterAll */
  async stop(): Promise<void> {
    // Nothing by default.
  }

  async boot(): Promise<Booted> {
    const app = await bootDelayApp({ ...this.moduleOptions(), shutdownTimeout: '1s' }, [Probe]);
    const probe = app.get(Probe);
    probe.now = () => this.now();
    this.current = { app, delay: app.get(DelayService), probe };
    return this.current;
  }

  /** afterEach: frees every held handler, then closes the app. */
  async shutdown(): Promise<void> {
    const booted = this.current;
    this.current = undefined;
    if (!booted) return;
    booted.probe.openAllGates();
    await booted.app.close();
  }

  /** The driver's clock. */
  abstract now(): number;
  /** Lets `ms` of the driver's time pass. No handler may be held on a gate. */
  abstract elapse(ms: number): Promise<void>;
  /** Lets the driver's time reach `at`. No handler may be held on a gate. */
  abstract elapseTo(at: number): Promise<void>;
  /** Lets work proceed (and up to `ms` pass) while handlers may be held on gates. */
  abstract pause(ms: number): Promise<void>;
  /** Lets the driver's time run, at most `withinMs` of it, until `condition` holds; throws otherwise. */
  abstract waitFor(condition: Condition, what: string, withinMs?: number): Promise<void>;

  protected abstract moduleOptions(): DelayModuleOptions;
}

export const WHEEL_TICK_MS = 10;

/** The wheel on a VirtualClock: time moves only when the fixture moves it, one tick at a time. */
export class WheelFixture extends DriverFixture {
  readonly name = 'wheel';
  readonly latenessMs = WHEEL_TICK_MS;
  readonly onTimeMs = WHEEL_TICK_MS;
  readonly marginMs = 1;
  private clock = new VirtualClock();
  /** An advance that may be held up by a handler waiting on a gate. */
  private inflight: Promise<void> | undefined;
  private failure: unknown;

  protected moduleOptions(): DelayModuleOptions {
    this.clock = new VirtualClock();
    this.inflight = undefined;
    return { clock: this.clock, driver: { type: 'wheel', tickMs: WHEEL_TICK_MS } };
  }

  override async shutdown(): Promise<void> {
    await super.shutdown();
    await this.inflight;
  }

  now(): number {
    return this.clock.now();
  }

  async elapse(ms: number): Promise<void> {
    await this.settled();
    await this.clock.advance(ms);
  }

  async elapseTo(at: number): Promise<void> {
    await this.settled();
    if (at > this.clock.now()) await this.clock.advanceTo(at);
  }

  async pause(ms: number): Promise<void> {
    if (!this.inflight) this.startAdvance(ms);
    await sleep(20);
    this.rethrow();
  }

  async waitFor(condition: Condition, what: string, withinMs = 2_000): Promise<void> {
    const limit = this.clock.now() + withinMs;
    const realDeadline = performance.now() + 5_000;
    for (;;) {
      this.rethrow();
      if (await condition()) return;
      if (!this.inflight) {
        const left = limit - this.clock.now();
        if (left <= 0) throw new Error(`wheel: ${what} did not happen within ${withinMs} ms (virtual)`);
        this.startAdvance(Math.min(WHEEL_TICK_MS, left));
      }
      await new Promise<void>((resolve) => setImmediate(resolve));
      if (performance.now() > realDeadline) throw new Error(`wheel: ${what} did not happen within 5 s of real time (is a handler held on a gate?)`);
    }
  }

  private startAdvance(ms: number): void {
    const advance: Promise<void> = this.clock
      .advance(ms)
      .catch((error: unknown) => {
        this.failure = error;
      })
      .finally(() => {
        if (this.inflight === advance) this.inflight = undefined;
      });
    this.inflight = advance;
  }

  private async settled(): Promise<void> {
    while (this.inflight) await this.inflight;
    this.rethrow();
  }

  private rethrow(): void {
    if (this.failure === undefined) return;
    const failure = this.failure;
    this.failure = undefined;
    throw failure;
  }
}

/**
 * The Redis driver on the file's own redis-server, a fresh key prefix per
 * test, in real time; with `shards`, every topic is spread over that many.
 */
export class RedisFixture extends DriverFixture {
  readonly name: 'redis' | 'redis-cluster' | 'redis, 8 shards' | 'redis-cluster, 8 shards';
  readonly latenessMs = 250;
  readonly onTimeMs = REAL_TIME_ON_TIME_MS;
  readonly marginMs = 30;
  private server: TestRedisServer | undefined;
  private prefixes = 0;

  constructor(protected readonly shards = 1) {
    super();
    this.name = shards === 1 ? 'redis' : 'redis, 8 shards';
  }

  override async start(): Promise<void> {
    this.server = await TestRedisServer.start();
  }

  override async stop(): Promise<void> {
    await this.server?.dispose();
    this.server = undefined;
  }

  protected moduleOptions(): DelayModuleOptions {
    if (!this.server) throw new Error('RedisFixture.start() was not called');
    this.prefixes++;
    return { driver: { type: 'redis', url: this.server.url, prefix: `conf-${process.pid}-${this.prefixes}`, shards: this.shards } };
  }

  now(): number {
    return Date.now();
  }

  elapse(ms: number): Promise<void> {
    return sleep(ms);
  }

  elapseTo(at: number): Promise<void> {
    return sleep(at - Date.now());
  }

  pause(ms: number): Promise<void> {
    return sleep(ms);
  }

  waitFor(condition: Condition, what: string, withinMs = 2_000): Promise<void> {
    // Real time is shared with the rest of the machine: allow some slack on top.
    return pollUntil(condition, `redis: ${what}`, withinMs + 1_000);
  }
}

/**
 * The Redis driver on a local Redis Cluster of the file's own (3 masters, 3
 * replicas), through an ioredis Cluster client the app passes in, as a user
 * of a cluster would: the driver leaves that client open, so the fixture
 * closes it after each app.
 */
export class RedisClusterFixture extends RedisFixture {
  override readonly name = this.shards === 1 ? 'redis-cluster' : 'redis-cluster, 8 shards';
  private cluster: TestRedisCluster | undefined;
  private clients: Cluster[] = [];
  private clusterPrefixes = 0;

  override async start(): Promise<void> {
    this.cluster = await TestRedisCluster.start();
  }

  override async stop(): Promise<void> {
    await this.cluster?.dispose();
    this.cluster = undefined;
  }

  override async shutdown(): Promise<void> {
    await super.shutdown();
    for (const client of this.clients.splice(0)) client.disconnect();
  }

  protected override moduleOptions(): DelayModuleOptions {
    if (!this.cluster) throw new Error('RedisClusterFixture.start() was not called');
    this.clusterPrefixes++;
    const client = this.cluster.client();
    this.clients.push(client);
    return { driver: { type: 'redis', client, prefix: `conf-${process.pid}-${this.clusterPrefixes}`, shards: this.shards } };
  }
}

/**
 * The postgres driver on the file's own PostgreSQL, a fresh schema per
 * test, in real time (the database's clock is this machine's).
 */
export class PostgresFixture extends DriverFixture {
  readonly name = 'postgres';
  readonly latenessMs = 250;
  readonly onTimeMs = REAL_TIME_ON_TIME_MS;
  readonly marginMs = 30;
  private server: TestPostgresServer | undefined;
  private schemas = 0;

  override async start(): Promise<void> {
    this.server = await TestPostgresServer.start();
  }

  override async stop(): Promise<void> {
    await this.server?.dispose();
    this.server = undefined;
  }

  protected moduleOptions(): DelayModuleOptions {
    if (!this.server) throw new Error('PostgresFixture.start() was not called');
    this.schemas++;
    return { driver: { type: 'postgres', connectionString: this.server.url, schema: `conf_${process.pid}_${this.schemas}` } };
  }

  now(): number {
    return Date.now();
  }

  elapse(ms: number): Promise<void> {
    return sleep(ms);
  }

  elapseTo(at: number): Promise<void> {
    return sleep(at - Date.now());
  }

  pause(ms: number): Promise<void> {
    return sleep(ms);
  }

  waitFor(condition: Condition, what: string, withinMs = 2_000): Promise<void> {
    return pollUntil(condition, `postgres: ${what}`, withinMs + 1_000);
  }
}

/**
 * The drivers every conformance case runs against: the wheel, Redis on one
 * server and on a Cluster, each also with every topic spread over 8 shards
 * (the hash of the keys the cases use puts them in different shards), and
 * PostgreSQL.
 */
export function conformanceDrivers(): DriverFixture[] {
  return [new WheelFixture(), new RedisFixture(), new RedisClusterFixture(), new RedisFixture(8), new RedisClusterFixture(8), new PostgresFixture()];
}
