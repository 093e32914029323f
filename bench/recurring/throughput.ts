// A child process of the recurring benchmark's throughput phase: one process
// holds N schedules due every second on one driver (nestjs-delay's wheel,
// Redis or PostgreSQL, a BullMQ Worker on job schedulers, or bare SQL as
// PostgreSQL's floor: postgres-floor.ts), creates them (then, on PostgreSQL,
// brings the planner's statistics up to date, as bench:postgres does),
// lets them run, and reports how many occurrences ran per second over a
// measured window, how late they started, how long the event loop stalled,
// how many were reported missed and how many warning lines the library wrote.
// The main process forks it with a ThroughputConfig and reads one message.
import 'reflect-metadata';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Injectable, Module } from '@nestjs/common';
import type { DynamicModule, INestApplicationContext, LoggerService } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Queue, Worker } from 'bullmq';
import type { Job } from 'bullmq';
import { DelayModule, DelayService, OnRecurring } from 'nestjs-delay';
import { Client } from 'pg';
import type { DelayContext } from 'nestjs-delay';
import { pump } from '../redis/pump';
import { startPostgresFloor } from './postgres-floor';

export type ThroughputContender = 'wheel' | 'redis' | 'postgres' | 'bullmq' | 'postgres-floor';

export interface ThroughputConfig {
  readonly contender: ThroughputContender;
  /** The Redis or PostgreSQL server (not for the wheel). */
  readonly url?: string;
  readonly schedules: number;
  /** From the last schedule created to the start of the measured window. */
  readonly warmupMs: number;
  readonly measureMs: number;
  readonly concurrency: number;
}

export interface ThroughputResult {
  readonly contender: ThroughputContender;
  readonly schedules: number;
  readonly createSeconds: number;
  /** Occurrences whose scheduled instant is in the window and that started by its end (+ 2 s), per second of window. */
  readonly firedPerSecond: number;
  readonly latenessP50: number;
  readonly latenessP99: number;
  /** The longest event-loop delay seen in the window, ms. */
  readonly maxStallMs: number;
  /** Occurrences the library reported missed during the window (recurringMissed), per second. */
  readonly missedPerSecond: number;
  /** Warning lines (and their bytes) written by the library over the whole run. */
  readonly warnLines: number;
  readonly warnBytes: number;
  readonly cpuSeconds: number;
}

export const THROUGHPUT_TOPIC = 'bench.every';
const QUEUE = 'bench-every';
const SECOND_MS = 1000;

function readConfig(): ThroughputConfig {
  const text = process.argv[2];
  if (text === undefined) throw new Error('usage: throughput.js <config JSON>');
  return JSON.parse(text) as ThroughputConfig;
}

const config = readConfig();

/** Starts of the occurrences, by scheduled instant, kept only for the measured window. */
class Starts {
  windowStart = Number.POSITIVE_INFINITY;
  windowEnd = Number.POSITIVE_INFINITY;
  readonly lateness: number[] = [];
  missed = 0;

  record(scheduledAt: number, now: number): void {
    if (scheduledAt >= this.windowStart && scheduledAt < this.windowEnd) this.lateness.push(now - scheduledAt);
  }
}

const starts = new Starts();

/** Counts what the library logs as warnings (the flood the issue measured), and writes errors. */
class CountingLogger implements LoggerService {
  lines = 0;
  bytes = 0;
  log(): void {}
  error(message: unknown): void {
    console.error(String(message));
  }
  warn(message: unknown): void {
    this.lines++;
    this.bytes += String(message).length + 1;
  }
}

@Injectable()
class EveryHandler {
  @OnRecurring(THROUGHPUT_TOPIC, { concurrency: config.concurrency, attempts: 1 })
  onOccurrence(context: DelayContext): void {
    starts.record(context.occurrence?.scheduledAt.getTime() ?? context.dueAt.getTime(), Date.now());
  }
}

function delayModule(): DynamicModule {
  switch (config.contender) {
    case 'wheel':
      return DelayModule.forRoot({ driver: { type: 'wheel' } });
    case 'redis':
      return DelayModule.forRoot({ driver: { type: 'redis', url: config.url as string } });
    default:
      return DelayModule.forRoot({ driver: { type: 'postgres', connectionString: config.url as string } });
  }
}

async function startDelay(logger: CountingLogger): Promise<{ create: () => Promise<number>; stop: () => Promise<void> }> {
  @Module({ imports: [delayModule()], providers: [EveryHandler] })
  class ThroughputModule {}
  const app: INestApplicationContext = await NestFactory.createApplicationContext(ThroughputModule, { logger });
  await app.init();
  const delay = app.get(DelayService);
  delay.events$.subscribe((event) => {
    if (event.type === 'recurringMissed' && Date.now() >= starts.windowStart && Date.now() < starts.windowEnd) starts.missed += event.size ?? 0;
  });
  const create = async (): Promise<number> => {
    const { seconds } = await pump(100, { count: config.schedules }, async (n) => {
      await delay.upsertRecurring(THROUGHPUT_TOPIC, `u${n}`, { every: '1s' });
    });
    return seconds;
  };
  return { create, stop: () => app.close() };
}

async function startBullmq(): Promise<{ create: () => Promise<number>; stop: () => Promise<void> }> {
  const { hostname, port } = new URL(config.url as string);
  const connection = { host: hostname, port: Number(port), maxRetriesPerRequest: null };
  const queue = new Queue(QUEUE, { connection });
  const worker = new Worker(
    QUEUE,
    async (job: Job) => {
      const scheduledAt = job.opts.prevMillis ?? job.timestamp;
      starts.record(scheduledAt, Date.now());
    },
    { connection, concurrency: config.concurrency, removeOnComplete: { count: 0 }, removeOnFail: { count: 0 } },
  );
  await worker.waitUntilReady();
  const create = async (): Promise<number> => {
    const { seconds } = await pump(100, { count: config.schedules }, async (n) => {
      await queue.upsertJobScheduler(`u${n}`, { every: SECOND_MS }, { name: 'every', data: { userId: `u${n}` }, opts: { removeOnComplete: { count: 0 } } });
    });
    return seconds;
  };
  return {
    create,
    stop: async () => {
      await worker.close();
      await queue.close();
    },
  };
}

/** ANALYZE of every table of the database at `url`. */
async function analyze(url: string): Promise<void> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    await client.query('ANALYZE');
  } finally {
    await client.end();
  }
}

function quantileOf(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

async function main(): Promise<void> {
  const logger = new CountingLogger();
  const contender =
    config.contender === 'bullmq'
      ? await startBullmq()
      : config.contender === 'postgres-floor'
        ? await startPostgresFloor(config.url as string, config.schedules, starts)
        : await startDelay(logger);
  const createSeconds = await contender.create();
  // On PostgreSQL the planner's statistics are brought up to date once the schedules exist, as bench:postgres does
  // before each drain: an installation runs on statistics autovacuum keeps, not on those of an empty table (the first
  // minute after a bulk creation is measured apart, in docs/benchmarks/recurring.md).
  if (config.contender === 'postgres' || config.contender === 'postgres-floor') await analyze(config.url as string);
  await new Promise((resolve) => setTimeout(resolve, config.warmupMs));
  // The window: whole seconds, from the next one on.
  starts.windowStart = Math.ceil(Date.now() / SECOND_MS) * SECOND_MS;
  starts.windowEnd = starts.windowStart + config.measureMs;
  const loop = monitorEventLoopDelay({ resolution: 10 });
  await new Promise((resolve) => setTimeout(resolve, starts.windowStart - Date.now()));
  loop.enable();
  const cpu = process.cpuUsage();
  await new Promise((resolve) => setTimeout(resolve, config.measureMs));
  loop.disable();
  const used = process.cpuUsage(cpu);
  // Occurrences of the window's last instants that start within 2 s still count.
  await new Promise((resolve) => setTimeout(resolve, 2_000));
  await contender.stop();
  const sorted = [...starts.lateness].sort((a, b) => a - b);
  const windowSeconds = config.measureMs / SECOND_MS;
  const result: ThroughputResult = {
    contender: config.contender,
    schedules: config.schedules,
    createSeconds,
    firedPerSecond: sorted.length / windowSeconds,
    latenessP50: quantileOf(sorted, 0.5),
    latenessP99: quantileOf(sorted, 0.99),
    maxStallMs: loop.max / 1e6,
    missedPerSecond: starts.missed / windowSeconds,
    warnLines: logger.lines,
    warnBytes: logger.bytes,
    cpuSeconds: (used.user + used.system) / 1e6,
  };
  process.send?.({ type: 'throughput', result });
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
