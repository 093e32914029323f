// A worker process of the PostgreSQL bench: consumes the bench's actions
// with nestjs-delay (a Nest application context with an @OnDelayExpired
// handler), a pg-boss worker (work) or a graphile-worker runner (run), and
// records per run the handler's start and end. The main process forks it
// with a PgWorkerConfig as its one argument and talks to it over IPC.
//
// Settings, the same capacity for all: `concurrency` handlers in flight and
// `claimBatch` rows per claim. nestjs-delay: concurrency and claimBatch;
// pg-boss: batchSize = claimBatch with burstWhenBatchFull (without it a worker
// waits its polling interval after every batch), handlers of a batch run
// together; graphile-worker: concurrency and localQueue.size = claimBatch,
// completeJobBatchDelay 0 (its documented batching). Polling intervals stay
// at each system's default: pg-boss 2 s (no NOTIFY: queues are created with
// notify false and the instance with useListenNotify false), graphile-worker
// 2 s (NOTIFY on insert of a job that is due at once only).
import 'reflect-metadata';
import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Logger, run } from 'graphile-worker';
import { PgBoss } from 'pg-boss';
import { DelayModule, DelayService, OnDelayExpired } from 'nestjs-delay';
import type { DelayContext } from 'nestjs-delay';
import { useProposedClaim } from './proposed-claim';
import { NAME, SCHEMAS } from './protocol';
import type { BenchPayload, ParentMessage, PgWorkerConfig, WorkerMessage, WorkerReport } from './protocol';

function readConfig(): PgWorkerConfig {
  const text = process.argv[2];
  if (text === undefined) throw new Error('usage: worker.js <config JSON>');
  return JSON.parse(text) as PgWorkerConfig;
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

  run(payload: BenchPayload): void {
    this.start.push(Date.now());
    this.keys.push(payload.key);
    this.dueAt.push(payload.dueAt);
    this.end.push(Date.now());
  }

  report(): WorkerReport {
    const cpu = process.cpuUsage(this.cpuAtReady);
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
  @OnDelayExpired(NAME, { concurrency: config.concurrency, attempts: 1 })
  async onExpired(context: DelayContext<BenchPayload>): Promise<void> {
    if (context.payload === undefined) throw new Error(`no payload under ${context.key}`);
    recorder.run(context.payload);
  }
}

@Module({
  imports: [DelayModule.forRoot({ driver: { type: 'postgres', connectionString: config.url, schema: SCHEMAS.delay, claimBatch: config.claimBatch } })],
  providers: [BenchHandler],
})
class WorkerModule {}

async function startDelay(): Promise<() => Promise<void>> {
  if (config.proposedClaim === true) await useProposedClaim();
  const app = await NestFactory.createApplicationContext(WorkerModule, { logger: ['error', 'warn'] });
  if (config.zeroSkew === true) {
    // The driver's private offset object, reached by name: a what-if of the bench's, not an API.
    const service = app.get(DelayService) as unknown as { driver: { clockSkew?: { value: number } } };
    const skew = service.driver.clockSkew;
    if (skew === undefined) throw new Error('zeroSkew: the driver has no clockSkew any more');
    Object.defineProperty(skew, 'value', { get: () => 0, set: () => undefined });
  }
  return () => app.close();
}

async function startPgBoss(): Promise<() => Promise<void>> {
  const boss = new PgBoss({ connectionString: config.url, schema: SCHEMAS.pgboss });
  boss.on('error', (error: Error) => console.error(`pg-boss worker: ${error.message}`));
  await boss.start();
  await boss.work<BenchPayload>(NAME, { batchSize: config.claimBatch, burstWhenBatchFull: true }, async (jobs) => {
    for (const job of jobs) recorder.run(job.data);
  });
  return () => boss.stop({ graceful: true, timeout: 10_000 });
}

async function startGraphile(): Promise<() => Promise<void>> {
  const runner = await run({
    connectionString: config.url,
    schema: SCHEMAS.graphile,
    concurrency: config.concurrency,
    noHandleSignals: true,
    taskList: {
      [NAME]: async (payload) => {
        recorder.run(payload as BenchPayload);
      },
    },
    preset: { worker: { localQueue: { size: config.claimBatch }, completeJobBatchDelay: 0 } },
    // Errors and warnings only: its info lines would be written per job.
    logger: new Logger(() => (level, message) => {
      if (level === 'error' || level === 'warning') console.error(`graphile-worker: ${message}`);
    }),
  });
  return () => runner.stop();
}

async function main(): Promise<void> {
  const stop = config.kind === 'delay' ? await startDelay() : config.kind === 'pgboss' ? await startPgBoss() : await startGraphile();
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
