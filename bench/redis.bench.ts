// The Redis benchmark: nestjs-delay's Redis driver and BullMQ side by side,
// in one run, on one redis-server that the bench starts itself on a free
// port (FLUSHALL between phases). A raw Lua ZADD+HSET is the floor, and
// redis-benchmark running that script pipelined is the ceiling: what the
// server can do at all, measured in the same run.
//
//   npm run bench:redis
//   BENCH_REDIS_QUICK=1 npm run bench:redis        (a smoke run, figures not comparable)
//   BENCH_REDIS_CPU_PROF=<dir> npm run bench:redis (--cpu-prof for every worker process)
//   BENCH_REDIS_PHASES=4,5 npm run bench:redis     (only some phases)
//   BENCH_RESULTS_DIR=<dir> ...                    (the headline figures to <dir>/redis.json, not bench/results)
//
// A run that is not QUICK writes the headline figures of the phases it ran
// into bench/results/redis.json (bench/results.ts).
//
// Phases: (1) schedule, one client awaiting each; (2) the ceiling, schedule
// with 100 in flight against BullMQ add with 100 in flight, scheduleMany
// against addBulk, with Redis time per EVALSHA (INFO commandstats) and this
// process's CPU per action; (3) Redis memory per pending action, 108-byte
// payload; (4) a burst due at one moment, consumed by 1 then 2 worker
// processes; (5) lateness under a steady load, one worker process.
// Worker processes are the compiled bench/redis/worker.ts. See BENCHMARKS.md.
import 'reflect-metadata';
import { readFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg, totalmem } from 'node:os';
import { relative } from 'node:path';
import { performance } from 'node:perf_hooks';
import IORedis from 'ioredis';
import type { Redis } from 'ioredis';
import { actionKey, makePayload, PAYLOAD_BYTES, QUEUE, TOPIC } from './redis/protocol';
import type { ContenderKind, WorkerReport } from './redis/protocol';
import { BullmqProducer, DelayProducer, RawLuaProducer } from './redis/producers';
import type { Due, Item, Producer } from './redis/producers';
import { BenchRedisServer } from './redis/redis-server';
import { Ceiling, redisBenchmarkVersion } from './redis/ceiling';
import { allKeys, commandStats, keyBytes, parseInfo, ServerWork, usedMemory } from './redis/redis-stats';
import type { CommandStat } from './redis/redis-stats';
import { WorkerPool } from './redis/worker-pool';
import { pump } from './redis/pump';
import { recordResults } from './results';
import type { RatioRow, ResultsUpdate } from './results';
import { fmt, libraryUnderTest, markdownTable, median, quantile, xorshift32 } from './support';

const QUICK = process.env.BENCH_REDIS_QUICK === '1';
const PHASES = new Set((process.env.BENCH_REDIS_PHASES ?? '1,2,3,4,5').split(',').map((phase) => Number(phase.trim())));

const SETTINGS = {
  /** Timed rounds per schedule contender (interleaved); the median is reported. */
  rounds: QUICK ? 1 : 9,
  roundMs: QUICK ? 500 : 800,
  warmupMs: QUICK ? 200 : 500,
  /** In flight at once for the concurrent schedule, and the addBulk batch size. */
  inFlight: 100,
  /** Pending actions for the memory figure. */
  memoryCount: QUICK ? 10_000 : 100_000,
  /** Far enough that nothing falls due during the phase. */
  farDelayMs: 30 * 86_400_000,
  burstCount: QUICK ? 5_000 : 20_000,
  /** How long after scheduling starts the whole burst falls due. */
  burstLeadMs: 3_000,
  workerCounts: [1, 2],
  burstRounds: QUICK ? 1 : 3,
  /** Handler concurrency per worker process, both contenders; claimBatch for nestjs-delay. */
  concurrency: 100,
  claimBatch: 100,
  steadyRate: QUICK ? 300 : 1_000,
  steadyMs: QUICK ? 4_000 : 15_000,
  steadyMinDelayMs: 100,
  steadyMaxDelayMs: 500,
  seed: 20_240_601,
};

const MARGIN_MS = 300;

// ---- small helpers -------------------------------------------------------

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function ratio(value: number): string {
  if (!Number.isFinite(value)) return 'n/a';
  return `${fmt(value, value >= 10 ? 1 : 2)}x`;
}

const mark = (met: boolean): string => (met ? 'met' : 'NOT met');

/** Calls `bulk` with consecutive batches of `size` until `count` were given or `untilMs` passed. */
async function pumpBatches(size: number, limit: { count?: number; untilMs?: number }, bulk: (first: number, count: number) => Promise<void>): Promise<{ done: number; seconds: number }> {
  const startedAt = performance.now();
  let done = 0;
  for (;;) {
    if (limit.untilMs !== undefined && performance.now() >= limit.untilMs) break;
    const count = limit.count === undefined ? size : Math.min(size, limit.count - done);
    if (count <= 0) break;
    await bulk(done, count);
    done += count;
  }
  return { done, seconds: (performance.now() - startedAt) / 1000 };
}

function sorted(values: readonly number[]): Float64Array {
  return Float64Array.from(values).sort();
}

// ---- phases 1 and 2: schedule rates --------------------------------------

type ScheduleMode = 'sequential' | 'concurrent' | 'bulk' | 'ceiling';

interface ScheduleCase {
  readonly id: string;
  readonly label: string;
  readonly producer?: Producer;
  readonly ceiling?: Ceiling;
  readonly mode: ScheduleMode;
}

interface RateResult {
  readonly id: string;
  readonly label: string;
  readonly rates: number[];
  /** Redis time per EVALSHA in each round (INFO commandstats usec / calls): the script's own cost inside Redis. */
  readonly evalshaUsec: number[];
  /** Redis time per action in each round (all EVALSHA usec / actions done): differs from the above when calls are gathered into one script call. */
  readonly redisUsecPerAction: number[];
  /** Actions per EVALSHA in each round. */
  readonly actionsPerCall: number[];
  /** This process's CPU per action in each round, µs (NaN for redis-benchmark): less moved by a busy machine than rates. */
  readonly clientCpuUsec: number[];
}

/** Items due in an hour, built once and reused by every round (each round starts from FLUSHALL), so building them is not timed. */
const farItems: Item[] = [];

function farItem(n: number): Item {
  let item = farItems[n];
  if (item === undefined) {
    const key = actionKey('sched', n);
    item = { key, due: { delayMs: 3_600_000 }, payload: makePayload(key, 0) };
    farItems[n] = item;
  }
  return item;
}

async function timeCase(
  bench: Bench,
  scheduleCase: ScheduleCase,
  durationMs: number,
): Promise<{ rate: number; evalshaUsec: number; redisUsecPerAction: number; actionsPerCall: number; clientCpuUsec: number }> {
  await bench.flush();
  await bench.redis.config('RESETSTAT');
  const cpuBefore = process.cpuUsage();
  const { rate, done } = await timeCaseRate(scheduleCase, durationMs);
  const cpu = process.cpuUsage(cpuBefore);
  const evalsha = (await commandStats(bench.redis)).find((stat) => stat.command === 'evalsha');
  return {
    rate,
    evalshaUsec: evalsha ? evalsha.usec / evalsha.calls : NaN,
    redisUsecPerAction: evalsha ? evalsha.usec / done : NaN,
    actionsPerCall: evalsha ? done / evalsha.calls : NaN,
    clientCpuUsec: scheduleCase.mode === 'ceiling' ? NaN : (cpu.user + cpu.system) / done,
  };
}

async function timeCaseRate(scheduleCase: ScheduleCase, durationMs: number): Promise<{ rate: number; done: number }> {
  const { producer, mode } = scheduleCase;
  if (mode === 'ceiling') {
    if (scheduleCase.ceiling === undefined) throw new Error(`${scheduleCase.label} has no ceiling`);
    return { rate: await scheduleCase.ceiling.rate(durationMs), done: NaN };
  }
  if (producer === undefined) throw new Error(`${scheduleCase.label} has no producer`);
  const untilMs = performance.now() + durationMs;
  let result: { done: number; seconds: number };
  if (mode === 'sequential') {
    result = await pump(1, { untilMs }, (n) => producer.one(farItem(n)));
  } else if (mode === 'concurrent') {
    result = await pump(SETTINGS.inFlight, { untilMs }, (n) => producer.one(farItem(n)));
  } else {
    const bulk = producer.bulk?.bind(producer);
    if (bulk === undefined) throw new Error(`${scheduleCase.label} has no bulk call`);
    result = await pumpBatches(SETTINGS.inFlight, { untilMs }, (first, count) => bulk(Array.from({ length: count }, (_, n) => farItem(first + n))));
  }
  return { rate: result.done / result.seconds, done: result.done };
}

async function measureRates(bench: Bench, cases: readonly ScheduleCase[]): Promise<RateResult[]> {
  for (const scheduleCase of cases) await timeCase(bench, scheduleCase, SETTINGS.warmupMs);
  const results = cases.map((scheduleCase): RateResult => ({ id: scheduleCase.id, label: scheduleCase.label, rates: [], evalshaUsec: [], redisUsecPerAction: [], actionsPerCall: [], clientCpuUsec: [] }));
  for (let round = 0; round < SETTINGS.rounds; round++) {
    for (let n = 0; n < cases.length; n++) {
      const { rate, evalshaUsec, redisUsecPerAction, actionsPerCall, clientCpuUsec } = await timeCase(bench, cases[n], SETTINGS.roundMs);
      results[n].rates.push(rate);
      results[n].evalshaUsec.push(evalshaUsec);
      results[n].redisUsecPerAction.push(redisUsecPerAction);
      results[n].actionsPerCall.push(actionsPerCall);
      results[n].clientCpuUsec.push(clientCpuUsec);
    }
  }
  return results;
}

// ---- phase 3: memory per pending action ----------------------------------

interface MemoryResult {
  readonly id: string;
  readonly label: string;
  readonly bytesPerAction: number;
  readonly breakdown: string;
}

async function measureMemory(bench: Bench, id: string, label: string, load: (count: number) => Promise<void>, breakdown: () => Promise<string>): Promise<MemoryResult> {
  await bench.flush();
  await sleep(200);
  const before = await usedMemory(bench.redis);
  await load(SETTINGS.memoryCount);
  await sleep(200);
  const after = await usedMemory(bench.redis);
  return { id, label, bytesPerAction: (after - before) / SETTINGS.memoryCount, breakdown: await breakdown() };
}

/** Bytes per action by key group (MEMORY USAGE); job hashes are sampled, one in 50. */
async function keyBreakdown(redis: Redis, group: (key: string) => string): Promise<string> {
  const keys = await allKeys(redis);
  const groups = new Map<string, { keys: number; sampled: number; bytes: number }>();
  for (const key of keys) {
    const name = group(key);
    const entry = groups.get(name) ?? { keys: 0, sampled: 0, bytes: 0 };
    entry.keys++;
    groups.set(name, entry);
  }
  const seen = new Map<string, number>();
  for (const key of keys) {
    const name = group(key);
    const entry = groups.get(name);
    if (entry === undefined) continue;
    const index = seen.get(name) ?? 0;
    seen.set(name, index + 1);
    if (entry.keys > 1000 && index % 50 !== 0) continue;
    entry.bytes += await keyBytes(redis, key);
    entry.sampled++;
  }
  return [...groups]
    .map(([name, entry]) => ({ name, bytes: (entry.bytes / entry.sampled) * entry.keys }))
    .sort((a, b) => b.bytes - a.bytes)
    .map(({ name, bytes }) => `${name} ${fmt(bytes / SETTINGS.memoryCount)}`)
    .join(', ');
}

// ---- phases 4 and 5: consuming in worker processes -------------------------

interface RunStats {
  readonly runs: number;
  readonly unique: number;
  readonly lost: number;
  readonly duplicates: number;
  readonly lateness: Float64Array;
  readonly firstEnd: number;
  readonly lastEnd: number;
  readonly split: number[];
  readonly workerCpuMicros: number;
  /** The worst worker's event-loop lag p99 (a 10 ms timer's lateness), ms. */
  readonly loopDelayP99: number;
}

function runStats(reports: readonly WorkerReport[], expected: ReadonlySet<string>): RunStats {
  const seen = new Map<string, number>();
  const lateness: number[] = [];
  let firstEnd = Infinity;
  let lastEnd = -Infinity;
  let workerCpuMicros = 0;
  for (const report of reports) {
    workerCpuMicros += report.cpuMicros;
    for (let n = 0; n < report.keys.length; n++) {
      seen.set(report.keys[n], (seen.get(report.keys[n]) ?? 0) + 1);
      lateness.push(report.start[n] - report.dueAt[n]);
      firstEnd = Math.min(firstEnd, report.end[n]);
      lastEnd = Math.max(lastEnd, report.end[n]);
    }
  }
  let lost = 0;
  for (const key of expected) if (!seen.has(key)) lost++;
  let duplicates = 0;
  for (const count of seen.values()) duplicates += count - 1;
  const runs = reports.reduce((sum, report) => sum + report.keys.length, 0);
  const loopDelayP99 = Math.max(...reports.map((report) => report.loopDelay.p99));
  return { runs, unique: seen.size, lost, duplicates, lateness: sorted(lateness), firstEnd, lastEnd, split: reports.map((report) => report.keys.length), workerCpuMicros, loopDelayP99 };
}

interface ServerUse {
  readonly cpuSeconds: number;
  readonly commands: CommandStat[];
}

interface BurstResult {
  readonly kind: ContenderKind;
  readonly workers: number;
  readonly dueAt: number;
  /** When scheduling the burst finished, relative to its due time (negative: in time). */
  readonly scheduledVsDueMs: number;
  readonly stats: RunStats;
  readonly server: ServerUse;
  readonly leftInRedis: number;
}

interface SteadyResult {
  readonly kind: ContenderKind;
  readonly scheduled: number;
  readonly producerErrors: number;
  readonly stats: RunStats;
  readonly server: ServerUse;
  readonly leftInRedis: number;
}

function label(kind: ContenderKind): string {
  return kind === 'delay' ? 'nestjs-delay' : 'BullMQ';
}

// ---- the bench -----------------------------------------------------------

class Bench {
  readonly redis: Redis;
  private delay: DelayProducer | undefined;
  private bullmq: BullmqProducer | undefined;
  private raw: RawLuaProducer | undefined;

  constructor(readonly server: BenchRedisServer) {
    this.redis = new IORedis(server.url);
  }

  async flush(): Promise<void> {
    await this.redis.flushall();
  }

  async producers(): Promise<{ delay: DelayProducer; bullmq: BullmqProducer; raw: RawLuaProducer }> {
    this.delay ??= await DelayProducer.create(this.server.url);
    this.bullmq ??= new BullmqProducer(this.server.url);
    this.raw ??= await RawLuaProducer.create(this.server.url);
    return { delay: this.delay, bullmq: this.bullmq, raw: this.raw };
  }

  producer(kind: ContenderKind, producers: { delay: DelayProducer; bullmq: BullmqProducer }): Producer {
    return kind === 'delay' ? producers.delay : producers.bullmq;
  }

  /** What a contender left in Redis after its phase: pending, running or finished-but-kept records. */
  async leftInRedis(kind: ContenderKind): Promise<number> {
    if (kind === 'delay') {
      const base = `delay:{${TOPIC}}`;
      const [env, due, active] = await Promise.all([this.redis.hlen(`${base}:env`), this.redis.zcard(`${base}:due`), this.redis.zcard(`${base}:active`)]);
      return Math.max(env, due, active);
    }
    // Job hashes are bull:<queue>:<jobId>, and the bench's job ids are its action keys.
    const keys = await allKeys(this.redis);
    return keys.filter((key) => /^bull:[^:]+:(burst|steady)-\d+$/.test(key)).length;
  }

  async close(): Promise<void> {
    await this.delay?.close();
    await this.bullmq?.close();
    await this.raw?.close();
    await this.redis.quit();
  }
}

async function runBurst(bench: Bench, kind: ContenderKind, workers: number): Promise<BurstResult> {
  const producers = await bench.producers();
  const producer = bench.producer(kind, producers);
  await bench.flush();
  const pool = await WorkerPool.start(workers, { kind, url: bench.server.url, concurrency: SETTINGS.concurrency, claimBatch: SETTINGS.claimBatch });
  try {
    const count = SETTINGS.burstCount;
    const dueAt = Date.now() + SETTINGS.burstLeadMs;
    const items = Array.from({ length: count }, (_, n): Item => {
      const key = actionKey('burst', n);
      return { key, due: { atMs: dueAt }, payload: makePayload(key, dueAt) };
    });
    if (producer.bulk) {
      const bulk = producer.bulk.bind(producer);
      await pumpBatches(SETTINGS.inFlight, { count }, (first, size) => bulk(items.slice(first, first + size)));
    } else {
      await pump(SETTINGS.inFlight, { count }, (n) => producer.one(items[n]));
    }
    const scheduledVsDueMs = Date.now() - dueAt;
    const work = new ServerWork(bench.redis);
    await work.begin();
    await pool.waitForDone(count, dueAt + 120_000);
    await sleep(MARGIN_MS);
    const reports = await pool.reports();
    const server = await work.end();
    const stats = runStats(reports, new Set(items.map((item) => item.key)));
    await pool.stop();
    return { kind, workers, dueAt, scheduledVsDueMs, stats, server, leftInRedis: await bench.leftInRedis(kind) };
  } finally {
    await pool.stop();
  }
}

async function runSteady(bench: Bench, kind: ContenderKind): Promise<SteadyResult> {
  const producers = await bench.producers();
  const producer = bench.producer(kind, producers);
  await bench.flush();
  const pool = await WorkerPool.start(1, { kind, url: bench.server.url, concurrency: SETTINGS.concurrency, claimBatch: SETTINGS.claimBatch });
  try {
    const random = xorshift32(SETTINGS.seed);
    const total = Math.round((SETTINGS.steadyRate * SETTINGS.steadyMs) / 1000);
    const expected = new Set<string>();
    const outstanding = new Set<Promise<void>>();
    let producerErrors = 0;
    let lastDue = 0;
    const work = new ServerWork(bench.redis);
    await work.begin();
    const startedAt = Date.now();
    let issued = 0;
    while (issued < total) {
      const target = Math.min(total, Math.floor(((Date.now() - startedAt) * SETTINGS.steadyRate) / 1000));
      while (issued < target) {
        const key = actionKey('steady', issued++);
        const delayMs = SETTINGS.steadyMinDelayMs + Math.floor(random() * (SETTINGS.steadyMaxDelayMs - SETTINGS.steadyMinDelayMs + 1));
        const atMs = Date.now() + delayMs;
        lastDue = Math.max(lastDue, atMs);
        expected.add(key);
        const due: Due = { atMs };
        const call = producer
          .one({ key, due, payload: makePayload(key, atMs) })
          .catch(() => {
            producerErrors++;
            expected.delete(key);
          })
          .finally(() => outstanding.delete(call));
        outstanding.add(call);
      }
      await sleep(5);
    }
    await Promise.all(outstanding);
    await pool.waitForDone(expected.size, lastDue + 30_000);
    await sleep(MARGIN_MS);
    const reports = await pool.reports();
    const server = await work.end();
    const stats = runStats(reports, expected);
    await pool.stop();
    return { kind, scheduled: expected.size, producerErrors, stats, server, leftInRedis: await bench.leftInRedis(kind) };
  } finally {
    await pool.stop();
  }
}

// ---- printing ------------------------------------------------------------

/** Each round's rate over the base's in the same round, then the median: the paired estimate, less moved by load from elsewhere. */
function pairedRatio(result: RateResult, base: RateResult): number {
  return median(result.rates.map((rate, round) => rate / base.rates[round]));
}

function rateTable(title: string, results: readonly RateResult[], baseId: string): string {
  const base = results.find((result) => result.id === baseId);
  const ceiling = results.find((result) => result.id === 'ceiling');
  const baseRate = base ? median(base.rates) : NaN;
  const rows = results.map((result) => [
    title,
    result.label,
    fmt(median(result.rates)),
    `${fmt(Math.min(...result.rates))} - ${fmt(Math.max(...result.rates))}`,
    ratio(median(result.rates) / baseRate),
    base ? ratio(pairedRatio(result, base)) : '-',
    ceiling ? ratio(pairedRatio(result, ceiling)) : '-',
    fmt(median(result.evalshaUsec), 2),
    fmt(median(result.actionsPerCall), 1),
    fmt(median(result.redisUsecPerAction), 2),
    fmt(median(result.clientCpuUsec), 1),
  ]);
  return markdownTable(
    [
      'mode',
      'implementation',
      'ops/s (median)',
      'rounds min - max',
      'x BullMQ (medians)',
      'x BullMQ (median of per-round ratios)',
      'x ceiling (median of per-round ratios)',
      'Redis µs per EVALSHA (commandstats, median)',
      'actions per EVALSHA (median)',
      'Redis µs per action (median)',
      'client CPU µs per action (median)',
    ],
    rows,
    [false, false, true, true, true, true, true, true, true, true, true],
  );
}

function latenessCells(lateness: Float64Array): string[] {
  return [fmt(quantile(lateness, 0.5)), fmt(quantile(lateness, 0.99)), fmt(lateness.length ? lateness[lateness.length - 1] : NaN)];
}

function perAction(total: number, count: number): string {
  return fmt(total / Math.max(1, count));
}

function burstRate(result: BurstResult): number {
  const { stats } = result;
  return (stats.runs - 1) / ((stats.lastEnd - stats.firstEnd) / 1000);
}

/** One burst configuration (implementation, worker count) over its repetitions: medians, and the worst for max/lost/dup. */
interface BurstSummary {
  readonly kind: ContenderKind;
  readonly workers: number;
  readonly reps: readonly BurstResult[];
  readonly rate: number;
  readonly p50: number;
  readonly p99: number;
  /** The repetition with the median rate, for the per-command figures. */
  readonly typical: BurstResult;
}

function summarizeBursts(results: readonly BurstResult[]): BurstSummary[] {
  const summaries: BurstSummary[] = [];
  for (const workers of SETTINGS.workerCounts) {
    for (const kind of ['bullmq', 'delay'] as const) {
      const reps = results.filter((result) => result.kind === kind && result.workers === workers);
      if (reps.length === 0) continue;
      const byRate = [...reps].sort((a, b) => burstRate(a) - burstRate(b));
      summaries.push({
        kind,
        workers,
        reps,
        rate: median(reps.map(burstRate)),
        p50: median(reps.map((result) => quantile(result.stats.lateness, 0.5))),
        p99: median(reps.map((result) => quantile(result.stats.lateness, 0.99))),
        typical: byRate[byRate.length >> 1],
      });
    }
  }
  return summaries;
}

function burstTable(summaries: readonly BurstSummary[]): string {
  const rows = summaries.map((summary) => {
    const { reps } = summary;
    const sum = (pick: (result: BurstResult) => number): number => reps.reduce((total, result) => total + pick(result), 0);
    const runs = sum((result) => result.stats.runs);
    const worst = (pick: (result: BurstResult) => number): number => Math.max(...reps.map(pick));
    return [
      label(summary.kind),
      String(summary.workers),
      fmt(summary.rate),
      reps.map((result) => fmt(burstRate(result) / 1000, 1)).join(' / '),
      fmt(median(reps.map((result) => result.stats.lastEnd - result.dueAt))),
      fmt(summary.p50),
      fmt(summary.p99),
      reps.map((result) => fmt(quantile(result.stats.lateness, 0.99))).join(' / '),
      fmt(worst((result) => result.stats.lateness[result.stats.lateness.length - 1])),
      summary.typical.stats.split.map((n) => fmt(n)).join(' / '),
      String(sum((result) => result.stats.lost)),
      String(sum((result) => result.stats.duplicates)),
      perAction(sum((result) => result.stats.workerCpuMicros), runs),
      perAction(sum((result) => result.server.cpuSeconds) * 1e6, runs),
      String(worst((result) => result.leftInRedis)),
      fmt(worst((result) => result.scheduledVsDueMs)),
    ];
  });
  return markdownTable(
    [
      'implementation',
      'workers',
      'actions/s, median (first to last completion)',
      'each run, k/s',
      'last done after due, ms',
      'late p50 ms',
      'late p99 ms',
      'p99, each run',
      'late max ms',
      'runs per worker (median run)',
      'lost',
      'dup',
      'worker CPU µs/action',
      'Redis CPU µs/action',
      'left in Redis',
      'scheduled vs due, ms (worst)',
    ],
    rows,
    [false, true, true, true, true, true, true, true, true, true, true, true, true, true, true, true],
  );
}

function steadyTable(results: readonly SteadyResult[]): string {
  const rows = results.map((result) => {
    const { stats } = result;
    return [
      label(result.kind),
      fmt(result.scheduled),
      ...latenessCells(stats.lateness),
      String(stats.lost),
      String(stats.duplicates),
      String(result.producerErrors),
      perAction(stats.workerCpuMicros, stats.runs),
      perAction(result.server.cpuSeconds * 1e6, stats.runs),
      fmt(stats.loopDelayP99, 1),
      String(result.leftInRedis),
    ];
  });
  return markdownTable(
    [
      'implementation',
      'scheduled',
      'late p50 ms',
      'late p99 ms',
      'late max ms',
      'lost',
      'dup',
      'producer errors',
      'worker CPU µs/action',
      'Redis CPU µs/action (schedule+consume)',
      'worker timer lag p99 ms (event loop)',
      'left in Redis',
    ],
    rows,
    [false, true, true, true, true, true, true, true, true, true, true, true],
  );
}

function commandsLine(server: ServerUse, actions: number): string {
  return server.commands
    .slice(0, 5)
    .map((stat) => `${stat.command} ${fmt(stat.calls / Math.max(1, actions), 2)}/action ${fmt(stat.usec / Math.max(1, stat.calls), 1)} µs/call`)
    .join('; ');
}

async function measureMemories(bench: Bench, producers: { delay: Producer; bullmq: BullmqProducer; raw: Producer }): Promise<MemoryResult[]> {
  const memoryItems = (count: number): Item[] =>
    Array.from({ length: count }, (_, n) => {
      const key = actionKey('mem', n);
      return { key, due: { delayMs: SETTINGS.farDelayMs }, payload: makePayload(key, Date.now() + SETTINGS.farDelayMs) };
    });
  const one = (producer: Producer) => async (count: number) => {
    const items = memoryItems(count);
    await pump(200, { count }, (n) => producer.one(items[n]));
  };
  const byKey = (): Promise<string> => keyBreakdown(bench.redis, (key) => (key.startsWith(`bull:${QUEUE}:mem-`) ? 'job hashes' : key));
  const bulk = async (count: number): Promise<void> => {
    const items = memoryItems(count);
    await pumpBatches(500, { count }, (first, size) => producers.bullmq.bulk(items.slice(first, first + size)));
  };
  return [
    await measureMemory(bench, 'bullmq', 'BullMQ delayed jobs', bulk, byKey),
    await measureMemory(bench, 'delay', 'nestjs-delay pending actions', one(producers.delay), byKey),
    await measureMemory(bench, 'raw', 'raw ZSET + HASH (floor)', one(producers.raw), byKey),
  ];
}

function memoryTable(memory: readonly MemoryResult[]): string {
  const base = memory.find((result) => result.id === 'bullmq')?.bytesPerAction ?? NaN;
  return markdownTable(
    ['implementation', 'bytes/action (used_memory delta / N)', 'x BullMQ', 'by key, bytes/action (MEMORY USAGE)'],
    memory.map((result) => [result.label, fmt(result.bytesPerAction), ratio(result.bytesPerAction / base), result.breakdown]),
    [false, true, true, false],
  );
}

function verdicts(
  sequential: readonly RateResult[],
  concurrent: readonly RateResult[],
  memory: readonly MemoryResult[],
  bursts: readonly BurstSummary[],
  steady: readonly SteadyResult[],
): string[] {
  const lines: string[] = [];
  const rateOf = (results: readonly RateResult[], id: string): number => median(results.find((result) => result.id === id)?.rates ?? [NaN]);
  const paired = (results: readonly RateResult[], ourId = 'delay'): number => {
    const ours = results.find((result) => result.id === ourId);
    const theirs = results.find((result) => result.id === 'bullmq');
    return ours && theirs ? pairedRatio(ours, theirs) : NaN;
  };
  if (sequential.length > 0) {
    const value = paired(sequential);
    lines.push(`- schedule, one client awaiting each: ${fmt(rateOf(sequential, 'delay'))}/s = ${ratio(value)} BullMQ's ${fmt(rateOf(sequential, 'bullmq'))}/s (per-round ratios, median; target >= 3x): ${mark(value >= 3)}`);
  }
  if (concurrent.length > 0) {
    const value = paired(concurrent);
    const batched = paired(concurrent, 'delay-bulk');
    const find = (id: string): RateResult | undefined => concurrent.find((result) => result.id === id);
    const pairOf = (ours: string, base: string): number => {
      const a = find(ours);
      const b = find(base);
      return a && b ? pairedRatio(a, b) : NaN;
    };
    const usec = (id: string): number => median(find(id)?.redisUsecPerAction ?? [NaN]);
    // Redis time per schedule against the floor script's per call, round by round. With 100 in flight the
    // schedules of one tick share one script call, so this is the gathered call's time per schedule.
    const scriptCost = median((find('delay')?.redisUsecPerAction ?? []).map((value, round) => value / (find('raw')?.redisUsecPerAction[round] ?? NaN)));
    const vsCeiling = pairOf('delay', 'ceiling');
    const vsAdd = pairOf('delay', 'bullmq-add');
    const manyVsCeiling = pairOf('delay-bulk', 'ceiling');
    lines.push(
      `- schedule, batched: scheduleMany ${fmt(rateOf(concurrent, 'delay-bulk'))}/s = ${ratio(batched)} BullMQ addBulk's ${fmt(rateOf(concurrent, 'bullmq'))}/s (per-round ratios, median; target >= 3x): ${mark(batched >= 3)}`,
      `- schedule, concurrent: schedule with ${SETTINGS.inFlight} in flight ${fmt(rateOf(concurrent, 'delay'))}/s = ${ratio(value)} BullMQ addBulk's (target >= 3x): ${mark(value >= 3)}`,
      `- schedule with ${SETTINGS.inFlight} in flight = ${ratio(vsCeiling)} the ceiling's ${fmt(rateOf(concurrent, 'ceiling'))}/s (target >= 0.5x): ${mark(vsCeiling >= 0.5)}`,
      `- schedule with ${SETTINGS.inFlight} in flight = ${ratio(vsAdd)} BullMQ add with ${SETTINGS.inFlight} in flight, ${fmt(rateOf(concurrent, 'bullmq-add'))}/s (target >= 2.5x): ${mark(vsAdd >= 2.5)}`,
      `- scheduleMany = ${ratio(manyVsCeiling)} the ceiling (target >= 0.8x): ${mark(manyVsCeiling >= 0.8)}`,
      `- schedule inside Redis, ${SETTINGS.inFlight} in flight: ${fmt(usec('delay'), 2)} µs per schedule (${fmt(median(find('delay')?.actionsPerCall ?? [NaN]), 1)} schedules per script call) = ${ratio(scriptCost)} the floor script's ${fmt(usec('raw'), 2)} µs per call (per-round ratios, median; target <= 1.5x): ${mark(scriptCost <= 1.5)}`,
    );
  }
  if (sequential.length > 0) {
    const find = (id: string): RateResult | undefined => sequential.find((result) => result.id === id);
    const alone = median((find('delay')?.evalshaUsec ?? []).map((value, round) => value / (find('raw')?.evalshaUsec[round] ?? NaN)));
    lines.push(
      `- schedule.lua alone (one call in flight): ${fmt(median(find('delay')?.evalshaUsec ?? [NaN]), 2)} µs per call = ${ratio(alone)} the floor script's ${fmt(median(find('raw')?.evalshaUsec ?? [NaN]), 2)} µs (per-round ratios, median; target <= 1.5x): ${mark(alone <= 1.5)}`,
    );
  }
  const ourMemory = memory.find((result) => result.id === 'delay');
  const theirMemory = memory.find((result) => result.id === 'bullmq');
  if (ourMemory && theirMemory) {
    const value = ourMemory.bytesPerAction / theirMemory.bytesPerAction;
    lines.push(`- memory per pending action: ${fmt(ourMemory.bytesPerAction)} B = ${ratio(value)} BullMQ's ${fmt(theirMemory.bytesPerAction)} B (target <= 0.40x): ${mark(value <= 0.4)}`);
  }
  for (const workers of SETTINGS.workerCounts) {
    const ours = bursts.find((result) => result.kind === 'delay' && result.workers === workers);
    const theirs = bursts.find((result) => result.kind === 'bullmq' && result.workers === workers);
    if (!ours || !theirs) continue;
    const speed = ours.rate / theirs.rate;
    lines.push(`- burst, ${workers} worker(s), rate: ${fmt(ours.rate)}/s = ${ratio(speed)} BullMQ's ${fmt(theirs.rate)}/s (target >= 3x): ${mark(speed >= 3)}`);
    const ourP99 = ours.p99;
    const theirP99 = theirs.p99;
    lines.push(`- burst, ${workers} worker(s), lateness p99: ${fmt(ourP99)} ms = ${ratio(ourP99 / theirP99)} BullMQ's ${fmt(theirP99)} ms (target <= 0.33x): ${mark(ourP99 <= theirP99 / 3)}`);
  }
  const ourSteady = steady.find((result) => result.kind === 'delay');
  if (ourSteady) {
    const p99 = quantile(ourSteady.stats.lateness, 0.99);
    lines.push(`- steady load lateness p99: ${fmt(p99)} ms (target < 20 ms): ${mark(p99 < 20)}`);
  }
  const consuming = [...bursts.flatMap((summary) => summary.reps), ...steady].filter((result) => result.kind === 'delay');
  if (consuming.length > 0) {
    const clean = consuming.every((result) => result.stats.lost === 0 && result.stats.duplicates === 0);
    lines.push(`- nestjs-delay lost / duplicated, all consuming phases: ${clean ? 'none' : 'SOME (see the tables)'} (target none): ${mark(clean)}`);
  }
  return lines;
}

function loadAverage(): string {
  return fmt(loadavg()[0], 2);
}

/**
 * This run's headline comparisons with BullMQ, for bench/results/redis.json
 * (rows of the phases that ran): the paired per-round rate ratios of phase 2,
 * the burst rates of phase 4 and the memory of phase 3 (labels as in the
 * file, whose sizes are those of a full run).
 */
function redisResults(concurrent: readonly RateResult[], memory: readonly MemoryResult[], bursts: readonly BurstSummary[], runs: string): ResultsUpdate {
  const rows: RatioRow[] = [];
  const push = (label: string, value: number, target: number, better: 'higher' | 'lower'): void => {
    if (Number.isFinite(value)) rows.push({ label, runs: [Math.round(value * 100) / 100], target, better });
  };
  const pairOf = (ours: string, base: string): number => {
    const a = concurrent.find((result) => result.id === ours);
    const b = concurrent.find((result) => result.id === base);
    return a && b ? pairedRatio(a, b) : NaN;
  };
  push('scheduleMany against addBulk', pairOf('delay-bulk', 'bullmq'), 3, 'higher');
  push('schedule, 100 in flight, against add', pairOf('delay', 'bullmq-add'), 2.5, 'higher');
  for (const workers of SETTINGS.workerCounts) {
    const ours = bursts.find((result) => result.kind === 'delay' && result.workers === workers);
    const theirs = bursts.find((result) => result.kind === 'bullmq' && result.workers === workers);
    push(`burst of 20k, ${workers} worker process${workers === 1 ? '' : 'es'}`, ours && theirs ? ours.rate / theirs.rate : NaN, 3, 'higher');
  }
  const ourMemory = memory.find((result) => result.id === 'delay');
  const theirMemory = memory.find((result) => result.id === 'bullmq');
  push('memory per pending action', ourMemory && theirMemory ? ourMemory.bytesPerAction / theirMemory.bytesPerAction : NaN, 0.4, 'lower');
  const bytes =
    ourMemory && theirMemory
      ? { label: `redis, ${PAYLOAD_BYTES} B payload`, ours: Math.round(ourMemory.bytesPerAction), peers: { BullMQ: Math.round(theirMemory.bytesPerAction) } }
      : undefined;
  return { runs, rows: { 'redis-vs-bullmq': rows }, ...(bytes ? { memory: bytes } : {}) };
}

// ---- main ----------------------------------------------------------------

async function main(): Promise<void> {
  // Refused before any server starts when the library is another checkout's.
  const library = libraryUnderTest();
  const startedAt = performance.now();
  const loadAtStart = loadAverage();
  const npmScript = process.env.npm_lifecycle_event;
  const script = relative(process.cwd(), process.argv[1]);
  const overrides = ['BENCH_REDIS_QUICK', 'BENCH_REDIS_PHASES', 'BENCH_REDIS_CPU_PROF', 'BENCH_RESULTS_DIR'].filter((name) => process.env[name] !== undefined).map((name) => `${name}=${process.env[name]} `);
  const command = `${overrides.join('')}${npmScript ? `npm run ${npmScript}  ->  ` : ''}node ${[...process.execArgv, script].join(' ')}`;
  const bullmqVersion = (JSON.parse(readFileSync(require.resolve('bullmq/package.json'), 'utf8')) as { version: string }).version;
  const ioredisVersion = (JSON.parse(readFileSync(require.resolve('ioredis/package.json'), 'utf8')) as { version: string }).version;

  const server = await BenchRedisServer.start();
  const bench = new Bench(server);
  try {
    const serverInfo = parseInfo(await bench.redis.info('server'));
    console.log('# nestjs-delay Redis driver benchmark\n');
    console.log(`- date: ${new Date().toISOString()}`);
    console.log(`- command: ${command}${QUICK ? '  (QUICK: smaller and shorter, not for comparison)' : ''}`);
    console.log(`- ${library}`);
    console.log(`- node ${process.version}, ${process.platform}/${process.arch}; bullmq ${bullmqVersion}, ioredis ${ioredisVersion}`);
    console.log(`- redis-server ${serverInfo.get('redis_version')} (${BenchRedisServer.version()}), spawned on a free port, no persistence; ${redisBenchmarkVersion()}`);
    console.log(`- cpus: ${availableParallelism()} available (${cpus()[0]?.model ?? 'unknown'}), memory ${fmt(totalmem() / 2 ** 30, 1)} GiB; load average (1 min) ${loadAtStart}`);
    console.log(
      `- schedule: ${SETTINGS.rounds} interleaved rounds of ${SETTINGS.roundMs} ms per implementation, median; ${SETTINGS.inFlight} in flight / addBulk batches of ${SETTINGS.inFlight}; payload ${PAYLOAD_BYTES} B of JSON`,
    );
    console.log(
      `- workers: concurrency ${SETTINGS.concurrency} per process for both (nestjs-delay claimBatch ${SETTINGS.claimBatch}); BullMQ removeOnComplete {count: 0}; lateness = handler start - due time, Date.now() in every process`,
    );
    console.log('');

    const { delay, bullmq, raw } = await bench.producers();
    let sequential: RateResult[] = [];
    let concurrent: RateResult[] = [];
    let memory: MemoryResult[] = [];
    const bursts: BurstSummary[] = [];
    const steady: SteadyResult[] = [];

    if (PHASES.has(1)) {
      sequential = await measureRates(bench, [
        { id: 'bullmq', label: 'BullMQ Queue.add({ delay, jobId })', producer: bullmq, mode: 'sequential' },
        { id: 'delay', label: 'nestjs-delay DelayService.schedule', producer: delay, mode: 'sequential' },
        { id: 'raw', label: 'raw Lua ZADD+HSET (floor)', producer: raw, mode: 'sequential' },
      ]);
      console.log('## 1. Schedule, one client awaiting each\n');
      console.log(rateTable('sequential', sequential, 'bullmq'));
    }

    if (PHASES.has(2)) {
      const ceiling = new Ceiling(bench.redis, server.port, SETTINGS.inFlight, JSON.stringify(makePayload(actionKey('ceil', 0), 0)));
      concurrent = await measureRates(bench, [
        { id: 'ceiling', label: `ceiling: redis-benchmark, raw Lua ZADD+HSET, 1 connection, pipeline of ${SETTINGS.inFlight}`, ceiling, mode: 'ceiling' },
        { id: 'bullmq', label: `BullMQ Queue.addBulk, batches of ${SETTINGS.inFlight}`, producer: bullmq, mode: 'bulk' },
        { id: 'bullmq-add', label: `BullMQ Queue.add, ${SETTINGS.inFlight} in flight`, producer: bullmq, mode: 'concurrent' },
        { id: 'delay', label: `nestjs-delay DelayService.schedule, ${SETTINGS.inFlight} in flight`, producer: delay, mode: 'concurrent' },
        { id: 'delay-bulk', label: `nestjs-delay DelayService.scheduleMany, batches of ${SETTINGS.inFlight}`, producer: delay, mode: 'bulk' },
        { id: 'raw', label: `raw Lua ZADD+HSET via ioredis, ${SETTINGS.inFlight} in flight (floor)`, producer: raw, mode: 'concurrent' },
        { id: 'raw-bulk', label: `raw Lua ZADD+HSET via ioredis, ${SETTINGS.inFlight} per call (floor for a batch API)`, producer: raw, mode: 'bulk' },
      ]);
      console.log('\n## 2. Schedule, batched or concurrent\n');
      console.log(`ceiling: redis-benchmark ${ceiling.args.join(' ')}\n`);
      console.log(rateTable('batched/concurrent', concurrent, 'bullmq'));
    }

    if (PHASES.has(3)) {
      memory = await measureMemories(bench, { delay, bullmq, raw });
      console.log(`\n## 3. Redis memory per pending action (${PAYLOAD_BYTES} B payload, ${fmt(SETTINGS.memoryCount)} pending)\n`);
      console.log(memoryTable(memory));
    }

    if (PHASES.has(4)) {
      const runs: BurstResult[] = [];
      for (let round = 0; round < SETTINGS.burstRounds; round++) {
        for (const workers of SETTINGS.workerCounts) {
          for (const kind of ['bullmq', 'delay'] as const) runs.push(await runBurst(bench, kind, workers));
        }
      }
      bursts.push(...summarizeBursts(runs));
      console.log(
        `\n## 4. Burst: ${fmt(SETTINGS.burstCount)} actions due at one moment, ${SETTINGS.burstLeadMs} ms after scheduling starts (${SETTINGS.burstRounds} interleaved runs each)\n`,
      );
      console.log(burstTable(bursts));
    }

    if (PHASES.has(5)) {
      for (const kind of ['bullmq', 'delay'] as const) steady.push(await runSteady(bench, kind));
      console.log(
        `\n## 5. Steady load: ${fmt(SETTINGS.steadyRate)} actions/s for ${fmt(SETTINGS.steadyMs / 1000)} s, delays ${SETTINGS.steadyMinDelayMs}-${SETTINGS.steadyMaxDelayMs} ms, one worker process\n`,
      );
      console.log(steadyTable(steady));
    }

    if (bursts.length > 0 || steady.length > 0) {
      console.log('\n## Redis commands per phase (INFO commandstats; busiest first)\n');
      const commandRows: string[][] = [];
      for (const summary of bursts) {
        commandRows.push([`burst, ${summary.workers} worker(s)`, label(summary.kind), commandsLine(summary.typical.server, summary.typical.stats.runs)]);
      }
      for (const result of steady) commandRows.push(['steady', label(result.kind), commandsLine(result.server, result.stats.runs)]);
      console.log(markdownTable(['phase', 'implementation', 'top commands'], commandRows, [false, false, false]));
    }

    console.log('\n## Targets (DESIGN.md)\n');
    console.log(verdicts(sequential, concurrent, memory, bursts, steady).join('\n'));
    console.log(`- machine load average (1 min) at start / end: ${loadAtStart} / ${loadAverage()}`);
    recordResults('redis', !QUICK, () => redisResults(concurrent, memory, bursts, `one run (${command}), load average ${loadAtStart} at the start`));
    console.log(`\ntotal time ${fmt((performance.now() - startedAt) / 1000, 1)} s`);
  } finally {
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
