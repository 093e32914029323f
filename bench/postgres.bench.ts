// The PostgreSQL benchmark: nestjs-delay's postgres driver, pg-boss and
// graphile-worker side by side, in one run, on one PostgreSQL server that the
// bench starts itself on a free port (fsync on, default settings, autovacuum
// at its defaults; pg_stat_statements loaded for the profile). Bare SQL
// statements through pg on rows of the same shape are the floor: a single and
// a multi-row INSERT for scheduling, `DELETE ... RETURNING` of due rows for
// the drain.
//
//   npm run bench:postgres
//   BENCH_PG_QUICK=1 npm run bench:postgres      (a smoke run, figures not comparable)
//   BENCH_RESULTS_DIR=<dir> ...                  (the headline figures to <dir>/postgres.json, not bench/results)
//   BENCH_PG_PHASES=4,5 npm run bench:postgres   (only some phases)
//   BENCH_PG_LARGE=1 npm run bench:postgres      (adds 1M pending for bytes per action, and the 1M bloat phase)
//   BENCH_PG_HELD_TX_MS=120000 npm run bench:postgres (adds the drain with a transaction held open that long)
//   BENCH_PG_EXPLAIN=1 npm run bench:postgres    (adds EXPLAIN ANALYZE of nestjs-delay's claim along a drain)
//   BENCH_PG_HELD_SYSTEMS=delay (phase 8 with only the systems named, comma-separated: delay, pgboss, graphile)
//   BENCH_PG_CPU_PROF=<dir> npm run bench:postgres (--cpu-prof for the drain's worker processes)
//   BENCH_PG_PHASES=5,10 npm run bench:postgres  (the lateness phases only)
//   BENCH_PG_PHASES=11 npm run bench:postgres    (the transactional drains, beside the plain ones and graphile-worker's)
//   BENCH_PG_TX_CONCURRENCY=50 ...                (phase 11's handlers in flight per worker, 100 unless given)
//
// Phases: (1) schedule: one awaited, 100 in flight, bulk; (2) replace by key
// and cancel by key, 100 in flight; (3) the floor: bare DELETE ... RETURNING
// of 100k due rows with 1 and 2 connections; (4) drain of 100k due actions
// with 1 and 2 worker processes; (5) lateness of actions spread over 20 s,
// one idle worker; (6) bytes per pending action; (7, LARGE) table and index
// size after 1M actions scheduled, fired and deleted; (8, HELD_TX) the drain
// while a transaction holds vacuum back; (9, EXPLAIN) the claim explained;
// (10) lateness of free actions beside a due row that an open transaction of
// the application holds, against the same without it (nestjs-delay only);
// (11) the drains with transactional handlers (`transactional: true`, a
// no-op, and one INSERT each through context.transaction), beside the plain
// no-op drain, the plain drain whose handler makes the same INSERT through a
// pool (autocommit) and graphile-worker's, in the same run (phase 4's no-op
// drains when it ran with as many handlers in flight).
// See BENCHMARKS.md.
import 'reflect-metadata';
import { readFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg, totalmem } from 'node:os';
import { join, relative } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Pool } from 'pg';
import type { PoolClient } from 'pg';
import { BenchPostgresServer } from './postgres/pg-server';
import { driverStatementsModule } from './postgres/driver-statements';
import { BareProducer, DelayPgProducer, GraphileProducer, PgBossProducer } from './postgres/producers';
import type { PgItem, PgProducer } from './postgres/producers';
import { actionKey, CONTENDERS, contenderLabel, handlerLabel, makePayload, NAME, PAYLOAD_BYTES, SCHEMAS, SINK_TABLE } from './postgres/protocol';
import { recordResults } from './results';
import type { Bar, BarsRow, ResultsUpdate } from './results';
import type { DelayHandlerKind, PgContender, PgWorkerConfig, WorkerReport } from './postgres/protocol';
import { WorkerPool } from './redis/worker-pool';
import { pump } from './redis/pump';
import { fmt, libraryUnderTest, markdownTable, median, quantile } from './support';

const QUICK = process.env.BENCH_PG_QUICK === '1';
const LARGE = process.env.BENCH_PG_LARGE === '1';
const HELD_TX_MS = Number(process.env.BENCH_PG_HELD_TX_MS ?? 0);
/** Phase 8's systems: all, or those BENCH_PG_HELD_SYSTEMS names (the others' drains then leave the server alone between rounds). */
const HELD_SYSTEMS = CONTENDERS.filter((kind) => (process.env.BENCH_PG_HELD_SYSTEMS ?? CONTENDERS.join(',')).split(',').includes(kind));
const EXPLAIN = process.env.BENCH_PG_EXPLAIN === '1';
const DEFAULT_PHASES = ['1', '2', '3', '4', '5', '6', ...(LARGE ? ['7'] : []), ...(HELD_TX_MS > 0 ? ['8'] : []), ...(EXPLAIN ? ['9'] : []), '10', '11'].join(',');
const PHASES = new Set((process.env.BENCH_PG_PHASES ?? DEFAULT_PHASES).split(',').map((phase) => Number(phase.trim())));

const SETTINGS = {
  rounds: QUICK ? 1 : 3,
  roundMs: QUICK ? 400 : 1_000,
  warmupMs: QUICK ? 200 : 300,
  inFlight: 100,
  bulkSize: 100,
  /** Keys scheduled before each replace / cancel round (not timed). */
  keyedCount: QUICK ? 5_000 : 20_000,
  drainCount: QUICK ? 10_000 : 100_000,
  workerCounts: [1, 2],
  concurrency: 100,
  /**
   * Phase 11: handlers in flight per worker process for every drain of the phase (as phase 4's by default, so its
   * no-op drains stand for the phase's when it ran). A transactional run holds a connection of the driver's handler
   * pool (sized for them), and the plain handler that inserts one of the worker's pool of as many: max_connections
   * is raised to fit two workers' (below).
   */
  txConcurrency: Number(process.env.BENCH_PG_TX_CONCURRENCY ?? 100),
  claimBatch: 100,
  latenessCount: QUICK ? 100 : 400,
  latenessSpreadMs: QUICK ? 5_000 : 20_000,
  latenessLeadMs: 1_000,
  /** Phase 10: free actions measured beside the held row, each scheduled `besideHeldScheduleMs` before it is due. */
  besideHeldCount: QUICK ? 50 : 200,
  besideHeldSpreadMs: QUICK ? 5_000 : 20_000,
  besideHeldScheduleMs: 200,
  sizeCounts: QUICK ? [10_000] : LARGE ? [100_000, 1_000_000] : [100_000],
  bloatCount: QUICK ? 20_000 : 1_000_000,
  loadBatch: 1_000,
  farMs: 30 * 86_400_000,
};

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function ratio(value: number): string {
  if (!Number.isFinite(value)) return 'n/a';
  return `${fmt(value, value >= 10 ? 1 : 2)}x`;
}

const mark = (met: boolean): string => (met ? 'met' : 'NOT met');

function item(prefix: string, n: number, atMs: number): PgItem {
  const key = actionKey(prefix, n);
  return { key, atMs, payload: makePayload(key, atMs) };
}

// ---- the bench's connections and systems ----------------------------------

class Bench {
  readonly admin: Pool;
  readonly producers = new Map<PgContender | 'bare', PgProducer>();

  constructor(readonly server: BenchPostgresServer) {
    this.admin = new Pool({ connectionString: server.url, max: 3 });
    // An idle connection closed by the server's shutdown at the end must not end the process.
    this.admin.on('error', () => undefined);
  }

  async start(): Promise<void> {
    await this.admin.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
    this.producers.set('pgboss', await PgBossProducer.create(this.server.url));
    this.producers.set('graphile', await GraphileProducer.create(this.server.url));
    this.producers.set('delay', await DelayPgProducer.create(this.server.url));
    this.producers.set('bare', await BareProducer.create(this.server.url));
  }

  producer(kind: PgContender | 'bare'): PgProducer {
    const producer = this.producers.get(kind);
    if (producer === undefined) throw new Error(`no producer ${kind}`);
    return producer;
  }

  get bare(): BareProducer {
    return this.producer('bare') as BareProducer;
  }

  async withAdmin<T>(work: (client: PoolClient) => Promise<T>): Promise<T> {
    const client = await this.admin.connect();
    try {
      return await work(client);
    } finally {
      client.release();
    }
  }

  async reset(kind: PgContender | 'bare'): Promise<void> {
    await this.withAdmin((client) => this.producer(kind).reset(client));
  }

  /** Loads `count` actions through the system's bulk call, `loadBatch` per call, due at `atMs(n)`. */
  async load(kind: PgContender | 'bare', prefix: string, count: number, atMs: (n: number) => number): Promise<number> {
    const producer = this.producer(kind);
    const startedAt = performance.now();
    for (let first = 0; first < count; first += SETTINGS.loadBatch) {
      const size = Math.min(SETTINGS.loadBatch, count - first);
      await producer.bulk(Array.from({ length: size }, (_, n) => item(prefix, first + n, atMs(first + n))));
    }
    return count / ((performance.now() - startedAt) / 1000);
  }

  /** Sum of pg_total_relation_size (heap, indexes, TOAST) over the ordinary tables of a schema. */
  async schemaBytes(schema: string): Promise<{ total: number; byTable: Array<{ name: string; heap: number; indexes: number; toast: number }> }> {
    const { rows } = await this.admin.query<{ name: string; heap: string; indexes: string; total: string }>(
      `SELECT c.relname AS name, pg_relation_size(c.oid) AS heap, pg_indexes_size(c.oid) AS indexes, pg_total_relation_size(c.oid) AS total
         FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = $1 AND c.relkind IN ('r', 'm') ORDER BY pg_total_relation_size(c.oid) DESC`,
      [schema],
    );
    const byTable = rows.map((row) => ({ name: row.name, heap: Number(row.heap), indexes: Number(row.indexes), toast: Number(row.total) - Number(row.heap) - Number(row.indexes) }));
    return { total: rows.reduce((sum, row) => sum + Number(row.total), 0), byTable };
  }

  async vacuumAnalyze(schema: string): Promise<void> {
    const { rows } = await this.admin.query<{ name: string }>(
      `SELECT format('%I.%I', n.nspname, c.relname) AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind = 'r'`,
      [schema],
    );
    for (const row of rows) await this.admin.query(`VACUUM ANALYZE ${row.name}`);
  }

  /** The statements that took the most server time since the last reset (pg_stat_statements). */
  async topStatements(limit: number): Promise<Array<{ query: string; calls: number; rows: number; totalMs: number; meanMs: number; maxMs: number }>> {
    const { rows } = await this.admin.query<{ query: string; calls: string; rows: string; total: number; mean: number; max: number }>(
      `SELECT query, calls, rows, total_exec_time AS total, mean_exec_time AS mean, max_exec_time AS max FROM pg_stat_statements
        WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) ORDER BY total_exec_time DESC LIMIT $1`,
      [limit],
    );
    return rows.map((row) => ({ query: row.query.replace(/\s+/g, ' ').slice(0, 110), calls: Number(row.calls), rows: Number(row.rows), totalMs: row.total, meanMs: row.mean, maxMs: row.max }));
  }

  async resetStatements(): Promise<void> {
    await this.admin.query('SELECT pg_stat_statements_reset()');
  }

  async close(): Promise<void> {
    for (const producer of this.producers.values()) await producer.close().catch((error: unknown) => console.error(error));
    await this.admin.end();
  }
}

// ---- phases 1 and 2: schedule, replace, cancel rates -------------------------

type RateMode = 'sequential' | 'concurrent' | 'bulk' | 'replace' | 'cancel';

interface RateRow {
  readonly mode: RateMode;
  readonly kind: PgContender | 'bare';
  readonly rates: number[];
  readonly cpuUsec: number[];
}

const MODE_LABEL: Record<RateMode, string> = {
  sequential: 'schedule, one awaited at a time',
  concurrent: 'schedule, 100 in flight',
  bulk: 'schedule in bulk, 100 per call, one call at a time',
  replace: 'replace by key, 100 in flight',
  cancel: 'cancel by key, 100 in flight',
};

const CALL_LABEL: Record<RateMode, Record<PgContender | 'bare', string>> = {
  sequential: { delay: 'DelayService.schedule', pgboss: 'send({ startAfter, singletonKey })', graphile: 'addJob({ runAt, jobKey })', bare: 'INSERT one row' },
  concurrent: { delay: 'DelayService.schedule', pgboss: 'send({ startAfter, singletonKey })', graphile: 'addJob({ runAt, jobKey })', bare: 'INSERT one row' },
  bulk: { delay: 'DelayService.scheduleMany', pgboss: 'insert(jobs)', graphile: 'addJobs(specs)', bare: 'INSERT 100 rows (unnest)' },
  replace: { delay: 'DelayService.schedule (same key)', pgboss: 'upsert({ singletonKey, startAfter })', graphile: "addJob({ jobKey }) (jobKeyMode 'replace')", bare: 'UPDATE by key' },
  cancel: { delay: 'DelayService.cancel(topic, key)', pgboss: 'cancel(name, id) (id kept from insert)', graphile: 'SELECT remove_job(key)', bare: 'DELETE by key' },
};

async function timeRate(bench: Bench, kind: PgContender | 'bare', mode: RateMode, durationMs: number): Promise<{ rate: number; cpuUsec: number }> {
  const producer = bench.producer(kind);
  await bench.reset(kind);
  const atMs = Date.now() + 3_600_000;
  if (mode === 'replace' || mode === 'cancel') await bench.load(kind, 'keyed', SETTINGS.keyedCount, () => atMs);
  const cpuBefore = process.cpuUsage();
  const untilMs = performance.now() + durationMs;
  let result: { done: number; seconds: number };
  if (mode === 'sequential' || mode === 'concurrent') {
    result = await pump(mode === 'sequential' ? 1 : SETTINGS.inFlight, { untilMs }, (n) => producer.one(item('sched', n, atMs)));
  } else if (mode === 'bulk') {
    const startedAt = performance.now();
    let done = 0;
    while (performance.now() < untilMs) {
      await producer.bulk(Array.from({ length: SETTINGS.bulkSize }, (_, n) => item('sched', done + n, atMs)));
      done += SETTINGS.bulkSize;
    }
    result = { done, seconds: (performance.now() - startedAt) / 1000 };
  } else if (mode === 'replace') {
    result = await pump(SETTINGS.inFlight, { untilMs, count: SETTINGS.keyedCount }, (n) => producer.replace(item('keyed', n, atMs + 60_000)));
  } else {
    result = await pump(SETTINGS.inFlight, { untilMs, count: SETTINGS.keyedCount }, (n) => producer.cancel(actionKey('keyed', n)));
  }
  const cpu = process.cpuUsage(cpuBefore);
  return { rate: result.done / result.seconds, cpuUsec: (cpu.user + cpu.system) / result.done };
}

async function measureRates(bench: Bench, modes: readonly RateMode[]): Promise<RateRow[]> {
  const kinds: Array<PgContender | 'bare'> = [...CONTENDERS, 'bare'];
  const rows: RateRow[] = [];
  for (const mode of modes) {
    for (const kind of kinds) await timeRate(bench, kind, mode, SETTINGS.warmupMs);
    const modeRows = kinds.map((kind): RateRow => ({ mode, kind, rates: [], cpuUsec: [] }));
    for (let round = 0; round < SETTINGS.rounds; round++) {
      for (const row of modeRows) {
        const { rate, cpuUsec } = await timeRate(bench, row.kind, mode, SETTINGS.roundMs);
        row.rates.push(rate);
        row.cpuUsec.push(cpuUsec);
      }
    }
    rows.push(...modeRows);
  }
  for (const kind of kinds) await bench.reset(kind);
  return rows;
}

function bestCompetitor<T>(values: ReadonlyMap<PgContender, T>, better: (a: T, b: T) => boolean): { kind: PgContender; value: T } | undefined {
  let best: { kind: PgContender; value: T } | undefined;
  for (const kind of ['pgboss', 'graphile'] as const) {
    const value = values.get(kind);
    if (value === undefined) continue;
    if (best === undefined || better(value, best.value)) best = { kind, value };
  }
  return best;
}

function rateTable(rows: readonly RateRow[]): string {
  const out: string[][] = [];
  for (const mode of new Set(rows.map((row) => row.mode))) {
    const modeRows = rows.filter((row) => row.mode === mode);
    const rates = new Map(modeRows.filter((row) => row.kind !== 'bare').map((row) => [row.kind as PgContender, median(row.rates)]));
    const best = bestCompetitor(rates, (a, b) => a > b);
    const floor = median(modeRows.find((row) => row.kind === 'bare')?.rates ?? [NaN]);
    for (const row of modeRows) {
      const rate = median(row.rates);
      out.push([
        MODE_LABEL[mode],
        `${contenderLabel(row.kind)}: ${CALL_LABEL[mode][row.kind]}`,
        fmt(rate),
        row.rates.map((value) => fmt(value)).join(' / '),
        row.kind === 'delay' && best ? ratio(rate / best.value) : '',
        ratio(rate / floor),
        fmt(median(row.cpuUsec)),
      ]);
    }
  }
  return markdownTable(
    ['operation', 'system: call', 'per s (median)', 'rounds', 'x best competitor', 'x floor', 'client CPU µs/op'],
    out,
    [false, false, true, true, true, true, true],
  );
}

// ---- phase 3: the floor of a drain ------------------------------------------

interface FloorDrain {
  readonly connections: number;
  /** The bare DELETE ... RETURNING. */
  readonly rate: number;
  /** The bare lease-then-delete (BareProducer.takeLeased). */
  readonly leasedRate: number;
  /** The bare move into one leased row per claim (BareProducer.takeMoved). */
  readonly movedRate: number;
  /** The bare in-place claim, one leased row per claim, claims taking turns (BareProducer.takeInPlace). */
  readonly inPlaceRate: number;
}

async function floorDrain(bench: Bench, connections: number): Promise<FloorDrain> {
  const rate = await floorRun(bench, connections, 'DELETE ... RETURNING', async (client) => {
    let taken = 0;
    for (;;) {
      const count = await bench.bare.take(client, SETTINGS.claimBatch);
      if (count === 0) return taken;
      taken += count;
    }
  });
  // Each claim also deletes what the claim before it leased; the last one only that.
  const leasedRate = await floorRun(bench, connections, 'lease + DELETE', async (client) => {
    let taken = 0;
    let leased: string[] = [];
    for (;;) {
      const done = leased;
      leased = await bench.bare.takeLeased(client, SETTINGS.claimBatch, done);
      taken += leased.length;
      if (leased.length === 0 && done.length === 0) return taken;
    }
  });
  // Each claim also deletes the claims table row of the claim before it.
  const movedRate = await floorRun(bench, connections, 'move to a claim row', async (client, worker) => {
    let taken = 0;
    let done: string | null = null;
    for (let n = 0; ; n++) {
      const claimId = `${worker}:${n}`;
      const moved = await bench.bare.takeMoved(client, SETTINGS.claimBatch, claimId, done);
      taken += moved;
      if (moved === 0 && done === null) return taken;
      done = moved > 0 ? claimId : null;
    }
  });
  // Each claim also deletes the rows the claim before it took, and that claim's runs row.
  const inPlaceRate = await floorRun(bench, connections, 'in place, claims in turn', async (client, worker) => {
    let taken = 0;
    let done: string[] = [];
    let doneClaim: string | null = null;
    for (let n = 0; ; n++) {
      const claimId = `${worker}:${n}`;
      const members = await bench.bare.takeInPlace(client, SETTINGS.claimBatch, claimId, doneClaim, done);
      taken += members.length;
      if (members.length === 0 && doneClaim === null) return taken;
      [done, doneClaim] = members.length > 0 ? [members, claimId] : [[], null];
    }
  });
  return { connections, rate, leasedRate, movedRate, inPlaceRate };
}

/**
 * One bare drain of `drainCount` due rows over `connections` connections, each running `drainOne` until it finds
 * nothing (it returns how many rows it took); rows per second. Every row is taken once and nothing is left.
 */
async function floorRun(bench: Bench, connections: number, name: string, drainOne: (client: PoolClient, worker: number) => Promise<number>): Promise<number> {
  await bench.reset('bare');
  const atMs = Date.now();
  await bench.load('bare', 'drain', SETTINGS.drainCount, () => atMs);
  await bench.vacuumAnalyze(SCHEMAS.bare);
  const clients = await Promise.all(Array.from({ length: connections }, () => bench.bare.pool.connect()));
  const startedAt = performance.now();
  let taken = 0;
  try {
    taken = (await Promise.all(clients.map((client, worker) => drainOne(client, worker)))).reduce((sum, count) => sum + count, 0);
  } finally {
    for (const client of clients) client.release();
  }
  const rate = taken / ((performance.now() - startedAt) / 1000);
  const left = await bench.bare.pool.query<{ n: string }>(
    `SELECT (SELECT count(*) FROM ${SCHEMAS.bare}.actions) + (SELECT count(*) FROM ${SCHEMAS.bare}.claims) + (SELECT count(*) FROM ${SCHEMAS.bare}.runs) AS n`,
  );
  if (taken !== SETTINGS.drainCount || Number(left.rows[0]?.n) !== 0) throw new Error(`the ${name} floor took ${taken} rows of ${SETTINGS.drainCount} and left ${left.rows[0]?.n}`);
  return rate;
}

// ---- phases 4, 5, 7, 8: consuming in worker processes -----------------------

const WORKER_SCRIPT = join(__dirname, 'postgres', 'worker.js');

interface RunStats {
  readonly runs: number;
  readonly unique: number;
  readonly lost: number;
  readonly duplicates: number;
  readonly lateness: Float64Array;
  readonly firstStart: number;
  readonly lastEnd: number;
  readonly split: number[];
  readonly workerCpuMicros: number;
  readonly loopDelayP99: number;
}

function runStats(reports: readonly WorkerReport[], expected: number, prefix: string): RunStats {
  const seen = new Map<string, number>();
  const lateness: number[] = [];
  let firstStart = Infinity;
  let lastEnd = -Infinity;
  let workerCpuMicros = 0;
  for (const report of reports) {
    workerCpuMicros += report.cpuMicros;
    for (let n = 0; n < report.keys.length; n++) {
      seen.set(report.keys[n], (seen.get(report.keys[n]) ?? 0) + 1);
      lateness.push(report.start[n] - report.dueAt[n]);
      firstStart = Math.min(firstStart, report.start[n]);
      lastEnd = Math.max(lastEnd, report.end[n]);
    }
  }
  let lost = 0;
  for (let n = 0; n < expected; n++) if (!seen.has(actionKey(prefix, n))) lost++;
  let duplicates = 0;
  for (const count of seen.values()) duplicates += count - 1;
  return {
    runs: reports.reduce((sum, report) => sum + report.keys.length, 0),
    unique: seen.size,
    lost,
    duplicates,
    lateness: Float64Array.from(lateness).sort(),
    firstStart,
    lastEnd,
    split: reports.map((report) => report.keys.length),
    workerCpuMicros,
    loopDelayP99: Math.max(...reports.map((report) => report.loopDelay.p99)),
  };
}

function workerConfig(kind: PgContender, url: string, zeroOffset = false, handler: DelayHandlerKind = 'noop', concurrency = SETTINGS.concurrency): PgWorkerConfig {
  return { kind, url, concurrency, claimBatch: SETTINGS.claimBatch, zeroOffset, handler };
}

async function leftRows(bench: Bench, kind: PgContender): Promise<number> {
  const sql = {
    delay: `SELECT count(*)::int AS n FROM ${SCHEMAS.delay}.actions`,
    pgboss: `SELECT count(*)::int AS n FROM ${SCHEMAS.pgboss}.job WHERE state IN ('created', 'retry', 'active')`,
    graphile: `SELECT count(*)::int AS n FROM ${SCHEMAS.graphile}._private_jobs`,
  }[kind];
  const { rows } = await bench.admin.query<{ n: number }>(sql);
  return rows[0].n;
}

interface DrainResult {
  readonly kind: PgContender;
  /** nestjs-delay's handler (phase 11 runs every kind; a no-op elsewhere, and for the other systems). */
  readonly handler: DelayHandlerKind;
  readonly workers: number;
  /** Handlers in flight per worker process. */
  readonly concurrency: number;
  /** The machine's load average (1 min) as the workers started. */
  readonly loadAtStart: number;
  readonly loadRate: number;
  readonly stats: RunStats;
  readonly rate: number;
  readonly left: number;
  readonly statements: Awaited<ReturnType<Bench['topStatements']>>;
  readonly sizesAfter?: Awaited<ReturnType<Bench['schemaBytes']>>;
  /** Drains whose handler writes: the rows left in SINK_TABLE, and how many distinct keys. */
  readonly sink?: { readonly rows: number; readonly keys: number };
}

async function runDrain(
  bench: Bench,
  kind: PgContender,
  workers: number,
  count = SETTINGS.drainCount,
  prefix = 'drain',
  handler: DelayHandlerKind = 'noop',
  concurrency = SETTINGS.concurrency,
): Promise<DrainResult> {
  if (handler !== 'noop' && kind !== 'delay') throw new Error('only nestjs-delay runs the handlers that write');
  const writes = handler !== 'noop';
  await bench.reset(kind);
  if (writes) await bench.admin.query(`CREATE TABLE IF NOT EXISTS ${SINK_TABLE} (key text NOT NULL); TRUNCATE ${SINK_TABLE}`);
  const atMs = Date.now();
  const loadRate = await bench.load(kind, prefix, count, () => atMs);
  await bench.vacuumAnalyze(SCHEMAS[kind]);
  if (writes) await bench.admin.query(`VACUUM ANALYZE ${SINK_TABLE}`);
  await bench.resetStatements();
  const loadAtStart = loadavg()[0];
  const pool = await WorkerPool.start(workers, workerConfig(kind, bench.server.url, false, handler, concurrency), WORKER_SCRIPT, process.env.BENCH_PG_CPU_PROF);
  try {
    const deadline = Date.now() + Math.max(120_000, count * 2);
    await pool.waitForDone(count, deadline);
    await sleep(300);
    const stats = runStats(await pool.reports(), count, prefix);
    const statements = await bench.topStatements(6);
    const left = await leftRows(bench, kind);
    const sizesAfter = kind === 'delay' && !writes ? await bench.schemaBytes(SCHEMAS.delay) : undefined;
    const sink = writes ? await sinkRows(bench) : undefined;
    return { kind, handler, workers, concurrency, loadAtStart, loadRate, stats, rate: stats.unique / ((stats.lastEnd - stats.firstStart) / 1000), left, statements, sizesAfter, sink };
  } finally {
    await pool.stop();
  }
}

async function sinkRows(bench: Bench): Promise<{ rows: number; keys: number }> {
  const { rows } = await bench.admin.query<{ rows: number; keys: number }>(`SELECT count(*)::int AS rows, count(DISTINCT key)::int AS keys FROM ${SINK_TABLE}`);
  return { rows: rows[0]?.rows ?? 0, keys: rows[0]?.keys ?? 0 };
}

interface LatenessResult {
  readonly kind: PgContender | 'bare';
  /** nestjs-delay's worker held its clock offset estimate at 0 (a what-if). */
  readonly zeroOffset: boolean;
  readonly stats: RunStats;
  /** The busiest statements of the run (pg_stat_statements, nestjs-delay only). */
  readonly statements?: Awaited<ReturnType<Bench['topStatements']>>;
}

async function runLateness(bench: Bench, kind: PgContender, zeroOffset = false): Promise<LatenessResult> {
  await bench.reset(kind);
  await bench.resetStatements();
  const pool = await WorkerPool.start(1, workerConfig(kind, bench.server.url, zeroOffset), WORKER_SCRIPT);
  try {
    await sleep(2_500);
    const t0 = Date.now() + SETTINGS.latenessLeadMs;
    const step = SETTINGS.latenessSpreadMs / SETTINGS.latenessCount;
    const items = Array.from({ length: SETTINGS.latenessCount }, (_, n) => item('late', n, Math.round(t0 + n * step)));
    const producer = bench.producer(kind);
    // One call per action, as an application would arm them, 10 in flight.
    await pump(10, { count: items.length }, (n) => producer.one(items[n]));
    await pool.waitForDone(items.length, t0 + SETTINGS.latenessSpreadMs + 15_000);
    await sleep(200);
    const statements = kind === 'delay' ? await bench.topStatements(4) : undefined;
    return { kind, zeroOffset, stats: runStats(await pool.reports(), items.length, 'late'), statements };
  } finally {
    await pool.stop();
  }
}

/**
 * The floor of lateness: the same spread of due times in the bare table, and
 * this process sleeping (setTimeout) until each due time, then taking what is
 * due with one autocommit DELETE ... RETURNING: a timer and one committed
 * round trip, what any consumer that wakes on time must at least pay.
 */
async function floorLateness(bench: Bench): Promise<LatenessResult> {
  await bench.reset('bare');
  const t0 = Date.now() + SETTINGS.latenessLeadMs;
  const step = SETTINGS.latenessSpreadMs / SETTINGS.latenessCount;
  const items = Array.from({ length: SETTINGS.latenessCount }, (_, n) => item('late', n, Math.round(t0 + n * step)));
  await bench.bare.bulk(items);
  const client = await bench.bare.pool.connect();
  const lateness: number[] = [];
  const keys = new Map<string, number>();
  try {
    for (const next of items) {
      const wait = next.atMs - Date.now();
      if (wait > 0) await sleep(wait);
      const { rows } = await client.query<{ payload: string }>(
        `DELETE FROM ${SCHEMAS.bare}.actions WHERE topic = $1 AND due_at <= $2 RETURNING payload`,
        [NAME, Date.now()],
      );
      const now = Date.now();
      for (const row of rows) {
        const payload = JSON.parse(row.payload) as { key: string; dueAt: number };
        lateness.push(now - payload.dueAt);
        keys.set(payload.key, (keys.get(payload.key) ?? 0) + 1);
      }
    }
  } finally {
    client.release();
  }
  const sorted = Float64Array.from(lateness).sort();
  return {
    kind: 'bare',
    zeroOffset: false,
    stats: {
      runs: lateness.length,
      unique: keys.size,
      lost: items.length - keys.size,
      duplicates: lateness.length - keys.size,
      lateness: sorted,
      firstStart: NaN,
      lastEnd: NaN,
      split: [lateness.length],
      workerCpuMicros: NaN,
      loopDelayP99: NaN,
    },
  };
}

// ---- phase 10: lateness beside a held row ----------------------------------------

interface BesideHeldResult {
  /** An open transaction of the application held one due row of the topic for the whole measurement. */
  readonly held: boolean;
  readonly stats: RunStats;
  /** The busiest statements of the run (pg_stat_statements): how often the consumer claimed. */
  readonly statements: Awaited<ReturnType<Bench['topStatements']>>;
}

const HELD_KEY = actionKey('held', 0);

/**
 * Free actions due one after the other, each scheduled (from the bench
 * process) shortly before it is due, consumed by one idle nestjs-delay worker,
 * optionally while an application transaction holds one due row of the same
 * topic (`UPDATE ... SET payload = payload`, left open). The held row is
 * scheduled and locked before the worker starts, so no claim ever takes it: it
 * stays due and skipped all along, which is what used to make the consumer
 * back off up to 1 s past the free actions' due times, and what kept a write
 * into the topic from notifying (the held row counted as its earliest due).
 */
async function runBesideHeld(bench: Bench, held: boolean): Promise<BesideHeldResult> {
  await bench.reset('delay');
  const producer = bench.producer('delay');
  let holder: PoolClient | undefined;
  if (held) {
    await producer.one(item('held', 0, Date.now()));
    holder = await bench.admin.connect();
    await holder.query('BEGIN');
    const { rowCount } = await holder.query(`UPDATE ${SCHEMAS.delay}.actions SET payload = payload WHERE topic = $1 AND member = $2`, [NAME, HELD_KEY]);
    if (rowCount !== 1) throw new Error(`the held row ${HELD_KEY} was not found (${rowCount} rows updated)`);
  }
  await bench.resetStatements();
  const pool = await WorkerPool.start(1, workerConfig('delay', bench.server.url), WORKER_SCRIPT);
  try {
    await sleep(2_500);
    const t0 = Date.now() + SETTINGS.latenessLeadMs;
    const step = SETTINGS.besideHeldSpreadMs / SETTINGS.besideHeldCount;
    const items = Array.from({ length: SETTINGS.besideHeldCount }, (_, n) => item('free', n, Math.round(t0 + n * step)));
    // Each write goes out on its own schedule, not after the one before it: a slow commit must not delay the next
    // write (it would show as lateness of the consumer). Failures are kept and thrown once all have settled.
    const failures: unknown[] = [];
    const writes: Array<Promise<void>> = [];
    for (const next of items) {
      const wait = next.atMs - SETTINGS.besideHeldScheduleMs - Date.now();
      if (wait > 0) await sleep(wait);
      writes.push(producer.one(next).catch((error: unknown) => void failures.push(error)));
    }
    await Promise.all(writes);
    if (failures.length > 0) throw new Error(`${failures.length} schedule calls failed, the first: ${String(failures[0])}`);
    await pool.waitForDone(items.length, t0 + SETTINGS.besideHeldSpreadMs + 15_000);
    await sleep(200);
    const stats = runStats(await pool.reports(), items.length, 'free');
    return { held, stats, statements: await bench.topStatements(3) };
  } finally {
    // The worker goes first: once the transaction ends the held row would run, and it is not one of the measured.
    await pool.stop();
    if (holder !== undefined) {
      await holder.query('ROLLBACK').catch(() => undefined);
      holder.release();
    }
  }
}

// ---- phase 6: bytes per pending action ---------------------------------------

interface SizeResult {
  readonly kind: PgContender | 'bare';
  readonly count: number;
  readonly bytesPerAction: number;
  readonly breakdown: string;
}

async function measureSize(bench: Bench, kind: PgContender | 'bare', count: number): Promise<SizeResult> {
  const schema = SCHEMAS[kind];
  await bench.reset(kind);
  await bench.vacuumAnalyze(schema);
  const before = await bench.schemaBytes(schema);
  const atMs = Date.now() + SETTINGS.farMs;
  await bench.load(kind, 'size', count, () => atMs);
  await bench.vacuumAnalyze(schema);
  const after = await bench.schemaBytes(schema);
  const per = (bytes: number): string => fmt(bytes / count);
  const breakdown = after.byTable
    .filter((table) => table.heap + table.indexes + table.toast > 65_536)
    .map((table) => `${table.name}: heap ${per(table.heap)}, indexes ${per(table.indexes)}, toast ${per(table.toast)}`)
    .join('; ');
  await bench.reset(kind);
  return { kind, count, bytesPerAction: (after.total - before.total) / count, breakdown };
}

// ---- phase 7: bloat after 1M fired and deleted; phase 8: vacuum held back ------

interface BloatResult {
  readonly count: number;
  readonly seconds: number;
  readonly before: number;
  readonly atEnd: Awaited<ReturnType<Bench['schemaBytes']>>;
  readonly later: Awaited<ReturnType<Bench['schemaBytes']>>;
  readonly laterSeconds: number;
  readonly lost: number;
  readonly duplicates: number;
  readonly autovacuums: string;
}

/** nestjs-delay: `count` actions scheduled (due at once, batches of 1000) while 2 workers fire them; the schema's size at the end and a minute later. */
async function runBloat(bench: Bench, count: number): Promise<BloatResult> {
  await bench.reset('delay');
  await bench.vacuumAnalyze(SCHEMAS.delay);
  const before = (await bench.schemaBytes(SCHEMAS.delay)).total;
  const pool = await WorkerPool.start(2, workerConfig('delay', bench.server.url), WORKER_SCRIPT);
  const startedAt = performance.now();
  try {
    await bench.load('delay', 'bloat', count, () => Date.now());
    await pool.waitForDone(count, Date.now() + 1_200_000);
    const seconds = (performance.now() - startedAt) / 1000;
    const stats = runStats(await pool.reports(), count, 'bloat');
    const atEnd = await bench.schemaBytes(SCHEMAS.delay);
    const laterSeconds = QUICK ? 5 : 60;
    await sleep(laterSeconds * 1000);
    const later = await bench.schemaBytes(SCHEMAS.delay);
    const { rows } = await bench.admin.query<{ relname: string; autovacuum_count: string; n_dead_tup: string }>(
      'SELECT relname, autovacuum_count, n_dead_tup FROM pg_stat_user_tables WHERE schemaname = $1 ORDER BY relname',
      [SCHEMAS.delay],
    );
    const autovacuums = rows
      .filter((row) => row.relname === 'actions')
      .map((row) => `${row.relname}: ${row.autovacuum_count} autovacuums, ${row.n_dead_tup} dead tuples now`)
      .join('; ');
    return { count, seconds, before, atEnd, later, laterSeconds, lost: stats.lost, duplicates: stats.duplicates, autovacuums };
  } finally {
    await pool.stop();
  }
}

interface HeldResult {
  readonly heldMs: number;
  readonly rounds: Array<{ kind: PgContender; rate: number; lost: number; duplicates: number; sizeAfter: number; released: boolean }>;
}

/**
 * The drain of `drainCount` (2 workers), again and again for each system, while another connection holds a snapshot open `heldMs`;
 * then, once the snapshot is let go, one more drain per system (does each one recover?).
 */
async function runHeld(bench: Bench, heldMs: number): Promise<HeldResult> {
  const holder = await bench.admin.connect();
  const rounds: HeldResult['rounds'] = [];
  try {
    await holder.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
    await holder.query('SELECT txid_current()');
    const until = Date.now() + heldMs;
    while (Date.now() < until) {
      for (const kind of HELD_SYSTEMS) {
        const result = await runDrain(bench, kind, 2, SETTINGS.drainCount, 'held');
        rounds.push({ kind, rate: result.rate, lost: result.stats.lost, duplicates: result.stats.duplicates, sizeAfter: (await bench.schemaBytes(SCHEMAS[kind])).total, released: false });
        if (Date.now() >= until) break;
      }
    }
  } finally {
    await holder.query('ROLLBACK').catch(() => undefined);
    holder.release();
  }
  // Each drain starts as every drain does (its tables emptied, VACUUM ANALYZE), now with no snapshot holding dead rows back.
  for (const kind of HELD_SYSTEMS) {
    const result = await runDrain(bench, kind, 2, SETTINGS.drainCount, 'released');
    rounds.push({ kind, rate: result.rate, lost: result.stats.lost, duplicates: result.stats.duplicates, sizeAfter: (await bench.schemaBytes(SCHEMAS[kind])).total, released: true });
  }
  return { heldMs, rounds };
}

// ---- phase 9: the claim, explained ---------------------------------------------

/**
 * nestjs-delay's claim, run by hand along a drain of `drainCount` from one
 * connection, as a consumer runs it: claim 100, and the next claim carries
 * the completions of what the last one took and finishes its claim; the plans
 * of the statements inside the claim function (auto_explain, ANALYZE and
 * BUFFERS) for a few claims, and the time of each.
 */
async function explainClaim(bench: Bench): Promise<string[]> {
  const { claim } = (await driverStatementsModule()).postgresStatements(SCHEMAS.delay);
  return ["### the driver's claim", '', ...(await explainAlongDrain(bench, claim))];
}

async function explainAlongDrain(bench: Bench, claim: string): Promise<string[]> {
  await bench.reset('delay');
  const atMs = Date.now();
  await bench.load('delay', 'explain', SETTINGS.drainCount, () => atMs);
  await bench.vacuumAnalyze(SCHEMAS.delay);
  const out: string[] = [];
  const client = await bench.admin.connect();
  try {
    const claims = Math.ceil(SETTINGS.drainCount / SETTINGS.claimBatch);
    const explainAt = new Set([1, Math.floor(claims / 2)]);
    const times: number[] = [];
    // The plans of the statements the claim function runs, sent to this client as notices.
    const plans: string[] = [];
    client.on('notice', (notice) => plans.push(notice.message ?? ''));
    await client.query("LOAD 'auto_explain'");
    let taken: Array<Record<string, unknown>> = [];
    const startedAt = performance.now();
    for (let n = 0; n <= claims; n++) {
      // The claim's parameters: topic, limit, lease, claim id, ticks besides the limit (none here), resume point (where
      // the last claim ended, as a consumer sends it), the completions of what the last claim took, that claim, over,
      // and the wait for the topic's turn.
      const last = taken.at(-1);
      // (The bench's rows are single actions in pick order here: the last one taken is the resume point.)
      const args = [
        NAME,
        SETTINGS.claimBatch,
        30_000,
        `explain-${n}`,
        0,
        last?.due_at ?? null,
        last?.member ?? null,
        taken.map((row) => row.member),
        taken.map((row) => row.token),
        n > 0 ? [`explain-${n - 1}`] : [],
        2_500,
        // Expired leases looked for in the first claim only, as a draining consumer does once a second.
        n === 0,
      ];
      const explain = explainAt.has(n);
      if (explain) {
        await client.query(
          "SET auto_explain.log_min_duration = 0; SET auto_explain.log_analyze = on; SET auto_explain.log_buffers = on; SET auto_explain.log_nested_statements = on; SET auto_explain.log_level = notice; SET client_min_messages = notice",
        );
        plans.length = 0;
      }
      const claimStarted = performance.now();
      const rows = (await client.query(claim, args)).rows;
      times.push(performance.now() - claimStarted);
      if (explain) {
        await client.query('SET auto_explain.log_min_duration = -1');
        out.push(`claim #${n + 1}:`, ...plans.flatMap((plan) => plan.split('\n').map((line) => `    ${line}`)), '');
      }
      // One row (migration 6): what it took is an array per column, [members, keys, tokens, attempts, due_ats, ...].
      const columns = (rows[0]?.taken ?? null) as unknown[][] | null;
      taken = columns === null ? [] : columns[0].map((member, n) => ({ member, token: columns[2][n], due_at: columns[4][n] }));
    }
    const seconds = (performance.now() - startedAt) / 1000;
    const sorted = Float64Array.from(times).sort();
    out.unshift(
      `${claims} claims of ${SETTINGS.claimBatch} from one connection, each followed by the completion's DELETE: ${fmt(SETTINGS.drainCount / seconds)} actions/s; claim round trip p50 ${fmt(quantile(sorted, 0.5), 2)} ms, p99 ${fmt(quantile(sorted, 0.99), 2)} ms; first 10 ${fmt(median(times.slice(0, 10)), 2)} ms, last 10 ${fmt(median(times.slice(-10)), 2)} ms (median)`,
      '',
    );
  } finally {
    client.release(true);
  }
  return out;
}

// ---- reports -----------------------------------------------------------------

const MB = 2 ** 20;

function drainLabel(result: DrainResult): string {
  return result.handler !== 'noop' ? `${contenderLabel(result.kind)}, ${handlerLabel(result.handler)}` : contenderLabel(result.kind);
}

/** Phase 11: each drain beside the plain nestjs-delay drains (no-op, and one INSERT through a pool) and graphile-worker's with as many workers. */
function transactionalDrainTable(drains: readonly DrainResult[]): string {
  const rows = drains.map((result) => {
    const delayWith = (handler: DelayHandlerKind): DrainResult | undefined => drains.find((other) => other.kind === 'delay' && other.handler === handler && other.workers === result.workers);
    const plain = delayWith('noop');
    const plainInsert = delayWith('insert');
    const graphile = drains.find((other) => other.kind === 'graphile' && other.workers === result.workers);
    const { stats } = result;
    return [
      `${result.workers}`,
      drainLabel(result),
      `${result.concurrency}`,
      fmt(result.rate),
      plain && result !== plain ? ratio(result.rate / plain.rate) : '',
      plainInsert && result !== plainInsert && result.kind === 'delay' && result.handler !== 'noop' ? ratio(result.rate / plainInsert.rate) : '',
      graphile && result !== graphile ? ratio(result.rate / graphile.rate) : '',
      `${stats.lost} / ${stats.duplicates}`,
      result.sink ? `${fmt(result.sink.rows)} (${fmt(result.sink.keys)} keys)` : '',
      fmt(stats.workerCpuMicros / Math.max(1, stats.runs), 0),
      fmt(result.left),
      fmt(result.loadAtStart, 2),
    ];
  });
  return markdownTable(
    ['workers', 'system', 'handlers in flight per worker', 'actions/s', 'x plain no-op drain', 'x plain INSERT drain', 'x graphile-worker', 'lost / duplicated', 'sink rows', 'worker CPU µs/action', 'left pending', 'load avg at start'],
    rows,
    [true, false, true, true, true, true, true, true, true, true, true, true],
  );
}

function drainTable(drains: readonly DrainResult[], floors: readonly FloorDrain[]): string {
  const rows = drains.map((result) => {
    const competitors = new Map(drains.filter((other) => other.workers === result.workers && other.kind !== 'delay').map((other) => [other.kind, other.rate]));
    const best = bestCompetitor(competitors, (a, b) => a > b);
    const floorEntry = floors.find((entry) => entry.connections === result.workers);
    const floor = floorEntry?.rate ?? NaN;
    const leasedFloor = floorEntry?.leasedRate ?? NaN;
    const { stats } = result;
    return [
      `${result.workers}`,
      drainLabel(result),
      fmt(result.rate),
      result.kind === 'delay' && best ? ratio(result.rate / best.value) : '',
      ratio(result.rate / floor),
      ratio(result.rate / leasedFloor),
      `${stats.lost} / ${stats.duplicates}`,
      stats.split.join(' + '),
      fmt(stats.workerCpuMicros / Math.max(1, stats.runs), 0),
      fmt(stats.loopDelayP99, 0),
      fmt(result.left),
      fmt(result.loadRate),
    ];
  });
  return markdownTable(
    ['workers', 'system', 'actions/s', 'x best competitor', 'x bare DELETE..RETURNING', 'x bare lease + DELETE', 'lost / duplicated', 'runs per worker', 'worker CPU µs/action', 'worker loop lag p99 ms', 'left pending', 'load rate (bulk) /s'],
    rows,
    [true, false, true, true, true, true, true, true, true, true, true, true],
  );
}

function statementsTable(drains: readonly DrainResult[]): string {
  const rows: string[][] = [];
  for (const result of drains) {
    for (const statement of result.statements.slice(0, 4)) {
      rows.push([
        `${drainLabel(result)}, ${result.workers}w`,
        fmt(statement.calls),
        fmt(statement.rows / Math.max(1, statement.calls), 1),
        fmt(statement.meanMs, 3),
        fmt(statement.totalMs),
        `\`${statement.query.replace(/\|/g, '\\|')}\``,
      ]);
    }
  }
  return markdownTable(['drain', 'calls', 'rows/call', 'mean ms', 'total ms', 'statement (cut)'], rows, [false, true, true, true, true, false]);
}

function latenessTable(results: readonly LatenessResult[]): string {
  return markdownTable(
    ['system', 'wake-up', 'runs', 'lost / duplicated', 'lateness p50 ms', 'p90 ms', 'p99 ms', 'max ms', 'worker CPU µs/action', 'worker loop lag p99 ms'],
    results.map(({ kind, zeroOffset, stats }) => [
      zeroOffset ? 'nestjs-delay, clock offset held at 0 (what-if)' : contenderLabel(kind),
      {
        delay: 'timer to the earliest due time; NOTIFY when a write makes it earlier',
        pgboss: 'polls every 2 s (pollingIntervalSeconds default; queue notify off)',
        graphile: 'polls every 2 s (pollInterval default)',
        bare: 'setTimeout to each due time, then one DELETE ... RETURNING (floor)',
      }[kind],
      fmt(stats.runs),
      `${stats.lost} / ${stats.duplicates}`,
      fmt(quantile(stats.lateness, 0.5)),
      fmt(quantile(stats.lateness, 0.9)),
      fmt(quantile(stats.lateness, 0.99)),
      fmt(stats.lateness[stats.lateness.length - 1] ?? NaN),
      fmt(stats.workerCpuMicros / Math.max(1, stats.runs)),
      fmt(stats.loopDelayP99),
    ]),
    [false, false, true, true, true, true, true, true, true, true],
  );
}

function besideHeldTable(results: readonly BesideHeldResult[]): string {
  const without = results.find((result) => !result.held);
  const p99Without = without ? quantile(without.stats.lateness, 0.99) : NaN;
  return markdownTable(
    ['run', 'runs', 'lost / duplicated', 'lateness p50 ms', 'p90 ms', 'p99 ms', 'max ms', 'p99 x without the held row', 'claims', 'worker CPU µs/action'],
    results.map(({ held, stats, statements }) => [
      held ? 'nestjs-delay, one due row held by an open transaction' : 'nestjs-delay, nothing held',
      fmt(stats.runs),
      `${stats.lost} / ${stats.duplicates}`,
      fmt(quantile(stats.lateness, 0.5)),
      fmt(quantile(stats.lateness, 0.9)),
      fmt(quantile(stats.lateness, 0.99)),
      fmt(stats.lateness[stats.lateness.length - 1] ?? NaN),
      held ? ratio(quantile(stats.lateness, 0.99) / p99Without) : '',
      // The claim is the one statement that names the claim function (its calls: how often the consumer looked).
      fmt(statements.find((statement) => statement.query.includes('.claim_taken('))?.calls ?? NaN),
      fmt(stats.workerCpuMicros / Math.max(1, stats.runs)),
    ]),
    [false, true, true, true, true, true, true, true, true, true],
  );
}

function sizeTable(sizes: readonly SizeResult[]): string {
  return markdownTable(
    ['pending', 'system', 'bytes/action', 'x smaller competitor', 'by table, bytes/action'],
    sizes.map((result) => {
      const competitors = new Map(sizes.filter((other) => other.count === result.count && (other.kind === 'pgboss' || other.kind === 'graphile')).map((other) => [other.kind as PgContender, other.bytesPerAction]));
      const best = bestCompetitor(competitors, (a, b) => a < b);
      return [fmt(result.count), contenderLabel(result.kind), fmt(result.bytesPerAction), result.kind === 'delay' && best ? ratio(result.bytesPerAction / best.value) : '', result.breakdown];
    }),
    [true, false, true, true, false],
  );
}

function verdicts(
  rates: readonly RateRow[],
  drains: readonly DrainResult[],
  floors: readonly FloorDrain[],
  lateness: readonly LatenessResult[],
  sizes: readonly SizeResult[],
  besideHeld: readonly BesideHeldResult[],
): string[] {
  const lines: string[] = [];
  const rateOf = (mode: RateMode, kind: PgContender | 'bare'): number => median(rates.find((row) => row.mode === mode && row.kind === kind)?.rates ?? [NaN]);
  if (rates.some((row) => row.mode === 'concurrent')) {
    const ours = rateOf('concurrent', 'delay');
    const best = Math.max(rateOf('concurrent', 'pgboss'), rateOf('concurrent', 'graphile'));
    lines.push(`- schedule with ${SETTINGS.inFlight} in flight: ${fmt(ours)}/s = ${ratio(ours / best)} the faster competitor's ${fmt(best)}/s (target >= 2x): ${mark(ours >= 2 * best)}`);
  }
  for (const workers of SETTINGS.workerCounts) {
    const ours = drains.find((result) => result.kind === 'delay' && result.handler === 'noop' && result.concurrency === SETTINGS.concurrency && result.workers === workers);
    if (ours === undefined) continue;
    const best = Math.max(...drains.filter((result) => result.kind !== 'delay' && result.workers === workers).map((result) => result.rate));
    // Issue 32's targets: 2x with one worker process; 1.5x with two, where the claims of a topic share the server.
    const target = workers === 1 ? 2 : 1.5;
    lines.push(`- drain, ${workers} worker(s): ${fmt(ours.rate)}/s = ${ratio(ours.rate / best)} the faster competitor's ${fmt(best)}/s (target >= ${target}x): ${mark(ours.rate >= target * best)}`);
    const floor = floors.find((entry) => entry.connections === workers);
    if (floor) lines.push(`- drain, ${workers} worker(s) = ${ratio(ours.rate / floor.rate)} the bare DELETE ... RETURNING's ${fmt(floor.rate)}/s with ${workers} connection(s) (target >= 0.5x): ${mark(ours.rate >= 0.5 * floor.rate)}`);
    if (floor) {
      lines.push(
        `  (the bare lease + DELETE, the least a claim with leases does: ${fmt(floor.leasedRate)}/s = ${ratio(floor.leasedRate / best)} the faster competitor, ${ratio(floor.leasedRate / floor.rate)} the bare DELETE ... RETURNING; nestjs-delay = ${ratio(ours.rate / floor.leasedRate)} of it)`,
      );
    }
    lines.push(`- drain, ${workers} worker(s), nestjs-delay lost / duplicated: ${ours.stats.lost} / ${ours.stats.duplicates} (target 0 / 0): ${mark(ours.stats.lost === 0 && ours.stats.duplicates === 0)}`);
  }
  for (const workers of SETTINGS.workerCounts) {
    const delayWith = (handler: DelayHandlerKind): DrainResult | undefined =>
      drains.find((result) => result.kind === 'delay' && result.handler === handler && result.concurrency === SETTINGS.txConcurrency && result.workers === workers);
    const tx = delayWith('transactional-insert');
    const plain = delayWith('noop');
    if (tx === undefined || plain === undefined) continue;
    const plainInsert = delayWith('insert');
    const txNoop = delayWith('transactional');
    const graphile = drains.find((result) => result.kind === 'graphile' && result.workers === workers);
    lines.push(
      `- transactional drain (+1 INSERT each), ${workers} worker(s): ${fmt(tx.rate)}/s = ${ratio(tx.rate / plain.rate)} the plain no-op drain's ${fmt(plain.rate)}/s (target >= 0.5x): ${mark(tx.rate >= 0.5 * plain.rate)}` +
        (plainInsert ? `; = ${ratio(tx.rate / plainInsert.rate)} the plain drain with the same INSERT through a pool (${fmt(plainInsert.rate)}/s)` : '') +
        (txNoop ? `; transactional no-op ${fmt(txNoop.rate)}/s = ${ratio(txNoop.rate / plain.rate)} the plain no-op drain` : '') +
        (graphile ? `; = ${ratio(tx.rate / graphile.rate)} graphile-worker's ${fmt(graphile.rate)}/s` : ''),
    );
    for (const result of [plainInsert, txNoop, tx]) {
      if (result === undefined) continue;
      const writes = result.handler !== 'transactional';
      const sinkWhole = !writes || (result.sink !== undefined && result.sink.rows === SETTINGS.drainCount && result.sink.keys === SETTINGS.drainCount);
      lines.push(
        `- ${drainLabel(result)}, ${workers} worker(s): ${writes ? `${result.sink?.rows ?? 'no'} sink rows for ${fmt(SETTINGS.drainCount)} actions, ` : ''}lost / duplicated ${result.stats.lost} / ${result.stats.duplicates} (target: ${writes ? 'one row per action' : 'none lost'}): ${mark(sinkWhole && result.stats.lost === 0)}`,
      );
    }
  }
  const late = lateness.find((result) => result.kind === 'delay' && !result.zeroOffset);
  const lateWhatIf = lateness.find((result) => result.zeroOffset);
  if (late) {
    const p99 = quantile(late.stats.lateness, 0.99);
    const floor = lateness.find((result) => result.kind === 'bare');
    const floorP99 = floor ? ` (the floor, a timer and one DELETE ... RETURNING: p99 ${fmt(quantile(floor.stats.lateness, 0.99))} ms, p50 ${fmt(quantile(floor.stats.lateness, 0.5))} ms)` : '';
    lines.push(`- lateness p99, idle worker: ${fmt(p99)} ms, p50 ${fmt(quantile(late.stats.lateness, 0.5))} ms${floorP99} (target <= 25 ms): ${mark(p99 <= 25)}`);
  }
  if (lateWhatIf) {
    // The estimate errs by at most the round trip of its best sample: as is and pinned should now be about equal.
    const pinnedP99 = quantile(lateWhatIf.stats.lateness, 0.99);
    const asIs = late ? `; as is = ${ratio(quantile(late.stats.lateness, 0.99) / pinnedP99)} of it` : '';
    lines.push(`  (what-if, clock offset held at 0: lateness p99 ${fmt(pinnedP99)} ms, p50 ${fmt(quantile(lateWhatIf.stats.lateness, 0.5))} ms${asIs})`);
  }
  const free = besideHeld.find((result) => !result.held);
  const beside = besideHeld.find((result) => result.held);
  if (free && beside) {
    // The normal p99 is this phase's own run without the held row (the same writes, paced the same way). A p99 of
    // 200 runs is their 2nd-latest, so "within" allows half again or 10 ms: the fault this looks for cost up to 1 s.
    const normal = quantile(free.stats.lateness, 0.99);
    const p99 = quantile(beside.stats.lateness, 0.99);
    const phase5 = late ? `; phase 5's p99 ${fmt(quantile(late.stats.lateness, 0.99))} ms` : '';
    lines.push(
      `- lateness of free actions beside a held row: p99 ${fmt(p99)} ms, p50 ${fmt(quantile(beside.stats.lateness, 0.5))} ms, max ${fmt(beside.stats.lateness[beside.stats.lateness.length - 1] ?? NaN)} ms, against p99 ${fmt(normal)} ms without it${phase5} (target: within the normal p99, at most 1.5x or +10 ms): ${mark(p99 <= Math.max(1.5 * normal, normal + 10))}`,
    );
  }
  for (const count of new Set(sizes.map((result) => result.count))) {
    const of = (kind: PgContender): number => sizes.find((result) => result.kind === kind && result.count === count)?.bytesPerAction ?? NaN;
    const smaller = Math.min(of('pgboss'), of('graphile'));
    lines.push(`- bytes per pending action at ${fmt(count)}: ${fmt(of('delay'))} B = ${ratio(of('delay') / smaller)} the smaller competitor's ${fmt(smaller)} B (target <= 1x): ${mark(of('delay') <= smaller)}`);
  }
  return lines;
}

function versionOf(name: string): string {
  for (const folder of require.resolve.paths(name) ?? []) {
    try {
      return (JSON.parse(readFileSync(join(folder, name, 'package.json'), 'utf8')) as { version: string }).version;
    } catch {
      // not in this folder
    }
  }
  return 'unknown';
}

// ---- main ----------------------------------------------------------------------

/** This run's headline comparisons, for bench/results/postgres.json (rows of the phases that ran). */
function postgresResults(rates: readonly RateRow[], drains: readonly DrainResult[], lateness: readonly LatenessResult[], sizes: readonly SizeResult[], runs: string): ResultsUpdate {
  const rows: Record<string, BarsRow[]> = { 'postgres-rates': [], 'postgres-lateness': [], 'postgres-transactional': [] };
  const peers: readonly PgContender[] = ['pgboss', 'graphile'];
  const faster = (values: ReadonlyMap<PgContender, number>, higher: boolean): Bar | null => {
    const known = peers.filter((kind) => Number.isFinite(values.get(kind)));
    if (known.length === 0) return null;
    const best = known.reduce((a, b) => ((values.get(a) ?? 0) >= (values.get(b) ?? 0) === higher ? a : b));
    return { name: `${contenderLabel(best)} (the faster peer)`, value: Math.round(values.get(best) ?? 0) };
  };
  const concurrent = new Map(rates.filter((row) => row.mode === 'concurrent' && row.kind !== 'bare').map((row) => [row.kind as PgContender, median(row.rates)]));
  const ours = concurrent.get('delay');
  const peer = faster(concurrent, true);
  if (ours !== undefined && peer) rows['postgres-rates'].push({ label: 'schedule, 100 in flight', bars: [{ name: 'nestjs-delay', value: Math.round(ours) }, peer] });
  for (const workers of [1, 2]) {
    // Phase 4's no-op drains (phase 11's, charted apart below, leave this chart's rows as they were).
    const byKind = new Map(
      drains.filter((drain) => PHASES.has(4) && drain.workers === workers && drain.handler === 'noop' && drain.concurrency === SETTINGS.concurrency).map((drain) => [drain.kind, drain.rate]),
    );
    const drainPeer = faster(byKind, true);
    const drained = byKind.get('delay');
    if (drained !== undefined && drainPeer) {
      rows['postgres-rates'].push({ label: `drain of 100,000 due, ${workers} worker${workers === 1 ? '' : 's'}`, bars: [{ name: 'nestjs-delay', value: Math.round(drained) }, drainPeer] });
    }
  }
  for (const workers of [1, 2]) {
    const delayWith = (handler: DelayHandlerKind): DrainResult | undefined =>
      drains.find((drain) => drain.kind === 'delay' && drain.handler === handler && drain.concurrency === SETTINGS.txConcurrency && drain.workers === workers);
    const tx = delayWith('transactional-insert');
    const plainInsert = delayWith('insert');
    const plain = delayWith('noop');
    const graphile = drains.find((drain) => drain.kind === 'graphile' && drain.concurrency === SETTINGS.txConcurrency && drain.workers === workers);
    if (tx === undefined || plainInsert === undefined || plain === undefined || graphile === undefined) continue;
    rows['postgres-transactional'].push({
      label: `drain of 100,000 due, ${workers} worker${workers === 1 ? '' : 's'}`,
      bars: [
        { name: 'nestjs-delay, transactional + 1 INSERT', value: Math.round(tx.rate) },
        { name: 'nestjs-delay, plain + the same INSERT (autocommit)', value: Math.round(plainInsert.rate) },
        { name: 'nestjs-delay, plain no-op', value: Math.round(plain.rate) },
        { name: 'graphile-worker, no-op', value: Math.round(graphile.rate) },
      ],
    });
  }
  const p99 = new Map(lateness.filter((result) => !result.zeroOffset && result.kind !== 'bare').map((result) => [result.kind as PgContender, quantile(result.stats.lateness, 0.99)]));
  const ourP99 = p99.get('delay');
  if (ourP99 !== undefined) {
    rows['postgres-lateness'].push({ label: 'lateness p99', bars: [{ name: 'nestjs-delay', value: ourP99 }, ...peers.filter((kind) => p99.has(kind)).map((kind) => ({ name: contenderLabel(kind), value: p99.get(kind) ?? 0 }))] });
  }
  const count = Math.min(...sizes.map((size) => size.count));
  const sized = new Map(sizes.filter((size) => size.count === count && size.kind !== 'bare').map((size) => [size.kind as PgContender, Math.round(size.bytesPerAction)]));
  const ourBytes = sized.get('delay');
  const memory =
    ourBytes === undefined
      ? undefined
      : { label: 'postgres, after VACUUM ANALYZE', ours: ourBytes, peers: Object.fromEntries(peers.filter((kind) => sized.has(kind)).map((kind) => [contenderLabel(kind), sized.get(kind) ?? 0])) };
  return { runs, rows, ...(memory ? { memory } : {}) };
}

async function main(): Promise<void> {
  // Refused before any server starts when the library is another checkout's.
  const library = libraryUnderTest();
  const startedAt = performance.now();
  const loadAtStart = fmt(loadavg()[0], 2);
  const npmScript = process.env.npm_lifecycle_event;
  const script = relative(process.cwd(), process.argv[1]);
  const overrides = ['BENCH_PG_QUICK', 'BENCH_PG_PHASES', 'BENCH_PG_TX_CONCURRENCY', 'BENCH_PG_LARGE', 'BENCH_PG_HELD_TX_MS', 'BENCH_PG_HELD_SYSTEMS', 'BENCH_PG_EXPLAIN', 'BENCH_PG_CPU_PROF', 'BENCH_RESULTS_DIR'].filter((name) => process.env[name] !== undefined).map((name) => `${name}=${process.env[name]} `);
  const command = `${overrides.join('')}${npmScript ? `npm run ${npmScript}  ->  ` : ''}node ${[...process.execArgv, script].join(' ')}`;

  // Two workers' handler connections in phase 11 (a pool each as large as its handlers in flight), their drivers' and the bench's own.
  const maxConnections = Math.max(200, 2 * (SETTINGS.txConcurrency + 10) + 80);
  const server = await BenchPostgresServer.start([`max_connections=${maxConnections}`, 'shared_preload_libraries=pg_stat_statements']);
  const bench = new Bench(server);
  try {
    await bench.start();
    const settings = await bench.admin.query<{ name: string; setting: string }>(
      "SELECT name, setting FROM pg_settings WHERE name IN ('fsync', 'synchronous_commit', 'full_page_writes', 'autovacuum', 'shared_buffers', 'wal_level', 'max_connections') ORDER BY name",
    );
    console.log('# nestjs-delay PostgreSQL driver benchmark\n');
    console.log(`- date: ${new Date().toISOString()}`);
    console.log(`- command: ${command}${QUICK ? '  (QUICK: smaller and shorter, not for comparison)' : ''}`);
    console.log(`- ${library}`);
    console.log(`- node ${process.version}; pg ${versionOf('pg')}, pg-boss ${versionOf('pg-boss')}, graphile-worker ${versionOf('graphile-worker')}`);
    console.log(`- ${BenchPostgresServer.version()}, spawned on a free port; ${settings.rows.map((row) => `${row.name}=${row.setting}`).join(', ')} (others at their defaults)`);
    console.log(`- cpus: ${availableParallelism()} available (${cpus()[0]?.model ?? 'unknown'}), memory ${fmt(totalmem() / 2 ** 30, 1)} GiB; load average (1 min) at start ${loadAtStart}`);
    console.log(`- every system: a pool of 10 connections; payload ${PAYLOAD_BYTES} B of JSON; keys like ${actionKey('sched', 0)}`);
    console.log(
      `- workers: ${SETTINGS.concurrency} handlers in flight per process, ${SETTINGS.claimBatch} rows per claim (nestjs-delay concurrency + claimBatch; pg-boss batchSize + burstWhenBatchFull; graphile-worker concurrency + localQueue.size, completeJobBatchDelay 0); polling at each one's default`,
    );
    console.log('');

    let rates: RateRow[] = [];
    const floors: FloorDrain[] = [];
    const drains: DrainResult[] = [];
    const lateness: LatenessResult[] = [];
    const sizes: SizeResult[] = [];
    const besideHeld: BesideHeldResult[] = [];

    if (PHASES.has(1) || PHASES.has(2)) {
      const modes: RateMode[] = [...(PHASES.has(1) ? (['sequential', 'concurrent', 'bulk'] as const) : []), ...(PHASES.has(2) ? (['replace', 'cancel'] as const) : [])];
      rates = await measureRates(bench, modes);
      console.log(`## 1-2. Schedule, replace by key, cancel by key (${SETTINGS.rounds} interleaved rounds of ${SETTINGS.roundMs} ms, tables emptied before each; replace and cancel act on ${fmt(SETTINGS.keyedCount)} keys scheduled before the round)\n`);
      console.log(rateTable(rates));
    }

    if (PHASES.has(3)) {
      for (const connections of SETTINGS.workerCounts) floors.push(await floorDrain(bench, connections));
      console.log(`\n## 3. The floors: bare DELETE ... RETURNING of ${fmt(SETTINGS.drainCount)} due rows, ${SETTINGS.claimBatch} per statement (FOR UPDATE SKIP LOCKED), autocommit; and bare lease + DELETE, the least a claim with a lease per row does (${SETTINGS.claimBatch} rows leased per statement, which also deletes the rows its previous claim leased); and bare move to a claim row, the least a claim with one lease per claim does (${SETTINGS.claimBatch} rows deleted and kept as arrays in one row of a claims table, the previous claim's row deleted in the same statement); and in place, claims in turn: the rows left where they are, their members recorded in one leased row per claim, the claims of a topic taking turns under an advisory lock\n`);
      console.log(
        markdownTable(
          ['connections', 'DELETE..RETURNING rows/s', 'lease + DELETE rows/s', 'x DELETE..RETURNING', 'move to a claim row rows/s', 'x DELETE..RETURNING', 'in place, claims in turn rows/s', 'x DELETE..RETURNING'],
          floors.map((floor) => [
            String(floor.connections),
            fmt(floor.rate),
            fmt(floor.leasedRate),
            ratio(floor.leasedRate / floor.rate),
            fmt(floor.movedRate),
            ratio(floor.movedRate / floor.rate),
            fmt(floor.inPlaceRate),
            ratio(floor.inPlaceRate / floor.rate),
          ]),
          [true, true, true, true, true, true, true, true],
        ),
      );
    }

    if (PHASES.has(4)) {
      for (const workers of SETTINGS.workerCounts) {
        for (const kind of CONTENDERS) drains.push(await runDrain(bench, kind, workers));
      }
      console.log(`\n## 4. Drain: ${fmt(SETTINGS.drainCount)} due actions (loaded by each system's bulk call, then VACUUM ANALYZE), consumed by 1 then 2 worker processes, no-op handlers\n`);
      console.log('actions/s = distinct actions run / (last handler end - first handler start).\n');
      console.log(drainTable(drains, floors));
      console.log('\nServer time by statement during each drain (pg_stat_statements, top 4):\n');
      console.log(statementsTable(drains));
      const ours = drains.filter((result) => result.sizesAfter !== undefined);
      if (ours.length > 0) {
        console.log('\nnestjs-delay schema right after each drain (every action fired and deleted; autovacuum at its defaults):\n');
        console.log(
          markdownTable(
            ['workers', 'total MiB', 'by table'],
            ours.map((result) => [
              `${result.workers}`,
              fmt((result.sizesAfter?.total ?? NaN) / MB, 2),
              (result.sizesAfter?.byTable ?? []).slice(0, 3).map((table) => `${table.name} heap ${fmt(table.heap / MB, 2)} + indexes ${fmt(table.indexes / MB, 2)} MiB`).join('; '),
            ]),
            [true, true, false],
          ),
        );
      }
    }

    if (PHASES.has(11)) {
      // Every drain of the phase with as many handlers in flight; phase 4's no-op drains stand for its own when it
      // ran with the same number.
      const concurrency = SETTINGS.txConcurrency;
      const txDrains: DrainResult[] = [];
      for (const workers of SETTINGS.workerCounts) {
        for (const kind of ['graphile', 'delay'] as const) {
          const known = drains.find((result) => result.kind === kind && result.handler === 'noop' && result.concurrency === concurrency && result.workers === workers);
          txDrains.push(known ?? (await runDrain(bench, kind, workers, SETTINGS.drainCount, 'drain', 'noop', concurrency)));
        }
        for (const handler of ['insert', 'transactional', 'transactional-insert'] as const) {
          txDrains.push(await runDrain(bench, 'delay', workers, SETTINGS.drainCount, 'drain', handler, concurrency));
        }
      }
      drains.push(...txDrains.filter((result) => !drains.includes(result)));
      console.log(
        `\n## 11. Transactional drains: ${fmt(SETTINGS.drainCount)} due actions, consumed by 1 then 2 worker processes, ${concurrency} handlers in flight per worker, with nestjs-delay's handler: a no-op; one INSERT into ${SINK_TABLE} through a pg pool of the worker's (${concurrency} connections, autocommit); \`transactional: true\` and nothing else (the run's transaction: the arming's lock and the completion); \`transactional: true\` and the same INSERT through context.transaction (the run's transaction on the driver's own connection, committed with the action's completion); beside graphile-worker's, in this run\n`,
      );
      console.log(transactionalDrainTable(txDrains));
      console.log("\nServer time by statement during each drain (pg_stat_statements, top 4; a commit's WAL flush is not in it):\n");
      console.log(statementsTable(txDrains));
    }

    if (PHASES.has(5)) {
      for (const kind of CONTENDERS) lateness.push(await runLateness(bench, kind));
      lateness.push(await runLateness(bench, 'delay', true));
      lateness.push(await floorLateness(bench));
      console.log(`\n## 5. Lateness: ${SETTINGS.latenessCount} actions due evenly over ${SETTINGS.latenessSpreadMs / 1000} s, scheduled one call each, one idle worker process\n`);
      console.log('lateness = handler start - due time (Date.now() in both processes).\n');
      console.log(latenessTable(lateness));
      const withStatements = lateness.filter((result) => result.statements !== undefined);
      if (withStatements.length > 0) {
        console.log("\nnestjs-delay's statements during the lateness runs (pg_stat_statements; execution only, a commit's WAL flush is not in it):\n");
        const rows = withStatements.flatMap((result) =>
          (result.statements ?? []).map((statement) => [
            result.zeroOffset ? 'offset held at 0' : 'as is',
            fmt(statement.calls),
            fmt(statement.meanMs, 3),
            fmt(statement.maxMs, 1),
            `\`${statement.query.replace(/\|/g, '\\|')}\``,
          ]),
        );
        console.log(markdownTable(['run', 'calls', 'mean ms', 'max ms', 'statement (cut)'], rows, [false, true, true, true, false]));
      }
    }

    if (PHASES.has(6)) {
      for (const count of SETTINGS.sizeCounts) {
        for (const kind of [...CONTENDERS, 'bare'] as const) sizes.push(await measureSize(bench, kind, count));
      }
      console.log('\n## 6. Bytes per pending action: pg_total_relation_size (heap + indexes + TOAST) over each system\'s tables, after VACUUM ANALYZE, minus the empty tables\n');
      console.log(sizeTable(sizes));
    }

    if (PHASES.has(7)) {
      const bloat = await runBloat(bench, SETTINGS.bloatCount);
      console.log(`\n## 7. Bloat: ${fmt(bloat.count)} nestjs-delay actions scheduled (due at once, batches of ${SETTINGS.loadBatch}) while 2 workers fire them, autovacuum at its defaults\n`);
      console.log(`- took ${fmt(bloat.seconds, 1)} s (${fmt(bloat.count / bloat.seconds)} actions/s end to end); lost / duplicated ${bloat.lost} / ${bloat.duplicates}`);
      console.log(`- schema size empty ${fmt(bloat.before / MB, 2)} MiB; at the end ${fmt(bloat.atEnd.total / MB, 2)} MiB; ${bloat.laterSeconds} s later ${fmt(bloat.later.total / MB, 2)} MiB`);
      console.log(`- at the end: ${bloat.atEnd.byTable.slice(0, 3).map((table) => `${table.name} heap ${fmt(table.heap / MB, 2)} + indexes ${fmt(table.indexes / MB, 2)} MiB`).join('; ')}`);
      console.log(`- ${bloat.autovacuums}`);
    }

    if (PHASES.has(8)) {
      const held = await runHeld(bench, HELD_TX_MS > 0 ? HELD_TX_MS : 120_000);
      console.log(`\n## 8. Drain of ${fmt(SETTINGS.drainCount)} with 2 workers, again and again, while a REPEATABLE READ transaction holds its snapshot open for ${fmt(held.heldMs / 1000)} s (vacuum cannot remove dead rows)\n`);
      console.log(
        markdownTable(
          ['#', 'snapshot', 'system', 'actions/s', 'lost / duplicated', 'schema MiB after'],
          held.rounds.map((round, n) => [
            String(n + 1),
            round.released ? 'let go' : 'held',
            contenderLabel(round.kind),
            fmt(round.rate),
            `${round.lost} / ${round.duplicates}`,
            fmt(round.sizeAfter / MB, 1),
          ]),
          [true, false, false, true, true, true],
        ),
      );
    }

    if (PHASES.has(9)) {
      console.log(`\n## 9. nestjs-delay's claim, explained (EXPLAIN (ANALYZE, BUFFERS) along a drain of ${fmt(SETTINGS.drainCount)} due actions)\n`);
      console.log('```');
      console.log((await explainClaim(bench)).join('\n'));
      console.log('```');
    }

    if (PHASES.has(10)) {
      besideHeld.push(await runBesideHeld(bench, false));
      besideHeld.push(await runBesideHeld(bench, true));
      console.log(
        `\n## 10. Lateness beside a held row: ${SETTINGS.besideHeldCount} free actions due evenly over ${SETTINGS.besideHeldSpreadMs / 1000} s, each scheduled ${SETTINGS.besideHeldScheduleMs} ms before it is due, one idle nestjs-delay worker; then the same while an open transaction holds one due row of the topic (UPDATE ... SET payload = payload, left open)\n`,
      );
      console.log(besideHeldTable(besideHeld));
      console.log('\nStatements during each run (pg_stat_statements, top 3):\n');
      const rows = besideHeld.flatMap((result) =>
        result.statements.map((statement) => [
          result.held ? 'held row' : 'nothing held',
          fmt(statement.calls),
          fmt(statement.meanMs, 3),
          fmt(statement.maxMs, 1),
          `\`${statement.query.replace(/\|/g, '\\|')}\``,
        ]),
      );
      console.log(markdownTable(['run', 'calls', 'mean ms', 'max ms', 'statement (cut)'], rows, [false, true, true, true, false]));
    }

    console.log('\n## Targets\n');
    console.log(verdicts(rates, drains, floors, lateness, sizes, besideHeld).join('\n'));
    console.log(`- machine load average (1 min) at start / end: ${loadAtStart} / ${fmt(loadavg()[0], 2)}`);
    recordResults('postgres', !QUICK, () => postgresResults(rates, drains, lateness, sizes, `one run (${command}), load average ${loadAtStart} at the start`));
    console.log(`\ntotal time ${fmt((performance.now() - startedAt) / 1000, 1)} s`);
  } catch (error) {
    console.error(error);
    process.exitCode = 1;
  } finally {
    await bench.close();
    await server.dispose();
  }
}

main().then(
  () => process.exit(process.exitCode ?? 0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
