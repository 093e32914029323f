// The batching benchmark: DelayService.collect on both drivers, in one run
// (the Redis driver on a redis-server the bench starts itself on a free port).
//
//   npm run bench:collect
//   BENCH_COLLECT_QUICK=1 npm run bench:collect   (a smoke run, figures not comparable)
//
// Each round, per driver, in a Nest application context with one
// @OnDelayExpired handler (concurrency 100) that only counts:
//   1. append 20 items per key, one await at a time, round-robin over K keys;
//   2. append 60 items per key with 100 calls in flight, over K other keys;
//      items per key stay under maxItems and the window outlasts both
//      phases, so no batch closes while items are appended;
//   3. once every batch is due, the handlers (held until then) are let go:
//      batches per second from that moment to the last handler completion,
//      counting the batches that started after it (up to `concurrency` were
//      already handed over, and wait at the gate: they are left out).
// Every item is a unique number: delivered must equal appended, each once,
// in arrival order within its batch; count() must be 0 after.
import 'reflect-metadata';
import { Injectable, INestApplicationContext, Module } from '@nestjs/common';
import type { DynamicModule } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { availableParallelism, cpus, loadavg } from 'node:os';
import { relative } from 'node:path';
import { performance } from 'node:perf_hooks';
import { DelayContext, DelayDriverConfig, DelayModule, DelayService, OnDelayExpired } from 'nestjs-delay';
import { BenchRedisServer } from './redis/redis-server';
import { fmt, libraryUnderTest, markdownTable, median } from './support';

const QUICK = process.env.BENCH_COLLECT_QUICK === '1';

const TOPIC = 'bench.collect';
const SETTINGS = {
  /** Measured rounds per driver (the median is reported), after one warm-up round that is not. */
  rounds: QUICK ? 1 : 5,
  /** Keys per append phase. */
  keys: 1_000,
  maxItems: 100,
  /** Items per key, one awaiting each, then with `inFlight` calls in flight: under maxItems, so no batch fills while appending. */
  sequentialPerKey: QUICK ? 5 : 20,
  concurrentPerKey: QUICK ? 15 : 60,
  inFlight: 100,
  /** Handlers at once per process; the Redis driver claims up to this many per round trip (claimBatch). */
  concurrency: 100,
  /** Past the due time before the handlers are let go: a wheel tick and some. */
  dueMarginMs: 250,
};
/** Per driver: outlasts both append phases (checked), so every batch is still open when appending stops. */
const WINDOW_MS = { wheel: QUICK ? 1_000 : 2_000, redis: QUICK ? 3_000 : 8_000 };
/** Items of the concurrent phase are numbered from here. */
const PHASE_CAP = SETTINGS.keys * Math.max(SETTINGS.sequentialPerKey, SETTINGS.concurrentPerKey);

/** The one handler: held shut while appending, then counts batches and items, and checks each item arrives once. */
@Injectable()
class BatchCounter {
  started = 0;
  batches = 0;
  items = 0;
  duplicates = 0;
  outOfOrder = 0;
  /** Handlers started when the gate opened (held at it). */
  heldAtOpen = 0;
  openedAt = NaN;
  lastDoneAt = NaN;
  /** Item n (the item itself) delivered yet? */
  seen = new Uint8Array(2 * PHASE_CAP);
  private gate: Promise<void> = Promise.resolve();
  private release: () => void = () => undefined;

  reset(): void {
    this.started = this.batches = this.items = this.duplicates = this.outOfOrder = this.heldAtOpen = 0;
    this.openedAt = this.lastDoneAt = NaN;
    this.seen.fill(0);
    this.gate = new Promise((resolve) => (this.release = resolve));
  }

  open(): void {
    this.heldAtOpen = this.started;
    this.openedAt = performance.now();
    this.release();
  }

  @OnDelayExpired(TOPIC, { concurrency: SETTINGS.concurrency, attempts: 1 })
  async deliver(context: DelayContext<unknown, number>): Promise<void> {
    this.started++;
    await this.gate;
    const items = context.items ?? [];
    for (let i = 0; i < items.length; i++) {
      const n = items[i];
      if (this.seen[n] === 1) this.duplicates++;
      this.seen[n] = 1;
      // Within one key, a later call carries a larger number: arrival order is ascending.
      if (i > 0 && n <= items[i - 1]) this.outOfOrder++;
    }
    this.items += items.length;
    this.batches++;
    this.lastDoneAt = performance.now();
  }
}

@Module({ providers: [BatchCounter] })
class CollectBenchModule {
  static with(driver: DelayDriverConfig): DynamicModule {
    return { module: CollectBenchModule, imports: [DelayModule.forRoot({ driver, maxBatchItems: SETTINGS.maxItems })] };
  }
}

interface AppendResult {
  readonly items: number;
  readonly perSecond: number;
  /** Latest due time any call reported, epoch ms (the Redis driver's is on the server's clock). */
  readonly lastDueAt: number;
}

interface RoundResult {
  readonly sequential: AppendResult;
  readonly concurrent: AppendResult;
  readonly batches: number;
  /** Batches already handed to a handler (waiting at the gate) when it opened: left out of the rates. */
  readonly heldAtOpen: number;
  readonly batchesPerSecond: number;
  readonly itemsPerSecond: number;
  readonly lost: number;
  readonly duplicates: number;
}

/** Appends items first..first+count-1, round-robin over the keys, `lanes` calls at a time. */
async function append(service: DelayService, keyPrefix: string, first: number, count: number, lanes: number, windowMs: number): Promise<AppendResult> {
  const options = { window: windowMs, maxItems: SETTINGS.maxItems };
  let next = 0;
  let lastDueAt = 0;
  let flushed = 0;
  const started = performance.now();
  const lane = async (): Promise<void> => {
    while (next < count) {
      const n = next++;
      const status = await service.collect(TOPIC, `${keyPrefix}-${n % SETTINGS.keys}`, first + n, options);
      if (status.flushed) flushed++;
      lastDueAt = Math.max(lastDueAt, status.dueAt.getTime());
    }
  };
  await Promise.all(Array.from({ length: lanes }, lane));
  const seconds = (performance.now() - started) / 1000;
  if (flushed > 0) throw new Error(`${flushed} batch(es) filled up while appending: items per key must stay under maxItems`);
  return { items: count, perSecond: count / seconds, lastDueAt };
}

async function round(service: DelayService, counter: BatchCounter, name: string, windowMs: number): Promise<RoundResult> {
  counter.reset();
  const { keys, inFlight } = SETTINGS;
  const sequential = await append(service, `${name}-s`, 0, keys * SETTINGS.sequentialPerKey, 1, windowMs);
  const concurrent = await append(service, `${name}-c`, PHASE_CAP, keys * SETTINGS.concurrentPerKey, inFlight, windowMs);
  if (counter.started > 0) throw new Error(`${counter.started} batch(es) fired while appending: the window (${windowMs} ms) is too short for this machine`);
  const expectedBatches = 2 * keys;
  const appended = sequential.items + concurrent.items;

  // Every batch due (the driver starts up to `concurrency` handlers, held at the gate), then let them all go.
  const lastDueAt = Math.max(sequential.lastDueAt, concurrent.lastDueAt);
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, lastDueAt - Date.now()) + SETTINGS.dueMarginMs));
  counter.open();
  const deadline = Date.now() + 60_000;
  while (counter.items < appended && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 5));
  // Acks may still be on their way (Redis): wait for the topic to empty.
  let pending = await service.count(TOPIC);
  while (pending > 0 && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 10));
    pending = await service.count(TOPIC);
  }

  let unique = 0;
  for (let n = 0; n < sequential.items; n++) unique += counter.seen[n];
  for (let n = 0; n < concurrent.items; n++) unique += counter.seen[PHASE_CAP + n];
  const lost = appended - unique;
  const problems: string[] = [];
  if (lost !== 0) problems.push(`${lost} item(s) lost`);
  if (counter.duplicates !== 0) problems.push(`${counter.duplicates} item(s) delivered twice`);
  if (counter.items !== appended) problems.push(`${counter.items} items delivered, ${appended} appended`);
  if (counter.batches !== expectedBatches) problems.push(`${counter.batches} batches delivered, ${expectedBatches} expected`);
  if (counter.outOfOrder !== 0) problems.push(`${counter.outOfOrder} item(s) out of arrival order`);
  if (pending !== 0) problems.push(`${pending} action(s) still pending`);
  if (problems.length > 0) throw new Error(`${name}: ${problems.join('; ')}`);

  const seconds = (counter.lastDoneAt - counter.openedAt) / 1000;
  const afterOpen = counter.batches - counter.heldAtOpen;
  return {
    sequential,
    concurrent,
    batches: counter.batches,
    heldAtOpen: counter.heldAtOpen,
    batchesPerSecond: afterOpen / seconds,
    itemsPerSecond: (afterOpen * (counter.items / counter.batches)) / seconds,
    lost,
    duplicates: counter.duplicates,
  };
}

interface DriverSummary {
  readonly driver: string;
  readonly rounds: RoundResult[];
}

async function runDriver(label: string, driver: DelayDriverConfig, windowMs: number): Promise<DriverSummary> {
  const app: INestApplicationContext = await NestFactory.createApplicationContext(CollectBenchModule.with(driver), { logger: ['error', 'warn'] });
  try {
    const service = app.get(DelayService);
    const counter = app.get(BatchCounter);
    const rounds: RoundResult[] = [];
    for (let n = 0; n <= SETTINGS.rounds; n++) {
      const result = await round(service, counter, `r${n}`, windowMs);
      if (n > 0) rounds.push(result);
      console.log(
        `  ${label} ${n === 0 ? 'warm-up (not counted)' : `round ${n}`}: append ${fmt(result.sequential.perSecond)}/s sequential (${fmt(result.sequential.items)} items), ` +
          `${fmt(result.concurrent.perSecond)}/s with ${SETTINGS.inFlight} in flight (${fmt(result.concurrent.items)}); ` +
          `delivered ${fmt(result.batches)} batches (${result.heldAtOpen} held at the gate), ${fmt(result.batchesPerSecond)}/s (${fmt(result.itemsPerSecond)} items/s); lost ${result.lost}, dupes ${result.duplicates}`,
      );
    }
    return { driver: label, rounds };
  } finally {
    await app.close();
  }
}

function summaryTable(summaries: readonly DriverSummary[]): string {
  const rows = summaries.map(({ driver, rounds }) => {
    const pick = (value: (result: RoundResult) => number): number => median(rounds.map(value));
    const items = rounds.reduce((sum, result) => sum + result.sequential.items + result.concurrent.items, 0);
    const batches = rounds.reduce((sum, result) => sum + result.batches, 0);
    const lost = rounds.reduce((sum, result) => sum + result.lost, 0);
    const duplicates = rounds.reduce((sum, result) => sum + result.duplicates, 0);
    return [
      driver,
      fmt(pick((result) => result.sequential.perSecond)),
      fmt(pick((result) => result.concurrent.perSecond)),
      fmt(pick((result) => result.batchesPerSecond)),
      fmt(pick((result) => result.itemsPerSecond)),
      fmt(items / batches, 1),
      `${lost} / ${duplicates}`,
    ];
  });
  return markdownTable(
    ['driver', 'append, 1 awaiting (items/s)', `append, ${SETTINGS.inFlight} in flight (items/s)`, 'batches delivered/s', 'items delivered/s', 'items per batch', 'lost / dupes'],
    rows,
    [false, true, true, true, true, true, true],
  );
}

async function main(): Promise<void> {
  // Refused before any server starts when the library is another checkout's.
  const library = libraryUnderTest();
  const startedAt = performance.now();
  const npmScript = process.env.npm_lifecycle_event;
  const script = relative(process.cwd(), process.argv[1]);
  const command = `${QUICK ? 'BENCH_COLLECT_QUICK=1 ' : ''}${npmScript ? `npm run ${npmScript}  ->  ` : ''}node ${[...process.execArgv, script].join(' ')}`;
  console.log('# nestjs-delay batching (collect) benchmark\n');
  console.log(`- date: ${new Date().toISOString()}`);
  console.log(`- command: ${command}${QUICK ? '  (QUICK: shorter, not for comparison)' : ''}`);
  console.log(`- ${library}`);
  console.log(`- node ${process.version}, ${process.platform}/${process.arch}; ${BenchRedisServer.version()}`);
  console.log(`- cpus: ${availableParallelism()} available (${cpus()[0]?.model ?? 'unknown'}); load average (1 min) ${fmt(loadavg()[0], 2)}`);
  console.log(
    `- per round and driver: ${SETTINGS.sequentialPerKey} items per key one awaiting each over ${fmt(SETTINGS.keys)} keys, then ${SETTINGS.concurrentPerKey} per key with ${SETTINGS.inFlight} in flight over ${fmt(SETTINGS.keys)} other keys ` +
      `(maxItems ${SETTINGS.maxItems}; window ${WINDOW_MS.wheel} ms wheel, ${WINDOW_MS.redis} ms redis); then all ${fmt(2 * SETTINGS.keys)} batches delivered, handler concurrency ${SETTINGS.concurrency} ` +
      `(redis claimBatch ${SETTINGS.concurrency}); a warm-up round, then ${SETTINGS.rounds} round(s), median; items are JSON numbers`,
  );
  console.log('');

  const summaries: DriverSummary[] = [];
  summaries.push(await runDriver('wheel', { type: 'wheel' }, WINDOW_MS.wheel));
  const server = await BenchRedisServer.start();
  try {
    summaries.push(await runDriver('redis', { type: 'redis', url: server.url, prefix: 'bench-collect', claimBatch: SETTINGS.concurrency }, WINDOW_MS.redis));
  } finally {
    await server.dispose();
  }

  console.log('\n## Batching (collect)\n');
  console.log(summaryTable(summaries));
  console.log(`\ntotal time ${fmt((performance.now() - startedAt) / 1000, 1)} s`);
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
