import { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Subscription } from 'rxjs';
import { DelayEvent, DelayModule, DelayModuleOptions, DelayService, VirtualClock } from 'nestjs-delay';
import { TestRedisServer } from '../../support/redis-server';
import { TestPostgresServer } from '../../support/postgres-server';
import { REAL_TIME_ON_TIME_MS } from '../../support/on-time';
import { BatchRecorder } from './batch-recorder';

/** Module limits every batching app runs with, so the bad-input cases can reach them cheaply. */
export const MAX_BATCH_ITEMS = 50;
export const MAX_ITEM_BYTES = 512;
/** Four items of the largest size (each counts its JSON plus its length prefix: 4 bytes at this size) fit; a fifth does not. */
export const MAX_BATCH_BYTES = 4 * (MAX_ITEM_BYTES + 4) + 100;

export type Condition = () => boolean | Promise<boolean>;

/** One Nest application with the delay module and the recorder. */
export interface BatchApp {
  readonly app: INestApplication;
  readonly delay: DelayService;
  readonly recorder: BatchRecorder;
  /** Everything events$ emitted since boot. */
  readonly events: DelayEvent[];
}

/** Real time, always. */
export function realSleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));
}

/** Checks `condition` every few ms of real time; throws once `withinMs` have passed without it. */
export async function pollFor(condition: Condition, what: string, withinMs: number): Promise<void> {
  const deadline = performance.now() + withinMs;
  while (!(await condition())) {
    if (performance.now() > deadline) throw new Error(`${what}: not within ${withinMs} ms`);
    await realSleep(5);
  }
}

async function bootApp(options: DelayModuleOptions): Promise<BatchApp> {
  const moduleRef = await Test.createTestingModule({
    imports: [DelayModule.forRoot({ maxBatchItems: MAX_BATCH_ITEMS, maxPayloadBytes: MAX_ITEM_BYTES, maxBatchBytes: MAX_BATCH_BYTES, shutdownTimeout: '2s', ...options })],
    providers: [BatchRecorder],
  }).compile();
  const app = moduleRef.createNestApplication({ logger: false });
  await app.init();
  return { app, delay: app.get(DelayService), recorder: app.get(BatchRecorder), events: [] };
}

/**
 * One driver as the batching cases see it. The cases speak in the driver's
 * time: `now()` is its clock, `elapse` lets a span of it pass, `waitFor` lets
 * it run until something holds. The wheel runs on a VirtualClock (no real
 * waiting); Redis runs in real time on the suite's own redis-server.
 */
export abstract class BatchDriverFixture {
  abstract readonly name: 'wheel' | 'redis' | 'postgres';
  /** How late after its due time a batch may start in these tests (driver ms). */
  abstract readonly latenessMs: number;
  /** How late a batch may start and still count as on time, in assertions on `firedAt` (a busy machine's room). */
  abstract readonly onTimeMs: number;
  /** How close to a due time a "nothing yet" check may look. */
  abstract readonly marginMs: number;

  private readonly booted: Array<{ batch: BatchApp; subscription: Subscription }> = [];

  /** beforeAll */
  async setup(): Promise<void> {
    // nothing by default
  }

  /** afterAll */
  async teardown(): Promise<void> {
    // nothing by default
  }

  /** A fresh app on fresh state (a new clock, or a new Redis key prefix). */
  async boot(): Promise<BatchApp> {
    return this.register(await bootApp(this.moduleOptions(true)));
  }

  /** afterEach: lets every held handler go, then closes every app booted. */
  async shutdown(): Promise<void> {
    const booted = this.booted.splice(0);
    for (const { batch } of booted) batch.recorder.releaseAll();
    for (const { batch, subscription } of booted) {
      subscription.unsubscribe();
      await batch.app.close();
    }
  }

  /** Closes one app now (another instance going away); shutdown then leaves it alone. */
  async close(batch: BatchApp): Promise<void> {
    const at = this.booted.findIndex((entry) => entry.batch === batch);
    if (at < 0) return;
    const [{ subscription }] = this.booted.splice(at, 1);
    batch.recorder.releaseAll();
    subscription.unsubscribe();
    await batch.app.close();
  }

  abstract now(): number;
  /** Lets `ms` of driver time pass; every handler must be free to finish. */
  abstract elapse(ms: number): Promise<void>;
  /** Lets driver time reach `at`. */
  async elapseTo(at: number): Promise<void> {
    const left = at - this.now();
    if (left > 0) await this.elapse(left);
  }
  /** Lets driver time run (at most `withinMs` of it) until `condition` holds. Works while handlers are held. */
  abstract waitFor(condition: Condition, what: string, withinMs?: number): Promise<void>;

  /** Records the app's events and closes it at shutdown. */
  protected register(batch: BatchApp): BatchApp {
    const subscription = batch.delay.events$.subscribe((event) => batch.events.push(event));
    this.booted.push({ batch, subscription });
    return batch;
  }

  /** `fresh`: a new clock or key prefix; otherwise the state of the previous boot is shared. */
  protected abstract moduleOptions(fresh: boolean): DelayModuleOptions;
}

export const WHEEL_TICK_MS = 5;

export class WheelBatchFixture extends BatchDriverFixture {
  readonly name = 'wheel';
  readonly latenessMs = WHEEL_TICK_MS;
  readonly onTimeMs = WHEEL_TICK_MS;
  readonly marginMs = 1;
  private clock = new VirtualClock();
  /** A clock step running in the background; it stalls while a handler is held. */
  private step: Promise<void> | undefined;
  private stepFailure: unknown;

  protected moduleOptions(): DelayModuleOptions {
    this.clock = new VirtualClock(Date.UTC(2031, 4, 1));
    this.step = undefined;
    return { clock: this.clock, driver: { type: 'wheel', tickMs: WHEEL_TICK_MS } };
  }

  override async shutdown(): Promise<void> {
    await super.shutdown();
    await this.step;
  }

  now(): number {
    return this.clock.now();
  }

  async elapse(ms: number): Promise<void> {
    while (this.step) await this.step;
    this.rethrow();
    await this.clock.advance(ms);
  }

  async waitFor(condition: Condition, what: string, withinMs = 2_000): Promise<void> {
    const limit = this.clock.now() + withinMs;
    const realDeadline = performance.now() + 5_000;
    for (;;) {
      this.rethrow();
      if (await condition()) return;
      if (!this.step) {
        if (this.clock.now() >= limit) throw new Error(`wheel: ${what}: not within ${withinMs} ms of virtual time`);
        this.startStep(Math.min(WHEEL_TICK_MS, limit - this.clock.now()));
      }
      if (performance.now() > realDeadline) throw new Error(`wheel: ${what}: not within 5 s of real time`);
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
  }

  private startStep(ms: number): void {
    const step: Promise<void> = this.clock
      .advance(ms)
      .catch((error: unknown) => {
        this.stepFailure = error;
      })
      .finally(() => {
        if (this.step === step) this.step = undefined;
      });
    this.step = step;
  }

  private rethrow(): void {
    if (this.stepFailure === undefined) return;
    const failure = this.stepFailure;
    this.stepFailure = undefined;
    throw failure;
  }
}

let prefixSeq = 0;

export class RedisBatchFixture extends BatchDriverFixture {
  readonly name = 'redis';
  readonly latenessMs = 250;
  readonly onTimeMs = REAL_TIME_ON_TIME_MS;
  readonly marginMs = 40;
  private server: TestRedisServer | undefined;
  private prefix = '';

  override async setup(): Promise<void> {
    this.server = await TestRedisServer.start();
  }

  override async teardown(): Promise<void> {
    await this.server?.dispose();
    this.server = undefined;
  }

  /** A second app on the same Redis and key prefix as the last one booted (another instance). */
  async bootPeer(): Promise<BatchApp> {
    return this.register(await bootApp(this.moduleOptions(false)));
  }

  protected moduleOptions(fresh: boolean): DelayModuleOptions {
    if (!this.server) throw new Error('RedisBatchFixture.setup() was not called');
    if (fresh || this.prefix === '') this.prefix = `batching-${process.pid}-${++prefixSeq}-${Math.random().toString(36).slice(2, 8)}`;
    return { driver: { type: 'redis', url: this.server.url, prefix: this.prefix } };
  }

  now(): number {
    return Date.now();
  }

  elapse(ms: number): Promise<void> {
    return realSleep(ms);
  }

  waitFor(condition: Condition, what: string, withinMs = 2_000): Promise<void> {
    // Real time is shared with the rest of the machine: some slack on top.
    return pollFor(condition, `redis: ${what}`, withinMs + 1_000);
  }
}

let schemaSeq = 0;

/** The postgres driver on the file's own PostgreSQL, a fresh schema per boot, in real time. */
export class PostgresBatchFixture extends BatchDriverFixture {
  readonly name = 'postgres';
  readonly latenessMs = 250;
  readonly onTimeMs = REAL_TIME_ON_TIME_MS;
  readonly marginMs = 40;
  private server: TestPostgresServer | undefined;
  private schema = '';

  override async setup(): Promise<void> {
    this.server = await TestPostgresServer.start();
  }

  override async teardown(): Promise<void> {
    await this.server?.dispose();
    this.server = undefined;
  }

  /** A second app on the same database and schema as the last one booted (another instance). */
  async bootPeer(): Promise<BatchApp> {
    return this.register(await bootApp(this.moduleOptions(false)));
  }

  protected moduleOptions(fresh: boolean): DelayModuleOptions {
    if (!this.server) throw new Error('PostgresBatchFixture.setup() was not called');
    if (fresh || this.schema === '') this.schema = `batching_${process.pid}_${++schemaSeq}`;
    return { driver: { type: 'postgres', connectionString: this.server.url, schema: this.schema } };
  }

  now(): number {
    return Date.now();
  }

  elapse(ms: number): Promise<void> {
    return realSleep(ms);
  }

  waitFor(condition: Condition, what: string, withinMs = 2_000): Promise<void> {
    return pollFor(condition, `postgres: ${what}`, withinMs + 1_000);
  }
}

/** The drivers every batching case runs against. */
export function batchDrivers(): BatchDriverFixture[] {
  return [new WheelBatchFixture(), new RedisBatchFixture(), new PostgresBatchFixture()];
}
