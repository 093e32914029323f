// A worker process of the recurring benchmark: runs the schedules of the
// bench topic with nestjs-delay (a Nest application context with an
// @OnRecurring handler) or with a BullMQ Worker on the job schedulers' queue,
// and records each run under its schedule key and scheduled instant. The main
// process forks it (../redis/worker-pool.ts) with a RecurringWorkerConfig.
import 'reflect-metadata';
import { Injectable, Module } from '@nestjs/common';
import type { INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Worker } from 'bullmq';
import type { Job } from 'bullmq';
import { DelayModule, OnRecurring } from 'nestjs-delay';
import type { DelayContext } from 'nestjs-delay';
import { Recorder } from '../redis/recorder';
import { serveWorker } from '../redis/serve-worker';
import { occurrenceId, RECURRING_QUEUE, RECURRING_TOPIC } from './protocol';
import type { RecurringWorkerConfig } from './protocol';

function readConfig(): RecurringWorkerConfig {
  const text = process.argv[2];
  if (text === undefined) throw new Error('usage: worker.js <config JSON>');
  return JSON.parse(text) as RecurringWorkerConfig;
}

const config = readConfig();
const recorder = new Recorder();

@Injectable()
class RecurringHandler {
  @OnRecurring(RECURRING_TOPIC, { concurrency: config.concurrency, attempts: 1 })
  async onOccurrence(context: DelayContext): Promise<void> {
    const scheduledAt = context.occurrence?.scheduledAt.getTime() ?? context.dueAt.getTime();
    // dueAt is the occurrence's due time: its scheduled instant plus the schedule's jitter.
    recorder.run(occurrenceId(context.key, scheduledAt), context.dueAt.getTime());
  }
}

@Module({
  imports: [DelayModule.forRoot({ driver: { type: 'redis', url: config.url } })],
  providers: [RecurringHandler],
})
class WorkerModule {}

async function startDelay(): Promise<() => Promise<void>> {
  const app: INestApplicationContext = await NestFactory.createApplicationContext(WorkerModule, { logger: ['error', 'warn'] });
  return () => app.close();
}

async function startBullmq(): Promise<() => Promise<void>> {
  const { hostname, port } = new URL(config.url);
  const worker = new Worker(
    RECURRING_QUEUE,
    async (job: Job) => {
      // A scheduler's job carries its schedule (repeatJobKey) and its scheduled instant (prevMillis).
      const scheduledAt = job.opts.prevMillis ?? Number(job.id?.slice(job.id.lastIndexOf(':') + 1));
      recorder.run(occurrenceId(job.repeatJobKey ?? job.id ?? '', scheduledAt), scheduledAt);
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

serveWorker(recorder, config.kind === 'delay' ? startDelay : startBullmq, config.quiet);
