// A worker process of the Redis benchmark: consumes the bench topic with
// nestjs-delay (a Nest application context with an @OnDelayExpired handler)
// or with a BullMQ Worker, and records, per run, the handler's start and end
// on this machine's clock. The main process forks it with a WorkerConfig as
// its one argument and talks to it over IPC (protocol.ts).
import 'reflect-metadata';
import { Injectable, Module } from '@nestjs/common';
import type { INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Worker } from 'bullmq';
import type { Job } from 'bullmq';
import { DelayModule, OnDelayExpired } from 'nestjs-delay';
import type { DelayContext } from 'nestjs-delay';
import { QUEUE, TOPIC } from './protocol';
import type { BenchPayload, WorkerConfig } from './protocol';
import { Recorder } from './recorder';
import { serveWorker } from './serve-worker';

function readConfig(): WorkerConfig {
  const text = process.argv[2];
  if (text === undefined) throw new Error('usage: worker.js <config JSON>');
  return JSON.parse(text) as WorkerConfig;
}

const config = readConfig();

const recorder = new Recorder();

@Injectable()
class BenchHandler {
  @OnDelayExpired(TOPIC, { concurrency: config.concurrency, attempts: 1 })
  async onExpired(context: DelayContext<BenchPayload>): Promise<void> {
    const payload = context.payload;
    recorder.run(context.key, payload === undefined ? context.dueAt.getTime() : payload.dueAt);
  }
}

@Module({
  imports: [DelayModule.forRoot({ driver: { type: 'redis', url: config.url, claimBatch: config.claimBatch } })],
  providers: [BenchHandler],
})
class WorkerModule {}

async function startDelay(): Promise<() => Promise<void>> {
  const app: INestApplicationContext = await NestFactory.createApplicationContext(WorkerModule, { logger: ['error', 'warn'] });
  return () => app.close();
}

async function startBullmq(): Promise<() => Promise<void>> {
  const { hostname, port } = new URL(config.url);
  const worker = new Worker<BenchPayload>(
    QUEUE,
    async (job: Job<BenchPayload>) => {
      recorder.run(job.id ?? '', job.data.dueAt);
    },
    {
      connection: { host: hostname, port: Number(port), maxRetriesPerRequest: null },
      concurrency: config.concurrency,
      // Nothing stays behind a completed run, as with nestjs-delay.
      removeOnComplete: { count: 0 },
      removeOnFail: { count: 0 },
    },
  );
  worker.on('error', (error) => console.error(`bullmq worker: ${error.message}`));
  await worker.waitUntilReady();
  return () => worker.close();
}

serveWorker(recorder, config.kind === 'delay' ? startDelay : startBullmq);
