// The producers the bench times in its own process: nestjs-delay's
// DelayService (through a real Nest application context, consume: false),
// a BullMQ Queue, and a bare Lua ZADD+HSET as the floor.
import 'reflect-metadata';
import { Module } from '@nestjs/common';
import type { INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Queue } from 'bullmq';
import type { JobsOptions } from 'bullmq';
import IORedis from 'ioredis';
import type { Redis } from 'ioredis';
import { DelayModule, DelayService } from 'nestjs-delay';
import type { DelayModuleOptions } from 'nestjs-delay';
import { JOB_NAME, QUEUE, TOPIC } from './protocol';
import type { BenchPayload } from './protocol';

/** After `delayMs` from now, or at `atMs` (epoch ms on this machine's clock). */
export type Due = { readonly delayMs: number } | { readonly atMs: number };

export interface Item {
  readonly key: string;
  readonly due: Due;
  readonly payload: BenchPayload;
}

export interface Producer {
  readonly label: string;
  one(item: Item): Promise<void>;
  /** Many items in one call, where the contender has one (BullMQ addBulk; the floor's batch script). */
  bulk?(items: readonly Item[]): Promise<void>;
  close(): Promise<void>;
}

/** DelayService.schedule through a Nest application context that only produces. */
export class DelayProducer implements Producer {
  private constructor(
    readonly label: string,
    private readonly app: INestApplicationContext,
    /** The application's DelayService, for benches that call more of it (the recurring bench). */
    readonly service: DelayService,
    private readonly ownClient: Redis | undefined,
  ) {}

  /** With `autoPipelining`, the driver is given an ioredis client with enableAutoPipelining (a what-if, not the default). */
  static async create(url: string, autoPipelining = false): Promise<DelayProducer> {
    const client = autoPipelining ? new IORedis(url, { enableAutoPipelining: true }) : undefined;
    const options: DelayModuleOptions = { driver: client ? { type: 'redis', client } : { type: 'redis', url }, consume: false };
    @Module({ imports: [DelayModule.forRoot(options)] })
    class ProducerModule {}
    const app = await NestFactory.createApplicationContext(ProducerModule, { logger: ['error', 'warn'] });
    const label = autoPipelining ? 'nestjs-delay DelayService.schedule (client with enableAutoPipelining)' : 'nestjs-delay DelayService.schedule';
    return new DelayProducer(label, app, app.get(DelayService), client);
  }

  async one({ key, due, payload }: Item): Promise<void> {
    await this.service.schedule(TOPIC, key, 'delayMs' in due ? { delay: due.delayMs, payload } : { at: due.atMs, payload });
  }

  /** DelayService.scheduleMany: one script call for the whole batch. */
  async bulk(items: readonly Item[]): Promise<void> {
    await this.service.scheduleMany(
      TOPIC,
      items.map(({ key, due, payload }) => ('delayMs' in due ? { key, delay: due.delayMs, payload } : { key, at: due.atMs, payload })),
    );
  }

  async close(): Promise<void> {
    await this.app.close();
    if (this.ownClient) await this.ownClient.quit();
  }
}

/** A BullMQ Queue: `add` with `{ delay, jobId }` one by one, `addBulk` for batches. */
export class BullmqProducer implements Producer {
  readonly label = 'BullMQ Queue.add';
  private readonly queue: Queue<BenchPayload>;

  constructor(url: string) {
    const { hostname, port } = new URL(url);
    this.queue = new Queue<BenchPayload>(QUEUE, { connection: { host: hostname, port: Number(port) } });
  }

  async one(item: Item): Promise<void> {
    await this.queue.add(JOB_NAME, item.payload, jobOptions(item));
  }

  async bulk(items: readonly Item[]): Promise<void> {
    await this.queue.addBulk(items.map((item) => ({ name: JOB_NAME, data: item.payload, opts: jobOptions(item) })));
  }

  async close(): Promise<void> {
    await this.queue.close();
  }
}

function jobOptions({ key, due }: Item): JobsOptions {
  if ('delayMs' in due) return { delay: due.delayMs, jobId: key };
  // BullMQ's due time is timestamp + delay; giving both pins it to atMs exactly.
  const now = Date.now();
  return { timestamp: now, delay: Math.max(0, due.atMs - now), jobId: key };
}

/** The floor: one Lua script doing ZADD (due time) and HSET (payload), nothing else. */
export const RAW_LUA = "redis.call('ZADD', KEYS[1], ARGV[1], ARGV[2]) redis.call('HSET', KEYS[2], ARGV[2], ARGV[3]) return 1";
export const RAW_KEYS = ['raw:{bench}:due', 'raw:{bench}:env'] as const;
/** The same for many actions in one call: ARGV is due, key, payload, due, key, payload, ... */
const RAW_BULK_LUA =
  "for n = 1, #ARGV, 3 do redis.call('ZADD', KEYS[1], ARGV[n], ARGV[n + 1]) redis.call('HSET', KEYS[2], ARGV[n + 1], ARGV[n + 2]) end return #ARGV / 3";

export class RawLuaProducer implements Producer {
  readonly label = 'raw Lua ZADD+HSET';
  private sha = '';
  private bulkSha = '';

  private constructor(private readonly redis: Redis) {}

  static async create(url: string): Promise<RawLuaProducer> {
    const producer = new RawLuaProducer(new IORedis(url));
    await producer.load();
    return producer;
  }

  /** Loads the script (again after SCRIPT FLUSH). */
  async load(): Promise<void> {
    this.sha = String(await this.redis.script('LOAD', RAW_LUA));
    this.bulkSha = String(await this.redis.script('LOAD', RAW_BULK_LUA));
  }

  async one({ key, due, payload }: Item): Promise<void> {
    const dueAt = 'delayMs' in due ? Date.now() + due.delayMs : due.atMs;
    await this.redis.evalsha(this.sha, 2, RAW_KEYS[0], RAW_KEYS[1], dueAt, key, JSON.stringify(payload));
  }

  /** The floor for a batch API: one script call for all the items. */
  async bulk(items: readonly Item[]): Promise<void> {
    const args: Array<string | number> = [];
    const now = Date.now();
    for (const { key, due, payload } of items) args.push('delayMs' in due ? now + due.delayMs : due.atMs, key, JSON.stringify(payload));
    await this.redis.evalsha(this.bulkSha, 2, RAW_KEYS[0], RAW_KEYS[1], ...args);
  }

  async close(): Promise<void> {
    await this.redis.quit();
  }
}
