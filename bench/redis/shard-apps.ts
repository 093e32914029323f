// The Nest applications of the shard benchmark: a producer (consume: false)
// and a consumer with an @OnDelayExpired handler that counts what it ran.
// Both use nestjs-delay's Redis driver on an ioredis Cluster client.
import 'reflect-metadata';
import { Inject, Injectable, Module } from '@nestjs/common';
import type { INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { DelayModule, DelayService, OnDelayExpired } from 'nestjs-delay';
import type { DelayContext, RedisDriverConfig } from 'nestjs-delay';
import type { BenchPayload } from './protocol';

/** The hot topic: every action of the bench goes to it. */
export const HOT_TOPIC = 'order.unpaid';
/** Handler concurrency in the consumer process (the topic's slots, shared by its shards). */
export const CONSUMER_CONCURRENCY = 100;

/** What the handler ran: how many times each key, and when the last run ended. */
export class RunRecorder {
  readonly runsByKey = new Map<string, number>();
  runs = 0;
  lastEndMs = 0;

  record(key: string): void {
    this.runsByKey.set(key, (this.runsByKey.get(key) ?? 0) + 1);
    this.runs++;
    this.lastEndMs = Date.now();
  }
}

const RECORDER = Symbol('RunRecorder');

@Injectable()
class HotTopicHandler {
  constructor(@Inject(RECORDER) private readonly recorder: RunRecorder) {}

  @OnDelayExpired(HOT_TOPIC, { concurrency: CONSUMER_CONCURRENCY, attempts: 1 })
  async onExpired(context: DelayContext<BenchPayload>): Promise<void> {
    this.recorder.record(context.key);
  }
}

export interface ShardApp {
  readonly service: DelayService;
  close(): Promise<void>;
}

/** A Nest application context with DelayModule on `driver`; with a recorder, it consumes the hot topic into it. */
export async function startShardApp(driver: RedisDriverConfig, recorder?: RunRecorder): Promise<ShardApp> {
  @Module({
    imports: [DelayModule.forRoot({ driver, consume: recorder !== undefined })],
    providers: recorder ? [HotTopicHandler, { provide: RECORDER, useValue: recorder }] : [],
  })
  class ShardBenchModule {}
  const app: INestApplicationContext = await NestFactory.createApplicationContext(ShardBenchModule, { logger: ['error', 'warn'] });
  return { service: app.get(DelayService), close: () => app.close() };
}
