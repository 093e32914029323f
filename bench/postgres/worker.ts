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
//
// `handler` (nestjs-delay, phase 11): a no-op; one INSERT into SINK_TABLE
// through a `pg` pool of the worker's (`concurrency` connections,
// autocommit); `transactional: true` with nothing of its own; or
// `transactional: true` with the same INSERT through `context.transaction`
// (the `pg` client of the run's transaction, which the driver opens on a pool
// of its own sized for `concurrency`).
import 'reflect-metadata';
import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Logger, run } from 'graphile-worker';
import { PgBoss } from 'pg-boss';
import { DelayModule, DelayService, OnDelayExpired } from 'nestjs-delay';
import type { DelayContext } from 'nestjs-delay';
import { Pool } from 'pg';
import type { PoolClient } from 'pg';
import { NAME, SCHEMAS, SINK_TABLE } from './protocol';
import type { BenchPayload, PgWorkerConfig } from './protocol';
import { Recorder } from '../redis/recorder';
import { serveWorker } from '../redis/serve-worker';

function readConfig(): PgWorkerConfig {
  const text = process.argv[2];
  if (text === undefined) throw new Error('usage: worker.js <config JSON>');
  return JSON.parse(text) as PgWorkerConfig;
}

const config = readConfig();

const recorder = new Recorder();

@Injectable()
class BenchHandler {
  @OnDelayExpired(NAME, { concurrency: config.concurrency, attempts: 1 })
  async onExpired(context: DelayContext<BenchPayload>): Promise<void> {
    if (context.payload === undefined) throw new Error(`no payload under ${context.key}`);
    recorder.run(context.payload.key, context.payload.dueAt);
  }
}

/** The worker's own pool for the plain handler that inserts (autocommit): as many connections as handlers in flight. */
const sinkPool = config.handler === 'insert' ? new Pool({ connectionString: config.url, max: config.concurrency }) : undefined;

@Injectable()
class InsertBenchHandler {
  @OnDelayExpired(NAME, { concurrency: config.concurrency, attempts: 1 })
  async onExpired(context: DelayContext<BenchPayload>): Promise<void> {
    if (context.payload === undefined) throw new Error(`no payload under ${context.key}`);
    await sinkPool?.query(`INSERT INTO ${SINK_TABLE} (key) VALUES ($1)`, [context.payload.key]);
    recorder.run(context.payload.key, context.payload.dueAt);
  }
}

@Injectable()
class TransactionalBenchHandler {
  @OnDelayExpired(NAME, { concurrency: config.concurrency, attempts: 1, transactional: true })
  async onExpired(context: DelayContext<BenchPayload>): Promise<void> {
    if (context.payload === undefined) throw new Error(`no payload under ${context.key}`);
    recorder.run(context.payload.key, context.payload.dueAt);
  }
}

@Injectable()
class TransactionalInsertBenchHandler {
  @OnDelayExpired(NAME, { concurrency: config.concurrency, attempts: 1, transactional: true })
  async onExpired(context: DelayContext<BenchPayload>): Promise<void> {
    if (context.payload === undefined) throw new Error(`no payload under ${context.key}`);
    const client = context.transaction as PoolClient;
    await client.query(`INSERT INTO ${SINK_TABLE} (key) VALUES ($1)`, [context.payload.key]);
    recorder.run(context.payload.key, context.payload.dueAt);
  }
}

const HANDLERS = { noop: BenchHandler, insert: InsertBenchHandler, transactional: TransactionalBenchHandler, 'transactional-insert': TransactionalInsertBenchHandler } as const;

@Module({
  imports: [DelayModule.forRoot({ driver: { type: 'postgres', connectionString: config.url, schema: SCHEMAS.delay, claimBatch: config.claimBatch } })],
  providers: [HANDLERS[config.handler ?? 'noop']],
})
class WorkerModule {}

/** The shape of the driver's PostgresClockOffset that the what-if pins (the class is not exported). */
interface PinnableClockOffset {
  readonly value: number;
  observe(databaseNow: number, sentAt: number, receivedAt?: number): void;
}

async function startDelay(): Promise<() => Promise<void>> {
  const app = await NestFactory.createApplicationContext(WorkerModule, { logger: ['error', 'warn'] });
  if (config.zeroOffset === true) {
    // The driver's private offset object, reached by name: a what-if of the bench's, not an API. It is pinned in
    // place rather than replaced, because every topic consumer (and its timer) was handed this same object when
    // the application started: a new object on the driver would reach none of them.
    const service = app.get(DelayService) as unknown as { driver: { clockOffset?: PinnableClockOffset } };
    const offset = service.driver.clockOffset;
    if (offset === undefined || typeof offset.observe !== 'function') throw new Error('zeroOffset: the driver has no clockOffset any more');
    Object.defineProperty(offset, 'value', { get: () => 0 });
    Object.defineProperty(offset, 'observe', { value: () => undefined });
  }
  return async () => {
    await app.close();
    await sinkPool?.end();
  };
}

async function startPgBoss(): Promise<() => Promise<void>> {
  const boss = new PgBoss({ connectionString: config.url, schema: SCHEMAS.pgboss });
  boss.on('error', (error: Error) => console.error(`pg-boss worker: ${error.message}`));
  await boss.start();
  await boss.work<BenchPayload>(NAME, { batchSize: config.claimBatch, burstWhenBatchFull: true }, async (jobs) => {
    for (const job of jobs) recorder.run(job.data.key, job.data.dueAt);
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
        const { key, dueAt } = payload as BenchPayload;
        recorder.run(key, dueAt);
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

serveWorker(recorder, () => (config.kind === 'delay' ? startDelay() : config.kind === 'pgboss' ? startPgBoss() : startGraphile()));
