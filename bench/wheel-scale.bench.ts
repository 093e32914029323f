// The wheel at scale and the dispatch path: bytes per pending action at
// sizes that are not powers of two, and no-op handlers run by the bare
// WheelDriver (a `handle` consumer, a `consume` consumer, and the floor of
// any dispatcher) against the same through DelayService.
//
//   npm run bench:wheel-scale
//   BENCH_SIZES=10000,1000000,1100000,5000000,10000000 npm run bench:wheel-scale   (the default)
//   BENCH_DISPATCH=200000 npm run bench:wheel-scale   (actions per dispatch round; 0 skips it)
//   BENCH_PEAK=50000000 node --expose-gc --max-old-space-size=20000 dist/bench/wheel-scale.bench.js
//       (one size only, with peak RSS: for the largest runs; nothing else)
import 'reflect-metadata';
import { Injectable, Logger, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { availableParallelism, cpus, totalmem } from 'node:os';
import { relative } from 'node:path';
import { performance } from 'node:perf_hooks';
import { DelayModule, DelayService, OnDelayExpired, WheelDriver } from 'nestjs-delay';
import type { DelayConsumer, DeliveryOutcome } from 'nestjs-delay';
import { collectGarbage, fmt, libraryUnderTest, loadAverage, markdownTable, median, randomDelays, readMemory, settle, sizeLabel, xorshift32 } from './support';

const TOPIC = 'bench.action';
const TICK_MS = 100;
const CONCURRENCY = 10;
const MAX_PAST_MS = 86_400_000;
const SEED = 20_240_601;
const DEFAULT_SIZES = [10_000, 1_000_000, 1_100_000, 5_000_000, 10_000_000];
const DISPATCH_ROUNDS = 5;

function log(message: string): void {
  process.stderr.write(`${message}\n`);
}

function numbersFromEnv(name: string, fallback: number[]): number[] {
  const text = process.env[name];
  if (text === undefined || text.trim() === '') return fallback;
  const values = text.split(',').map((part) => Number(part.trim()));
  if (values.some((value) => !Number.isInteger(value) || value < 0)) throw new Error(`${name} must be whole numbers, got "${text}"`);
  return values;
}

// ---- memory -------------------------------------------------------------

interface MemorySample {
  readonly count: number;
  readonly bytes: number;
  readonly heapBytes: number;
  readonly arrayBufferBytes: number;
  readonly scheduleCpuNs: number;
  readonly maxRssBytes: number;
}

/** Bytes per pending action in a bare WheelDriver: the keys exist before the baseline, so only the driver counts. */
async function measureMemory(count: number): Promise<MemorySample> {
  const random = xorshift32(SEED ^ count);
  const keys: string[] = new Array<string>();
  for (let i = 0; i < count; i++) keys.push(`order:${i}`);
  const delays = randomDelays(count, 1_000, 3_600_000, random);
  await settle();
  const driver = new WheelDriver({ tickMs: TICK_MS });
  const before = readMemory();
  const cpuBefore = process.cpuUsage();
  for (let i = 0; i < count; i++) {
    await driver.schedule({ topic: TOPIC, key: keys[i], due: { delayMs: delays[i] }, payload: undefined, ifExists: 'replace', maxPastMs: MAX_PAST_MS });
  }
  const cpu = process.cpuUsage(cpuBefore);
  const after = readMemory();
  const pending = await driver.count(TOPIC);
  if (pending !== count) throw new Error(`${pending} pending, expected ${count}`);
  const maxRssBytes = process.resourceUsage().maxRSS * 1024;
  await driver.close();
  const heapBytes = (after.heapUsed - before.heapUsed) / count;
  const arrayBufferBytes = (after.arrayBuffers - before.arrayBuffers) / count;
  keys.length = 0;
  return { count, bytes: heapBytes + arrayBufferBytes, heapBytes, arrayBufferBytes, scheduleCpuNs: ((cpu.user + cpu.system) * 1000) / count, maxRssBytes };
}

// ---- dispatch -----------------------------------------------------------

@Injectable()
class NoopHandler {
  fire: () => void = () => undefined;

  @OnDelayExpired(TOPIC)
  async onExpired(): Promise<void> {
    this.fire();
  }
}

@Module({ imports: [DelayModule.forRoot({ driver: { type: 'wheel', tickMs: TICK_MS } })], providers: [NoopHandler] })
class DispatchBenchModule {}

interface DispatchSample {
  readonly perSecond: number;
  readonly cpuPerSecond: number;
}

/**
 * Arms `count` actions due now without yielding, then times from there to
 * the last handler call: only dispatch is timed (scheduling is not).
 */
async function timeDispatch(count: number, arm: (key: string) => Promise<unknown>, onFire: (fire: () => void) => void): Promise<DispatchSample> {
  let fired = 0;
  let finish: () => void = () => undefined;
  const done = new Promise<void>((resolve) => {
    finish = resolve;
  });
  onFire(() => {
    if (++fired === count) finish();
  });
  let arming: Array<Promise<unknown>> = [];
  for (let i = 0; i < count; i++) arming.push(arm(`d:${i}`));
  await Promise.all(arming);
  // Still before the driver's first dispatch turn (a setImmediate): the
  // scheduling's garbage is collected now, so that only dispatch is timed.
  arming = [];
  collectGarbage(1);
  const cpuBefore = process.cpuUsage();
  const start = performance.now();
  await done;
  const wallMs = performance.now() - start;
  const cpu = process.cpuUsage(cpuBefore);
  return { perSecond: count / (wallMs / 1000), cpuPerSecond: count / ((cpu.user + cpu.system) / 1e6) };
}

type BareConsumer = 'handle' | 'consume' | 'floor';

/** What the floor consumer hands its handler: the fields of a DelayContext, two Dates included. */
interface FloorContext {
  readonly topic: string;
  readonly key: string;
  readonly payload: unknown;
  readonly dueAt: Date;
  readonly firedAt: Date;
  readonly attempt: number;
}

const COMPLETED: DeliveryOutcome = { kind: 'completed' };
/** A consumer reports after `consume` returns: a reaction on a settled promise is the cheapest way (queueMicrotask makes an AsyncResource each time). */
const RESOLVED = Promise.resolve();

/**
 * The bare WheelDriver with one of three consumers: `handle`, a promise per
 * delivery (the form every consumer has); `consume`, a callback (the form
 * drivers prefer, no promise of the consumer's own); `floor`, the least any
 * dispatcher must do for an @OnDelayExpired handler: make its context (two
 * Dates), call an async method, and report when its promise settles. No
 * timeout, no retry, no events: what DelayService costs above `floor` is
 * what those cost.
 */
async function dispatchBare(count: number, form: BareConsumer): Promise<DispatchSample> {
  const driver = new WheelDriver({ tickMs: TICK_MS });
  let fire: () => void = () => undefined;
  const handler = {
    async onExpired(context: FloorContext): Promise<void> {
      if (context.attempt > 0) fire();
    },
  };
  const topics = new Map([[TOPIC, CONCURRENCY]]);
  const handle = async (): Promise<DeliveryOutcome> => {
    fire();
    return COMPLETED;
  };
  const consumers: Record<BareConsumer, DelayConsumer> = {
    handle: { topics, handle },
    consume: {
      topics,
      handle,
      consume: (_, report) => {
        fire();
        void RESOLVED.then(() => report(COMPLETED));
      },
    },
    floor: {
      topics,
      handle,
      consume: (delivery, report) => {
        const context: FloorContext = {
          topic: delivery.topic,
          key: delivery.key,
          payload: delivery.payload === undefined ? undefined : (JSON.parse(delivery.payload) as unknown),
          dueAt: new Date(delivery.dueAt),
          firedAt: new Date(delivery.firedAt),
          attempt: delivery.attempt,
        };
        handler.onExpired(context).then(
          () => report(COMPLETED),
          () => report({ kind: 'retry', delayMs: 1_000, error: 'failed' }),
        );
      },
    },
  };
  await driver.start(consumers[form]);
  const now = Date.now();
  const sample = await timeDispatch(
    count,
    (key) => driver.schedule({ topic: TOPIC, key, due: { atMs: now }, payload: undefined, ifExists: 'replace', maxPastMs: MAX_PAST_MS }),
    (f) => (fire = f),
  );
  await driver.close();
  return sample;
}

async function dispatchService(count: number): Promise<DispatchSample> {
  const app = await NestFactory.createApplicationContext(DispatchBenchModule, { logger: false });
  const service = app.get(DelayService);
  const handler = app.get(NoopHandler);
  const now = Date.now();
  const sample = await timeDispatch(
    count,
    (key) => service.schedule(TOPIC, key, { at: now }),
    (f) => (handler.fire = f),
  );
  await app.close();
  return sample;
}

// ---- the run ------------------------------------------------------------

async function main(): Promise<void> {
  // Refused before any server starts when the library is another checkout's.
  const library = libraryUnderTest();
  // Closing a driver with actions pending warns, by design: here that is expected, and only noise.
  Logger.overrideLogger(false);
  const script = relative(process.cwd(), process.argv[1]);
  const npmScript = process.env.npm_lifecycle_event;
  const command = `${npmScript ? `npm run ${npmScript}  ->  ` : ''}node ${[...process.execArgv, script].join(' ')}`;
  console.log('# nestjs-delay wheel scale and dispatch benchmark\n');
  console.log(`- date: ${new Date().toISOString()}`);
  console.log(`- command: ${command}`);
  console.log(`- ${library}`);
  console.log(`- node ${process.version} (V8 ${process.versions.v8}), ${process.platform}/${process.arch}`);
  console.log(`- cpus: ${availableParallelism()} available (${cpus()[0]?.model ?? 'unknown'}), memory ${fmt(totalmem() / 2 ** 30, 1)} GiB`);
  console.log(`- load average at start: ${loadAverage()} (the machine is shared: other processes compete for the cores)`);
  console.log('');

  const peak = process.env.BENCH_PEAK;
  if (peak !== undefined && peak.trim() !== '') {
    const count = Number(peak);
    log(`N = ${sizeLabel(count)} (peak run)`);
    const sample = await measureMemory(count);
    console.log(`## ${sizeLabel(count)} pending actions in one WheelDriver\n`);
    console.log(`- bytes per pending action (heap + array buffers): ${fmt(sample.bytes, 1)}`);
    console.log(`- peak RSS of the process (keys included): ${fmt(sample.maxRssBytes / 2 ** 30, 2)} GiB`);
    console.log(`- schedule CPU time: ${fmt(sample.scheduleCpuNs)} ns/op`);
    console.log(`\nload average at the end: ${loadAverage()}`);
    return;
  }

  const sizes = numbersFromEnv('BENCH_SIZES', DEFAULT_SIZES);
  const memory: MemorySample[] = [];
  // A throwaway round first: the optimised code of schedule is then already on the heap, so the first
  // measured size (10k, where 30 B per action is 300 KB) counts the driver's data only, not its compilation.
  await measureMemory(10_000);
  for (const count of sizes) {
    log(`memory, N = ${sizeLabel(count)}`);
    memory.push(await measureMemory(count));
  }
  console.log('## Memory per pending action, bare WheelDriver (varied delays 1 s to 1 h)\n');
  console.log(
    markdownTable(
      ['N', 'B/action (heap+AB)', 'heapUsed B', 'arrayBuffers B', 'schedule CPU ns/op', 'target <= 80 B'],
      memory.map((s) => [sizeLabel(s.count), fmt(s.bytes, 1), fmt(s.heapBytes, 1), fmt(s.arrayBufferBytes, 1), fmt(s.scheduleCpuNs), s.bytes <= 80 ? 'MET' : 'NOT MET']),
      [false, true, true, true, true, false],
    ),
  );

  const [dispatchCount] = numbersFromEnv('BENCH_DISPATCH', [200_000]);
  if (dispatchCount > 0) {
    await settle();
    // One throwaway round of each warms the JIT up.
    const forms: BareConsumer[] = ['handle', 'consume', 'floor'];
    for (const form of forms) await dispatchBare(10_000, form);
    await dispatchService(10_000);
    const bare: Record<BareConsumer, DispatchSample[]> = { handle: [], consume: [], floor: [] };
    const service: DispatchSample[] = [];
    for (let round = 0; round < DISPATCH_ROUNDS; round++) {
      log(`dispatch round ${round + 1}`);
      for (const form of forms) {
        await settle();
        bare[form].push(await dispatchBare(dispatchCount, form));
      }
      await settle();
      service.push(await dispatchService(dispatchCount));
    }
    const wall = (samples: DispatchSample[]): number => median(samples.map((s) => s.perSecond));
    const cpu = (samples: DispatchSample[]): number => median(samples.map((s) => s.cpuPerSecond));
    console.log(`\n## Dispatch: ${sizeLabel(dispatchCount)} no-op handlers due at once, concurrency ${CONCURRENCY} (median of ${DISPATCH_ROUNDS})\n`);
    console.log(
      markdownTable(
        ['path', 'handlers/s (wall)', 'handlers per CPU-second'],
        [
          ['bare WheelDriver, a `handle` consumer that completes', fmt(wall(bare.handle)), fmt(cpu(bare.handle))],
          ['bare WheelDriver, a `consume` consumer that completes', fmt(wall(bare.consume)), fmt(cpu(bare.consume))],
          ['floor: bare WheelDriver, a context with two Dates, an async no-op method', fmt(wall(bare.floor)), fmt(cpu(bare.floor))],
          ['DelayService (@OnDelayExpired no-op)', fmt(wall(service)), fmt(cpu(service))],
        ],
        [false, true, true],
      ),
    );
    const fastestBare = Math.max(cpu(bare.handle), cpu(bare.consume));
    const ratioCpu = cpu(service) / fastestBare;
    console.log(
      [
        '',
        `- DelayService / bare driver (the faster of its two consumers): ${fmt(ratioCpu, 2)}x per CPU-second (target >= 0.8x): ${ratioCpu >= 0.8 ? 'MET' : 'NOT MET'}`,
        `- DelayService / bare driver with a \`handle\` consumer: ${fmt(cpu(service) / cpu(bare.handle), 2)}x per CPU-second, ${fmt(wall(service) / wall(bare.handle), 2)}x in wall time`,
        `- floor / bare driver (the faster consumer): ${fmt(cpu(bare.floor) / fastestBare, 2)}x per CPU-second: the most a dispatcher that gives an async handler its context can reach`,
        `- DelayService / floor: ${fmt(cpu(service) / cpu(bare.floor), 2)}x per CPU-second (what timeouts, attempts, events and the handler lookup cost)`,
      ].join('\n'),
    );
  }
  console.log(`\nload average at the end: ${loadAverage()}`);
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
