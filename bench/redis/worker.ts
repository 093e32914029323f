// A worker process of the Redis benchmark: consumes the bench topic with
// nestjs-delay (a Nest application context with an @OnDelayExpired handler)
// or with a BullMQ Worker, and records, per run, the handler's start and end
// on this machine's clock. The main process forks it with a WorkerConfig as
// its one argument and talks to it over IPC (protocol.ts).
import 'reflect-metadata';
import { Injectable, Module } from '@nestjs/common';
import type { INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Worker } from 'bullmq';
import type { Job } from 'bullmq';
import { DelayModule, OnDelayExpired } from 'nestjs-delay';
import type { DelayContext } from 'nestjs-delay';
import { QUEUE, TOPIC } from './protocol';
import type { BenchPayload, ParentMessage, WorkerConfig, WorkerMessage, WorkerReport } from './protocol';

function readConfig(): WorkerConfig {
  const text = process.argv[2];
  if (text === undefined) throw new Error('usage: worker.js <config JSON>');
  return JSON.parse(text) as WorkerConfig;
}

const config = readConfig();

function send(message: WorkerMessage): void {
  process.send?.(message);
}

const LOOP_RESOLUTION_MS = 10;

class Recorder {
  private readonly keys: string[] = [];
  private readonly dueAt: number[] = [];
  private readonly start: number[] = [];
  private readonly end: number[] = [];
  private cpuAtReady = process.cpuUsage();
  private readonly loopDelay = monitorEventLoopDelay({ resolution: LOOP_RESOLUTION_MS });

  get done(): number {
    return this.end.length;
  }

  ready(): void {
    this.cpuAtReady = process.cpuUsage();
    this.loopDelay.enable();
  }

  /** The handler's whole work: note when it started and ended. */
  run(key: string, dueAt: number): void {
    this.start.push(Date.now());
    this.keys.push(key);
    this.dueAt.push(dueAt);
    this.end.push(Date.now());
  }

  report(): WorkerReport {
    const cpu = process.cpuUsage(this.cpuAtReady);
    // The histogram records whole intervals of its 10 ms timer: what is beyond 10 ms is lag.
    const ms = (nanoseconds: number): number => Math.max(0, nanoseconds / 1e6 - LOOP_RESOLUTION_MS);
    const { loopDelay } = this;
    return {
      keys: this.keys,
      dueAt: this.dueAt,
      start: this.start,
      end: this.end,
      cpuMicros: cpu.user + cpu.system,
      loopDelay: { p50: ms(loopDelay.percentile(50)), p99: ms(loopDelay.percentile(99)), max: ms(loopDelay.max) },
    };
  }
}

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

async function main(): Promise<void> {
  const stop = config.kind === 'delay' ? await startDelay() : await startBullmq();
  recorder.ready();
  let lastDone = -1;
  const progress = setInterval(() => {
    if (recorder.done !== lastDone) {
      lastDone = recorder.done;
      send({ type: 'progress', done: lastDone });
    }
  }, 50);
  process.on('message', (message: ParentMessage) => {
    if (message.type === 'report') {
      send({ type: 'report', report: recorder.report() });
    } else {
      clearInterval(progress);
      void stop().finally(() => process.exit(0));
    }
  });
  send({ type: 'ready' });
}

main().catch((error: unknown) => {
  send({ type: 'failed', error: error instanceof Error ? (error.stack ?? error.message) : String(error) });
  process.exit(1);
});
