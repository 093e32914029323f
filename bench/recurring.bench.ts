// The recurring-actions benchmark: nestjs-delay's per-key recurring schedules
// (DelayService.upsertRecurring, @OnRecurring, Redis driver) and BullMQ's job
// schedulers (Queue.upsertJobScheduler, Worker) side by side, in one run, on
// one redis-server that the bench starts itself on a free port (FLUSHALL
// between phases).
//
//   npm run bench:recurring
//   BENCH_RECURRING_QUICK=1 npm run bench:recurring     (a smoke run, figures not comparable)
//   BENCH_RECURRING_PHASES=3,4 npm run bench:recurring  (only some phases; 4 needs 3)
//   BENCH_RESULTS_DIR=<dir> ...                         (the headline figures to <dir>/recurring.json, not bench/results)
//   BENCH_RECURRING_PHASES=5 npm run bench:recurring    (the throughput rows alone, to rerun on a quiet machine)
//   BENCH_RECURRING_CONTENDERS=wheel,redis ...          (phase 5 on some contenders only: wheel, redis, postgres, bullmq, postgres-floor)
//
// A run that is not QUICK writes the headline figures of the phases it ran
// into bench/results/recurring.json (bench/results.ts).
//
// Phases: (1) schedules created per second, one awaited at a time and 100 in
// flight; (2) firing lateness of 10,000 schedules due at the same minute
// boundary, one worker process; (3) Redis bytes per schedule at 100,000
// schedules, nothing due, and where they go; (4) the cost of idling with
// those 100,000 schedules and none due: Redis CPU and the worker's CPU;
// (5) throughput: 10,000 schedules due every second in one process, on the
// wheel, Redis and PostgreSQL drivers and BullMQ job schedulers (one child
// process each, bench/recurring/throughput.ts): occurrences run per second,
// lateness, the longest event-loop stall, missed, warning lines; (6) the
// cost of a catch-up: a per-second and a per-minute schedule 30 days behind
// (the topic paused on a VirtualClock, then resumed), on the wheel.
// (7) nestjs-delay alone, Redis and wheel: listRecurring of 100,000 schedules
// and creating 10,000 one call each against one upsertRecurringMany
// (bench/recurring/lists-phase.ts).
// Worker processes are the compiled bench/recurring/worker.ts. See BENCHMARKS.md.
import 'reflect-metadata';
import { readFileSync } from 'node:fs';
import { availableParallelism, cpus, totalmem } from 'node:os';
import { relative } from 'node:path';
import { performance } from 'node:perf_hooks';
import IORedis from 'ioredis';
import type { Redis } from 'ioredis';
import { actionKey } from './redis/protocol';
import type { ContenderKind, WorkerReport } from './redis/protocol';
import { pump } from './redis/pump';
import { allKeys, keyBytes, parseInfo, ServerWork, usedMemory } from './redis/redis-stats';
import { BenchRedisServer } from './redis/redis-server';
import { WorkerPool } from './redis/worker-pool';
import { recordResults } from './results';
import type { BarsRow, RatioRow, ResultsUpdate } from './results';
import { parseOccurrenceId, RECURRING_QUEUE, RECURRING_TOPIC } from './recurring/protocol';
import type { RecurringWorkerConfig } from './recurring/protocol';
import { measureLists } from './recurring/lists-phase';
import type { ListsResult } from './recurring/lists-phase';
import { BullmqRecurringScheduler, DelayRecurringScheduler } from './recurring/schedulers';
import type { RecurringScheduler, ScheduleSpec } from './recurring/schedulers';
import { fmt, libraryUnderTest, loadAverage, markdownTable, median, quantile } from './support';
import { BenchPostgresServer } from './postgres/pg-server';
import { fork } from 'node:child_process';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { DelayService, OnRecurring } from 'nestjs-delay';
import type { DelayEvent, MissedRunPolicy } from 'nestjs-delay';
import { DelayTestingModule, VirtualClock } from 'nestjs-delay/testing';
import type { ThroughputConfig, ThroughputContender, ThroughputResult } from './recurring/throughput';

const QUICK = process.env.BENCH_RECURRING_QUICK === '1';
const PHASES = new Set((process.env.BENCH_RECURRING_PHASES ?? '1,2,3,4,5,6,7').split(',').map((phase) => Number(phase.trim())));
const CONTENDERS = (process.env.BENCH_RECURRING_CONTENDERS ?? 'wheel,redis,postgres,postgres-floor,bullmq').split(',').map((name) => name.trim()) as ThroughputContender[];

const SETTINGS = {
  createCount: QUICK ? 2_000 : 10_000,
  /** Interleaved rounds of the creation rates; the median is reported. */
  createRounds: QUICK ? 1 : 3,
  inFlight: 100,
  latenessCount: QUICK ? 2_000 : 10_000,
  /** The jitter of the extra lateness case (nestjs-delay only: BullMQ has none). */
  jitterMs: 30_000,
  memoryCount: QUICK ? 10_000 : 100_000,
  /** Redis CPU with the schedules stored and no worker, before the worker starts. */
  baselineMs: QUICK ? 5_000 : 30_000,
  idleMs: QUICK ? 15_000 : 60_000,
  /** Handler concurrency of the worker process, both contenders. */
  concurrency: 100,
  /** Keys whose MEMORY USAGE is read per key kind; the rest is extrapolated. */
  memorySample: 500,
  /** Phase 5: schedules due every second in one process, the warm-up after creating them, the measured window. */
  throughputSchedules: QUICK ? 2_000 : 10_000,
  throughputWarmupMs: QUICK ? 3_000 : 5_000,
  throughputMeasureMs: QUICK ? 5_000 : 20_000,
  throughputConcurrency: 1_000,
  /** Phase 7: schedules listed, and schedules created per call and in bulk. */
  lists: { listCount: QUICK ? 10_000 : 100_000, bulkCount: QUICK ? 2_000 : 10_000 },
};

/** Once a year (1 January, 00:00 UTC): nothing falls due while the bench runs. */
const FAR_CRON = '0 0 1 1 *';
/** Every minute, at the minute boundary. */
const MINUTE_CRON = '* * * * *';
const MINUTE_MS = 60_000;
/** Creation must end this long before the boundary the schedules are timed at; else the bench waits for the next minute. */
const LEAD_MS = 40_000;

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function ratio(value: number): string {
  if (!Number.isFinite(value)) return 'n/a';
  return `${fmt(value, value >= 10 ? 1 : 2)}x`;
}

function load1(): string {
  return loadAverage().split(' / ')[0];
}

const LABEL: Record<ContenderKind, string> = { delay: 'nestjs-delay', bullmq: 'BullMQ' };

class Bench {
  readonly redis: Redis;

  constructor(readonly server: BenchRedisServer) {
    this.redis = new IORedis(server.url);
  }

  async flush(): Promise<void> {
    await this.redis.flushall();
    await this.redis.call('MEMORY', 'PURGE');
  }

  workerConfig(kind: ContenderKind, quiet = false): RecurringWorkerConfig {
    return { kind, url: this.server.url, concurrency: SETTINGS.concurrency, quiet };
  }

  async close(): Promise<void> {
    await this.redis.quit();
  }
}

const scheduleKey = (n: number): string => actionKey('user', n);

async function create(scheduler: RecurringScheduler, count: number, inFlight: number, spec: ScheduleSpec): Promise<{ done: number; seconds: number }> {
  return pump(inFlight, { count }, (n) => scheduler.upsert(scheduleKey(n), spec));
}

// ---- phase 1: creation rate ------------------------------------------------

interface CreateResult {
  readonly kind: ContenderKind;
  readonly inFlight: number;
  readonly rates: number[];
  readonly redisUsec: number[];
  readonly clientUsec: number[];
  readonly loads: string[];
}

async function measureCreation(bench: Bench, schedulers: readonly RecurringScheduler[]): Promise<CreateResult[]> {
  const results: CreateResult[] = [];
  for (const inFlight of [1, SETTINGS.inFlight]) {
    for (const scheduler of schedulers) results.push({ kind: scheduler.kind, inFlight, rates: [], redisUsec: [], clientUsec: [], loads: [] });
  }
  const work = new ServerWork(bench.redis);
  for (let round = 0; round < SETTINGS.createRounds; round++) {
    for (const result of results) {
      const scheduler = schedulers.find((each) => each.kind === result.kind) as RecurringScheduler;
      await bench.flush();
      await work.begin();
      const cpu = process.cpuUsage();
      const { done, seconds } = await create(scheduler, SETTINGS.createCount, result.inFlight, { cron: FAR_CRON, jitterMs: 0 });
      const used = process.cpuUsage(cpu);
      const { cpuSeconds } = await work.end();
      result.rates.push(done / seconds);
      result.redisUsec.push((cpuSeconds * 1e6) / done);
      result.clientUsec.push((used.user + used.system) / done);
      result.loads.push(load1());
    }
  }
  return results;
}

function creationTable(results: readonly CreateResult[]): string {
  const rows = results.map((result) => {
    const bull = results.find((each) => each.kind === 'bullmq' && each.inFlight === result.inFlight);
    const rate = median(result.rates);
    return [
      `${LABEL[result.kind]}, ${result.inFlight === 1 ? 'one awaited at a time' : `${result.inFlight} in flight`}`,
      fmt(rate),
      result.kind === 'bullmq' || !bull ? '' : ratio(rate / median(bull.rates)),
      fmt(median(result.redisUsec), 1),
      fmt(median(result.clientUsec), 1),
      result.loads.join(', '),
    ];
  });
  return markdownTable(
    ['schedules created', 'per second (median)', 'x BullMQ', 'Redis CPU µs per schedule', 'bench process CPU µs per schedule', 'load (1 min) per round'],
    rows,
    [false, true, true, true, true, false],
  );
}

// ---- phase 2: firing lateness ----------------------------------------------

/** The two lateness cases of the headline ratio. */
const LATENESS_BULLMQ = 'BullMQ';
const LATENESS_DELAY = 'nestjs-delay, no jitter (the default)';

interface LatenessCase {
  readonly label: string;
  readonly scheduler: RecurringScheduler;
  readonly jitterMs: number;
}

interface LatenessResult {
  readonly label: string;
  readonly boundary: number;
  readonly createSeconds: number;
  readonly ran: number;
  readonly distinct: number;
  readonly duplicates: number;
  readonly missed: number;
  /** Runs of another instant than the boundary's (there should be none). */
  readonly others: number;
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
  /** The last handler start, after the first occurrence's due time, s. */
  readonly spreadSeconds: number;
  readonly workerCpuSeconds: number;
  readonly load: string;
}

/** Waits, if needed, so that creation ends well before the next minute boundary; returns that boundary. */
async function nextBoundary(): Promise<number> {
  const intoMinute = Date.now() % MINUTE_MS;
  if (MINUTE_MS - intoMinute < LEAD_MS) await sleep(MINUTE_MS - intoMinute + 200);
  return Math.ceil(Date.now() / MINUTE_MS) * MINUTE_MS;
}

async function measureLateness(bench: Bench, testCase: LatenessCase): Promise<LatenessResult> {
  const count = SETTINGS.latenessCount;
  await bench.flush();
  const pool = await WorkerPool.start(1, bench.workerConfig(testCase.scheduler.kind), WORKER_SCRIPT);
  try {
    const boundary = await nextBoundary();
    const { seconds } = await create(testCase.scheduler, count, SETTINGS.inFlight, { cron: MINUTE_CRON, jitterMs: testCase.jitterMs });
    if (Date.now() > boundary - 1_000) console.log(`  (creation for ${testCase.label} ended ${fmt((Date.now() - boundary) / 1000, 1)} s from the boundary: the figures are not valid)`);
    // Every occurrence's run, then a few seconds for any second run of one, before the next minute's can start.
    const deadline = boundary + testCase.jitterMs + 45_000;
    await pool.waitForDone(count, deadline);
    await sleep(Math.max(0, Math.min(3_000, boundary + MINUTE_MS - 2_000 - Date.now())));
    const reports = await pool.reports();
    return summariseLateness(testCase, boundary, seconds, reports);
  } finally {
    await pool.stop();
  }
}

function summariseLateness(testCase: LatenessCase, boundary: number, createSeconds: number, reports: readonly WorkerReport[]): LatenessResult {
  const seen = new Map<string, number>();
  const lateness: number[] = [];
  let others = 0;
  let lastStart = boundary;
  let firstDue = Infinity;
  for (const report of reports) {
    for (let n = 0; n < report.keys.length; n++) {
      const { key, scheduledAt } = parseOccurrenceId(report.keys[n]);
      if (scheduledAt !== boundary) {
        others++;
        continue;
      }
      seen.set(key, (seen.get(key) ?? 0) + 1);
      lateness.push(report.start[n] - report.dueAt[n]);
      lastStart = Math.max(lastStart, report.start[n]);
      firstDue = Math.min(firstDue, report.dueAt[n]);
    }
  }
  const sorted = Float64Array.from(lateness).sort();
  return {
    label: testCase.label,
    boundary,
    createSeconds,
    ran: lateness.length,
    distinct: seen.size,
    duplicates: lateness.length - seen.size,
    missed: SETTINGS.latenessCount - seen.size,
    others,
    p50: quantile(sorted, 0.5),
    p99: quantile(sorted, 0.99),
    max: sorted.length > 0 ? sorted[sorted.length - 1] : NaN,
    spreadSeconds: (lastStart - firstDue) / 1000,
    workerCpuSeconds: reports.reduce((sum, report) => sum + report.cpuMicros, 0) / 1e6,
    load: load1(),
  };
}

function latenessTable(results: readonly LatenessResult[]): string {
  const rows = results.map((result) => [
    result.label,
    fmt(result.p50),
    fmt(result.p99),
    fmt(result.max),
    fmt(result.spreadSeconds, 1),
    fmt(result.ran),
    fmt(result.duplicates),
    fmt(result.missed),
    fmt(result.others),
    fmt(result.workerCpuSeconds, 1),
    result.load,
  ]);
  return markdownTable(
    [`${fmt(SETTINGS.latenessCount)} schedules due at one minute boundary`, 'lateness p50 (ms)', 'p99 (ms)', 'max (ms)', 'first due to last start (s)', 'runs', 'duplicates', 'misses', 'runs of another minute', 'worker CPU (s)', 'load (1 min)'],
    rows,
    [false, true, true, true, true, true, true, true, true, true, true],
  );
}

// ---- phases 3 and 4: memory and idling ----------------------------------------

interface KeyKind {
  readonly kind: string;
  readonly keys: number;
  readonly bytes: number;
  /** Elements of the key (hash fields, zset members), summed over the kind's keys. */
  readonly elements: number;
}

interface FootprintResult {
  readonly kind: ContenderKind;
  readonly count: number;
  readonly createSeconds: number;
  readonly bytesPerSchedule: number;
  /** used_memory before the schedules were created. */
  readonly memoryBefore: number;
  readonly keyKinds: KeyKind[];
  /** An example of each stored value that grows with the schedules, bytes: the tick's envelope, the job's data... */
  readonly examples: Array<{ readonly what: string; readonly bytes: number }>;
  readonly load: string;
  idle?: IdleResult;
}

interface IdleResult {
  /** Until the worker had run what was due at its start (nestjs-delay: each schedule's first tick), s. */
  readonly settleSeconds: number;
  readonly bytesPerScheduleAfter: number;
  readonly baselineServerMs: number;
  readonly serverMs: number;
  readonly workerMs: number;
  readonly commands: number;
  readonly topCommands: string;
  readonly load: string;
}

/** A key's kind: the key with its schedule's key and any instant replaced. */
function kindOf(key: string): string {
  return key.replace(/user-\d{7}/g, '<key>').replace(/:\d{10,}/g, ':<instant>');
}

async function elementsOf(redis: Redis, key: string): Promise<number> {
  const type = await redis.type(key);
  if (type === 'hash') return redis.hlen(key);
  if (type === 'zset') return redis.zcard(key);
  if (type === 'list') return redis.llen(key);
  if (type === 'set') return redis.scard(key);
  return 1;
}

async function keyKinds(redis: Redis): Promise<KeyKind[]> {
  const groups = new Map<string, string[]>();
  for (const key of await allKeys(redis)) {
    const kind = kindOf(key);
    const group = groups.get(kind);
    if (group) group.push(key);
    else groups.set(kind, [key]);
  }
  const kinds: KeyKind[] = [];
  for (const [kind, keys] of groups) {
    const sample = keys.slice(0, SETTINGS.memorySample);
    let bytes = 0;
    let elements = 0;
    for (const key of sample) {
      bytes += await keyBytes(redis, key);
      elements += await elementsOf(redis, key);
    }
    const scale = keys.length / sample.length;
    kinds.push({ kind, keys: keys.length, bytes: bytes * scale, elements: elements * scale });
  }
  return kinds.sort((a, b) => b.bytes - a.bytes);
}

async function examples(redis: Redis, kind: ContenderKind): Promise<FootprintResult['examples']> {
  const key = scheduleKey(0);
  if (kind === 'delay') {
    const envelope = await redis.hget(`delay:{${RECURRING_TOPIC}}:env`, key);
    const text = envelope ?? '';
    // token|attempt|dueAt|payload: the payload is the series state (recurring/series-state.ts), which ends with the occurrences' payload as JSON text.
    const state = text.split('|').slice(3).join('|');
    return [
      { what: 'tick envelope (HASH value)', bytes: Buffer.byteLength(text) },
      { what: '... of which the series state', bytes: Buffer.byteLength(state) },
      { what: 'schedule key', bytes: Buffer.byteLength(key) },
    ];
  }
  const scheduler = await redis.hgetall(`bull:${RECURRING_QUEUE}:repeat:${key}`);
  const jobs = (await allKeys(redis)).filter((each) => each.startsWith(`bull:${RECURRING_QUEUE}:repeat:${key}:`));
  const job = jobs[0] === undefined ? {} : await redis.hgetall(jobs[0]);
  const size = (record: Record<string, string>): number => Object.entries(record).reduce((sum, [field, value]) => sum + Buffer.byteLength(field) + Buffer.byteLength(value), 0);
  return [
    { what: 'scheduler HASH, fields and values', bytes: size(scheduler) },
    { what: 'next job HASH, fields and values', bytes: size(job) },
    { what: 'schedule key', bytes: Buffer.byteLength(key) },
  ];
}

/** Phase 3: create `memoryCount` schedules due next 1 January and read what Redis holds. */
async function measureFootprint(bench: Bench, scheduler: RecurringScheduler): Promise<FootprintResult> {
  const count = SETTINGS.memoryCount;
  // Scripts loaded and connections open before the baseline.
  await create(scheduler, 100, SETTINGS.inFlight, { cron: FAR_CRON, jitterMs: 0 });
  await bench.flush();
  await sleep(200);
  const before = await usedMemory(bench.redis);
  const { seconds } = await create(scheduler, count, SETTINGS.inFlight, { cron: FAR_CRON, jitterMs: 0 });
  await sleep(200);
  const after = await usedMemory(bench.redis);
  return {
    kind: scheduler.kind,
    count,
    createSeconds: seconds,
    bytesPerSchedule: (after - before) / count,
    memoryBefore: before,
    keyKinds: await keyKinds(bench.redis),
    examples: await examples(bench.redis, scheduler.kind),
    load: load1(),
  };
}

/** nestjs-delay: until no tick is due within the next minute (each schedule's first tick, armed at creation, has run). */
async function settled(redis: Redis, kind: ContenderKind): Promise<boolean> {
  if (kind === 'bullmq') return true;
  return (await redis.zcount(`delay:{${RECURRING_TOPIC}}:ticks`, '-inf', Date.now() + MINUTE_MS)) === 0;
}

/** Phase 4, on phase 3's data: Redis CPU without a worker, then one worker idling with nothing due. */
async function measureIdle(bench: Bench, footprint: FootprintResult): Promise<IdleResult> {
  const work = new ServerWork(bench.redis);
  await work.begin();
  await sleep(SETTINGS.baselineMs);
  const baseline = await work.end();
  const pool = await WorkerPool.start(1, bench.workerConfig(footprint.kind, true), WORKER_SCRIPT);
  try {
    const startedAt = performance.now();
    while (!(await settled(bench.redis, footprint.kind))) await sleep(250);
    const settleSeconds = (performance.now() - startedAt) / 1000;
    // Leave the worker's catch-up behind before measuring.
    await sleep(3_000);
    const memoryAfter = await usedMemory(bench.redis);
    const [atStart] = await pool.reports();
    await work.begin();
    await sleep(SETTINGS.idleMs);
    const { cpuSeconds, commands } = await work.end();
    const [atEnd] = await pool.reports();
    const perMinute = MINUTE_MS / SETTINGS.idleMs;
    return {
      settleSeconds,
      bytesPerScheduleAfter: (memoryAfter - footprint.memoryBefore) / footprint.count,
      baselineServerMs: ((baseline.cpuSeconds * 1000) / SETTINGS.baselineMs) * MINUTE_MS,
      serverMs: cpuSeconds * 1000 * perMinute,
      workerMs: ((atEnd.cpuMicros - atStart.cpuMicros) / 1000) * perMinute,
      commands: commands.reduce((sum, stat) => sum + stat.calls, 0) * perMinute,
      topCommands: commands
        .slice(0, 4)
        .map((stat) => `${stat.command} ${fmt(stat.calls * perMinute)}`)
        .join(', '),
      load: load1(),
    };
  } finally {
    await pool.stop();
  }
}

function memoryTable(results: readonly FootprintResult[]): string {
  const bull = results.find((each) => each.kind === 'bullmq');
  const rows = results.map((result) => [
    LABEL[result.kind],
    fmt(result.count),
    fmt(result.count / result.createSeconds),
    fmt(result.bytesPerSchedule),
    result.kind === 'bullmq' || !bull ? '' : ratio(result.bytesPerSchedule / bull.bytesPerSchedule),
    result.idle ? fmt(result.idle.bytesPerScheduleAfter) : 'n/a',
    result.load,
  ]);
  return markdownTable(
    ['schedules due next 1 January', 'schedules', 'created per second (100 in flight)', 'Redis bytes per schedule', 'x BullMQ', 'bytes per schedule once a worker ran what was due', 'load (1 min)'],
    rows,
    [false, true, true, true, true, true, false],
  );
}

function breakdownTable(result: FootprintResult): string {
  const rows = result.keyKinds.map((kind) => [
    kind.kind,
    fmt(kind.keys),
    fmt(kind.elements),
    fmt(kind.bytes / 1024 / 1024, 1),
    fmt(kind.bytes / result.count),
    kind.elements > kind.keys ? fmt(kind.bytes / kind.elements) : '',
  ]);
  const table = markdownTable(['key kind (MEMORY USAGE)', 'keys', 'elements', 'MiB', 'bytes per schedule', 'bytes per element'], rows, [false, true, true, true, true, true]);
  const sizes = result.examples.map((example) => `${example.what}: ${fmt(example.bytes)} B`).join('; ');
  return `${table}\n\nOne schedule's stored values: ${sizes}.`;
}

function idleTable(results: readonly FootprintResult[]): string {
  const rows = results
    .filter((result) => result.idle)
    .map((result) => {
      const idle = result.idle as IdleResult;
      return [
        LABEL[result.kind],
        fmt(idle.settleSeconds, 1),
        fmt(idle.baselineServerMs, 1),
        fmt(idle.serverMs, 1),
        fmt(idle.workerMs, 1),
        fmt(idle.commands),
        idle.topCommands,
        idle.load,
      ];
    });
  return markdownTable(
    [
      `${sizeOf(results)} schedules, none due, 1 worker`,
      'first ticks run in (s)',
      'Redis CPU ms per 60 s, no worker',
      'Redis CPU ms per 60 s, worker idling',
      'worker CPU ms per 60 s',
      'commands per 60 s',
      'busiest commands per 60 s',
      'load (1 min)',
    ],
    rows,
    [false, true, true, true, true, true, false, false],
  );
}

function sizeOf(results: readonly FootprintResult[]): string {
  return fmt(results[0]?.count ?? 0);
}

// ---- results ---------------------------------------------------------------

/**
 * This run's headline comparisons with BullMQ, for bench/results/recurring.json
 * (rows of the phases that ran; labels as in the file, whose sizes are those
 * of a full run). The lateness row holds two figures of the one
 * run, the p50 and the p99 ratio (nestjs-delay without jitter), as the
 * summary gives them.
 */
function recurringResults(
  creation: readonly CreateResult[],
  lateness: readonly LatenessResult[],
  footprints: readonly FootprintResult[],
  throughput: readonly ThroughputRow[],
  lists: readonly ListsResult[],
  runs: string,
): ResultsUpdate {
  const rows: RatioRow[] = [];
  const round = (value: number): number => Math.round(value * 100) / 100;
  const push = (label: string, values: readonly number[], better: 'higher' | 'lower'): void => {
    if (values.length > 0 && values.every((value) => Number.isFinite(value))) rows.push({ label, runs: values.map(round), better });
  };
  const bull = lateness.find((result) => result.label === LATENESS_BULLMQ);
  const ours = lateness.find((result) => result.label === LATENESS_DELAY);
  if (bull && ours) push('lateness at one minute boundary, 10,000 schedules', [ours.p50 / bull.p50, ours.p99 / bull.p99], 'lower');
  const footprint = (kind: ContenderKind): FootprintResult | undefined => footprints.find((result) => result.kind === kind);
  const ourFootprint = footprint('delay');
  const bullFootprint = footprint('bullmq');
  if (ourFootprint?.idle && bullFootprint?.idle) push('CPU of an idle worker', [ourFootprint.idle.workerMs / bullFootprint.idle.workerMs], 'lower');
  if (ourFootprint && bullFootprint) push('bytes per schedule at 100,000', [ourFootprint.bytesPerSchedule / bullFootprint.bytesPerSchedule], 'lower');
  const created = (kind: ContenderKind): CreateResult | undefined => creation.find((result) => result.kind === kind && result.inFlight === SETTINGS.inFlight);
  const ourCreation = created('delay');
  const bullCreation = created('bullmq');
  if (ourCreation && bullCreation) push('creation, 100 in flight', [median(ourCreation.rates) / median(bullCreation.rates)], 'higher');
  const fired = (contender: ThroughputContender): number | undefined => throughput.find((row) => row.result.contender === contender)?.result.firedPerSecond;
  const bullFired = fired('bullmq');
  if (bullFired !== undefined) {
    for (const contender of ['wheel', 'redis', 'postgres'] as const) {
      const ours = fired(contender);
      if (ours !== undefined) push(`run per second, 10,000 schedules every second (${contender === 'wheel' ? 'wheel' : contender === 'redis' ? 'Redis' : 'PostgreSQL'})`, [ours / bullFired], 'higher');
    }
  }
  return { runs, rows: { 'recurring-vs-bullmq': rows, 'recurring-lists': listsRows(lists) } };
}

/** Phase 7's rows: seconds per driver, for bench/results/recurring.json. */
function listsRows(lists: readonly ListsResult[]): BarsRow[] {
  if (lists.length === 0) return [];
  const row = (label: string, value: (result: ListsResult) => number): BarsRow => ({
    label,
    bars: lists.map((result) => ({ name: result.driver, value: Math.round(value(result) * 100) / 100 })),
  });
  return [
    row(`listRecurring, ${LISTS_SIZE} schedules`, (result) => result.listSeconds),
    row(`create ${BULK_SIZE} schedules, upsertRecurring one at a time`, (result) => result.perCallSeconds),
    row(`create ${BULK_SIZE} schedules, upsertRecurringMany`, (result) => result.bulkSeconds),
    row(`reconcile ${BULK_SIZE} unchanged schedules, upsertRecurringMany`, (result) => result.reconcileSeconds),
  ];
}

/** Row labels name a full run's sizes, as the other rows do. */
const LISTS_SIZE = '100,000';
const BULK_SIZE = '10,000';

function listsTable(lists: readonly ListsResult[]): string {
  const rows = lists.map((result) => [
    result.driver,
    fmt(result.listSeconds, 2),
    fmt(result.pageSeconds * 1000, 1),
    fmt(result.perCallSeconds, 2),
    fmt(result.bulkSeconds, 2),
    fmt(result.perCallSeconds / result.bulkSeconds, 1),
    fmt(result.reconcileSeconds, 2),
  ]);
  return markdownTable(
    ['driver', `listRecurring of ${fmt(SETTINGS.lists.listCount)}, s`, 'one page of 100, ms', `${fmt(SETTINGS.lists.bulkCount)} upsertRecurring one at a time, s`, 'one upsertRecurringMany, s', 'bulk faster by', 'upsertRecurringMany again, unchanged, s'],
    rows,
    [false, true, true, true, true, true, true],
  );
}

// ---- phase 5: throughput, 10,000 schedules every second ----------------------

const THROUGHPUT_SCRIPT = `${__dirname}/recurring/throughput.js`;
const THROUGHPUT_LABEL: Record<ThroughputContender, string> = {
  wheel: 'nestjs-delay, wheel',
  redis: 'nestjs-delay, Redis',
  postgres: 'nestjs-delay, PostgreSQL',
  bullmq: 'BullMQ job schedulers (Redis)',
  'postgres-floor': 'floor: bare SQL on PostgreSQL (two statements per batch)',
};

interface ThroughputRow {
  readonly result: ThroughputResult;
  readonly load: string;
}

/** Runs one contender's child process and returns its report. BENCH_RECURRING_CPU_PROF=<dir> profiles it. */
function runThroughput(config: ThroughputConfig): Promise<ThroughputResult> {
  const profileDir = process.env.BENCH_RECURRING_CPU_PROF;
  const execArgv = profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`, `--cpu-prof-name=throughput-${config.contender}-${Date.now()}.cpuprofile`] : [];
  return new Promise((resolve, reject) => {
    const child = fork(THROUGHPUT_SCRIPT, [JSON.stringify(config)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'], execArgv });
    let result: ThroughputResult | undefined;
    child.on('message', (message: { type: string; result: ThroughputResult }) => {
      if (message.type === 'throughput') result = message.result;
    });
    child.on('exit', (code) => (result ? resolve(result) : reject(new Error(`throughput child for ${config.contender} exited with ${code} and no report`))));
  });
}

async function measureThroughput(bench: Bench): Promise<ThroughputRow[]> {
  const rows: ThroughputRow[] = [];
  for (const contender of CONTENDERS) {
    let url: string | undefined;
    let postgres: BenchPostgresServer | undefined;
    if (contender === 'redis' || contender === 'bullmq') {
      await bench.flush();
      url = bench.server.url;
    } else if (contender === 'postgres' || contender === 'postgres-floor') {
      postgres = await BenchPostgresServer.start(['max_connections=200']);
      url = postgres.url;
    }
    const load = load1();
    try {
      const result = await runThroughput({
        contender,
        url,
        schedules: SETTINGS.throughputSchedules,
        warmupMs: SETTINGS.throughputWarmupMs,
        measureMs: SETTINGS.throughputMeasureMs,
        concurrency: SETTINGS.throughputConcurrency,
      });
      console.log(`  ${THROUGHPUT_LABEL[contender]}: ${fmt(result.firedPerSecond)} run per second, created in ${fmt(result.createSeconds, 1)} s, load ${load}`);
      rows.push({ result, load });
    } finally {
      await postgres?.dispose();
    }
  }
  return rows;
}

function throughputTable(rows: readonly ThroughputRow[]): string {
  return markdownTable(
    ['contender', 'run per second (target: all)', 'lateness p50 / p99 ms', 'longest event-loop stall ms', 'missed per second', 'warning lines (bytes), whole run', 'process CPU s in the window', 'load (1 min) at start'],
    rows.map(({ result, load }) => [
      THROUGHPUT_LABEL[result.contender],
      `${fmt(result.firedPerSecond)} of ${fmt(result.schedules)}`,
      `${fmt(result.latenessP50)} / ${fmt(result.latenessP99)}`,
      fmt(result.maxStallMs),
      fmt(result.missedPerSecond),
      `${fmt(result.warnLines)} (${fmt(result.warnBytes)})`,
      fmt(result.cpuSeconds, 1),
      load,
    ]),
    [false, true, true, true, true, true, true, false],
  );
}

// ---- phase 6: the cost of a 30-day catch-up -----------------------------------

const CATCH_UP_TOPIC = 'bench.catchup';
const CATCH_UP_DAYS = 30;

@Injectable()
class CatchUpHandler {
  runs = 0;

  @OnRecurring(CATCH_UP_TOPIC, { concurrency: 1_000 })
  onOccurrence(): void {
    this.runs++;
  }
}

interface CatchUpResult {
  readonly label: string;
  readonly ms: number;
  readonly maxStallMs: number;
  readonly runs: number;
  readonly missed: number;
  readonly load: string;
}

/** One schedule paused for 30 days on a VirtualClock, then resumed: the wall time of the resumed tick (plan, advance, runs). */
async function measureCatchUp(cron: string, timeZone: string, missed: MissedRunPolicy): Promise<CatchUpResult> {
  const clock = new VirtualClock(Date.parse('2026-03-20T10:00:00Z'));
  @Module({ imports: [DelayTestingModule.forRoot({ clock })], providers: [CatchUpHandler] })
  class CatchUpModule {}
  const app = await NestFactory.createApplicationContext(CatchUpModule, { logger: false });
  await app.init();
  try {
    const delay = app.get(DelayService);
    const handler = app.get(CatchUpHandler);
    await delay.upsertRecurring(CATCH_UP_TOPIC, 'behind', { cron, timeZone, missed });
    await clock.advance('2s');
    await delay.pause(CATCH_UP_TOPIC);
    await clock.advance(`${CATCH_UP_DAYS}d`);
    let missedCount = 0;
    const subscription = delay.events$.subscribe((event: DelayEvent) => {
      if (event.type === 'recurringMissed') missedCount += event.size ?? 0;
    });
    const before = handler.runs;
    const loop = monitorEventLoopDelay({ resolution: 1 });
    loop.enable();
    const started = performance.now();
    await delay.resume(CATCH_UP_TOPIC);
    await clock.advance(0);
    const ms = performance.now() - started;
    loop.disable();
    subscription.unsubscribe();
    return { label: `${cron} ${timeZone}, missed ${JSON.stringify(missed)}`, ms, maxStallMs: loop.max / 1e6, runs: handler.runs - before, missed: missedCount, load: load1() };
  } finally {
    await app.close();
  }
}

async function measureCatchUps(): Promise<CatchUpResult[]> {
  const results: CatchUpResult[] = [];
  for (const [cron, zones] of [
    ['* * * * * *', ['UTC', 'Europe/Paris', 'Australia/Lord_Howe']],
    ['* * * * *', ['UTC', 'Europe/Paris']],
  ] as const) {
    for (const timeZone of zones) {
      for (const missed of ['once', 'all'] as const) {
        // The first run warms the code up; the second is reported.
        await measureCatchUp(cron, timeZone, missed);
        results.push(await measureCatchUp(cron, timeZone, missed));
      }
    }
  }
  return results;
}

function catchUpTable(results: readonly CatchUpResult[]): string {
  return markdownTable(
    ['schedule 30 days behind', 'resume to done, ms', 'longest event-loop delay ms', 'occurrences run', 'reported missed', 'load (1 min)'],
    results.map((result) => [result.label, fmt(result.ms, 1), fmt(result.maxStallMs, 1), fmt(result.runs), fmt(result.missed), result.load]),
    [false, true, true, true, true, false],
  );
}

// ---- main ----------------------------------------------------------------

const WORKER_SCRIPT = `${__dirname}/recurring/worker.js`;

function versionOf(name: string): string {
  return (JSON.parse(readFileSync(require.resolve(`${name}/package.json`), 'utf8')) as { version: string }).version;
}

async function main(): Promise<void> {
  // Refused before any server starts when the library is another checkout's.
  const library = libraryUnderTest();
  const startedAt = performance.now();
  const loadAtStart = loadAverage();
  const npmScript = process.env.npm_lifecycle_event;
  const script = relative(process.cwd(), process.argv[1]);
  const overrides = ['BENCH_RECURRING_QUICK', 'BENCH_RECURRING_PHASES', 'BENCH_RECURRING_CONTENDERS', 'BENCH_RESULTS_DIR'].filter((name) => process.env[name] !== undefined).map((name) => `${name}=${process.env[name]} `);
  const command = `${overrides.join('')}${npmScript ? `npm run ${npmScript}  ->  ` : ''}node ${[...process.execArgv, script].join(' ')}`;

  const server = await BenchRedisServer.start();
  const bench = new Bench(server);
  const delay = await DelayRecurringScheduler.create(server.url);
  const bullmq = new BullmqRecurringScheduler(server.url);
  try {
    const serverInfo = parseInfo(await bench.redis.info('server'));
    console.log('# nestjs-delay recurring actions benchmark\n');
    console.log(`- date: ${new Date().toISOString()}`);
    console.log(`- command: ${command}${QUICK ? '  (QUICK: smaller and shorter, not for comparison)' : ''}`);
    console.log(`- ${library}`);
    console.log(`- node ${process.version}; bullmq ${versionOf('bullmq')}, ioredis ${versionOf('ioredis')}`);
    console.log(`- redis-server ${serverInfo.get('redis_version')}, spawned on a free port, no persistence`);
    console.log(`- cpus: ${availableParallelism()} available (${cpus()[0]?.model ?? 'unknown'}), memory ${fmt(totalmem() / 2 ** 30, 1)} GiB; load average ${loadAtStart}`);
    console.log(
      `- schedules: cron, UTC, payload {"userId": key} for both; nestjs-delay defaults (missed 'once', overlap 'skip', no jitter unless said), BullMQ upsertJobScheduler({ pattern, tz }); workers: 1 process, concurrency ${SETTINGS.concurrency}, BullMQ removeOnComplete {count: 0}`,
    );
    console.log('');

    let creation: CreateResult[] = [];
    const lateness: LatenessResult[] = [];
    const footprints: FootprintResult[] = [];

    if (PHASES.has(1)) {
      creation = await measureCreation(bench, [bullmq, delay]);
      console.log(`## 1. Schedules created per second (${fmt(SETTINGS.createCount)} per round, ${SETTINGS.createRounds} interleaved rounds, each from an empty database)\n`);
      console.log(creationTable(creation));
      console.log('');
    }

    if (PHASES.has(2)) {
      const cases: LatenessCase[] = [
        { label: LATENESS_BULLMQ, scheduler: bullmq, jitterMs: 0 },
        { label: LATENESS_DELAY, scheduler: delay, jitterMs: 0 },
        { label: `nestjs-delay, jitter ${SETTINGS.jitterMs / 1000} s (lateness from each one's jittered due time)`, scheduler: delay, jitterMs: SETTINGS.jitterMs },
      ];
      for (const testCase of cases) {
        const result = await measureLateness(bench, testCase);
        console.log(`  ${testCase.label}: created in ${fmt(result.createSeconds, 1)} s, due at ${new Date(result.boundary).toISOString()}`);
        lateness.push(result);
      }
      console.log(`\n## 2. Firing lateness, ${fmt(SETTINGS.latenessCount)} schedules at one minute boundary (cron '${MINUTE_CRON}'), one worker process\n`);
      console.log(latenessTable(lateness));
      console.log('');
    }

    if (PHASES.has(3)) {
      for (const scheduler of [bullmq, delay]) {
        const footprint = await measureFootprint(bench, scheduler);
        console.log(`  ${LABEL[scheduler.kind]}: ${fmt(footprint.count)} schedules created in ${fmt(footprint.createSeconds, 1)} s, ${fmt(footprint.bytesPerSchedule)} B each`);
        if (PHASES.has(4)) footprint.idle = await measureIdle(bench, footprint);
        footprints.push(footprint);
      }
      console.log(`\n## 3. Redis memory at ${fmt(SETTINGS.memoryCount)} schedules, nothing due (cron '${FAR_CRON}')\n`);
      console.log(memoryTable(footprints));
      for (const footprint of footprints) {
        console.log(`\n### Where ${LABEL[footprint.kind]}'s bytes go, right after creation\n`);
        console.log(breakdownTable(footprint));
      }
      if (PHASES.has(4)) {
        console.log(`\n## 4. Idling with ${fmt(SETTINGS.memoryCount)} schedules and none due (${SETTINGS.idleMs / 1000} s, given per 60 s)\n`);
        console.log(idleTable(footprints));
      }
      console.log('');
    }
    let throughput: ThroughputRow[] = [];
    if (PHASES.has(5)) {
      throughput = await measureThroughput(bench);
      console.log(
        `\n## 5. Throughput: ${fmt(SETTINGS.throughputSchedules)} schedules due every second, one process each (handler concurrency ${fmt(SETTINGS.throughputConcurrency)}), ${SETTINGS.throughputMeasureMs / 1000} s measured after ${SETTINGS.throughputWarmupMs / 1000} s\n`,
      );
      console.log(throughputTable(throughput));
      console.log('');
    }

    if (PHASES.has(6)) {
      const catchUps = await measureCatchUps();
      console.log(`\n## 6. A catch-up ${CATCH_UP_DAYS} days behind, on the wheel (VirtualClock; the topic paused, then resumed)\n`);
      console.log(catchUpTable(catchUps));
      console.log('');
    }

    const lists: ListsResult[] = [];
    if (PHASES.has(7)) {
      await bench.redis.flushall();
      lists.push(await measureLists('redis', { driver: { type: 'redis', url: server.url } }, SETTINGS.lists, async () => void (await bench.redis.flushall())));
      lists.push(await measureLists('wheel', { driver: { type: 'wheel' } }, SETTINGS.lists, async () => undefined));
      console.log(`## 7. nestjs-delay alone: listing ${fmt(SETTINGS.lists.listCount)} schedules, creating ${fmt(SETTINGS.lists.bulkCount)} one call each or in one upsertRecurringMany\n`);
      console.log(listsTable(lists));
      console.log('');
    }
    recordResults('recurring', !QUICK, () => recurringResults(creation, lateness, footprints, throughput, lists, `one run (${command}), load average ${loadAtStart.split(' / ')[0]} at the start`));
    console.log(`\nDone in ${fmt((performance.now() - startedAt) / 1000)} s; load average ${loadAverage()}.`);
  } finally {
    await delay.close();
    await bullmq.close();
    await bench.close();
    await server.dispose();
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
