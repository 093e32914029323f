// What the telemetry module costs DelayService on the wheel driver:
// schedule (ns per awaited call) and the burst rate (handler runs per
// second for N actions due at once), in three set-ups, each in a process of
// its own so that no global OpenTelemetry state leaks between them:
//
//   base      DelayModule alone
//   no-sdk    + DelayTelemetryModule, no OpenTelemetry SDK registered
//   sdk       + DelayTelemetryModule, the metrics and trace SDKs registered
//             (periodic metric reader, batch span processor, as in
//             production) with exporters that drop everything, and every action
//             scheduled inside an active span (so each carries a trace and
//             each run gets a span of its own)
//   sdk-metrics   the same with traces off (metrics SDK only)
//   sdk-traces    the same with metrics off (trace SDK and context manager only)
//
// The set-ups run in turn (base, no-sdk, sdk, base, ...) for ROUNDS rounds;
// each figure is the median over rounds of the median within a process.
// Both wall time and the process's CPU time are given: on a shared machine
// the CPU time is the steadier figure (other processes do not add to it).
import 'reflect-metadata';
import { Injectable, Module } from '@nestjs/common';
import type { DynamicModule, INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { context, metrics, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { MeterProvider, PeriodicExportingMetricReader, PushMetricExporter, ResourceMetrics } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, BatchSpanProcessor, ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-base';
import { execFileSync } from 'node:child_process';
import { loadavg } from 'node:os';
import { DelayModule, DelayService, OnDelayExpired } from 'nestjs-delay';
import { DelayTelemetryModule } from 'nestjs-delay/telemetry';
import { fmt, libraryUnderTest, median, settle } from './support';

type Setup = 'base' | 'no-sdk' | 'sdk' | 'sdk-metrics' | 'sdk-traces';
const SETUPS: readonly Setup[] = ['base', 'no-sdk', 'sdk', 'sdk-metrics', 'sdk-traces'];
const TOPIC = 'bench.telemetry';
const COUNT = Number(process.env.TELEMETRY_BENCH_COUNT ?? 100_000);
const ROUNDS = Number(process.env.TELEMETRY_BENCH_ROUNDS ?? 3);
/** Samples per process; the median is kept. */
const SAMPLES = 5;

interface Sample {
  readonly scheduleNs: number;
  readonly scheduleCpuNs: number;
  readonly burstPerSecond: number;
  readonly burstPerCpuSecond: number;
}

/** This process's CPU time (user + system) in ns. */
function cpuNs(): number {
  const { user, system } = process.cpuUsage();
  return (user + system) * 1_000;
}

/** Counts handler runs and resolves when the expected number has run. */
@Injectable()
class Sink {
  private expected = 0;
  private ran = 0;
  private done: () => void = () => undefined;

  expect(count: number): Promise<void> {
    this.expected = count;
    this.ran = 0;
    return new Promise((resolve) => (this.done = resolve));
  }

  @OnDelayExpired(TOPIC, { concurrency: 1000, timeout: false })
  run(): void {
    if (++this.ran === this.expected) this.done();
  }
}

/** Exporters that accept everything and keep nothing: the SDK's own cost, no I/O. */
class DroppingMetricExporter implements PushMetricExporter {
  export(_metrics: ResourceMetrics, done: (result: { code: 0 }) => void): void {
    done({ code: 0 });
  }
  async forceFlush(): Promise<void> {}
  async shutdown(): Promise<void> {}
}

class DroppingSpanExporter implements SpanExporter {
  export(_spans: ReadableSpan[], done: (result: { code: 0 }) => void): void {
    done({ code: 0 });
  }
  async shutdown(): Promise<void> {}
}

function registerSdk(setup: Setup): void {
  if (setup === 'sdk' || setup === 'sdk-traces') {
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(new DroppingSpanExporter())] }));
  }
  if (setup === 'sdk' || setup === 'sdk-metrics') {
    metrics.setGlobalMeterProvider(new MeterProvider({ readers: [new PeriodicExportingMetricReader({ exporter: new DroppingMetricExporter(), exportIntervalMillis: 60_000 })] }));
  }
}

async function boot(setup: Setup): Promise<INestApplicationContext> {
  const imports: DynamicModule[] = [DelayModule.forRoot({ driver: { type: 'wheel', tickMs: 1 } })];
  if (setup !== 'base') imports.push(DelayTelemetryModule.forRoot({ metrics: setup !== 'sdk-traces', traces: setup !== 'sdk-metrics' }));
  @Module({ imports, providers: [Sink] })
  class BenchModule {}
  return NestFactory.createApplicationContext(BenchModule, { logger: false });
}

/** In the sdk set-up the work runs inside an active span, as a traced request would. */
function inSpan<T>(setup: Setup, work: () => Promise<T>): Promise<T> {
  if (setup !== 'sdk' && setup !== 'sdk-traces') return work();
  return trace.getTracer('bench').startActiveSpan('request', async (span) => {
    try {
      return await work();
    } finally {
      span.end();
    }
  });
}

async function sample(setup: Setup, delay: DelayService, sink: Sink, keys: readonly string[]): Promise<Sample> {
  // Schedule: N awaited calls, due in an hour.
  await settle();
  const started = process.hrtime.bigint();
  const startedCpu = cpuNs();
  await inSpan(setup, async () => {
    for (const key of keys) await delay.schedule(TOPIC, key, { delay: '1h' });
  });
  const scheduleCpuNs = (cpuNs() - startedCpu) / keys.length;
  const scheduleNs = Number(process.hrtime.bigint() - started) / keys.length;
  // Burst: the same N made due now while the topic is paused, then resumed; time until every handler ran.
  await delay.pause(TOPIC);
  for (const key of keys) await delay.runNow(TOPIC, key);
  await settle();
  const ran = sink.expect(keys.length);
  const burstStart = process.hrtime.bigint();
  const burstStartCpu = cpuNs();
  await delay.resume(TOPIC);
  await ran;
  const burstPerCpuSecond = keys.length / ((cpuNs() - burstStartCpu) / 1e9);
  const burstPerSecond = keys.length / (Number(process.hrtime.bigint() - burstStart) / 1e9);
  return { scheduleNs, scheduleCpuNs, burstPerSecond, burstPerCpuSecond };
}

async function child(setup: Setup): Promise<void> {
  if (setup.startsWith('sdk')) registerSdk(setup);
  const app = await boot(setup);
  const delay = app.get(DelayService);
  const sink = app.get(Sink);
  const keys = Array.from({ length: COUNT }, (_, i) => `order:${i}`);
  await sample(setup, delay, sink, keys); // warm-up
  const samples: Sample[] = [];
  for (let i = 0; i < SAMPLES; i++) samples.push(await sample(setup, delay, sink, keys));
  await app.close();
  const result = medianSample(samples);
  process.stdout.write(JSON.stringify(result));
}

function medianSample(samples: readonly Sample[]): Sample {
  return {
    scheduleNs: median(samples.map((s) => s.scheduleNs)),
    scheduleCpuNs: median(samples.map((s) => s.scheduleCpuNs)),
    burstPerSecond: median(samples.map((s) => s.burstPerSecond)),
    burstPerCpuSecond: median(samples.map((s) => s.burstPerCpuSecond)),
  };
}

function parent(): void {
  const results = new Map<Setup, Sample[]>(SETUPS.map((setup) => [setup, []]));
  process.stderr.write(`telemetry bench: ${libraryUnderTest()}; N=${COUNT}, ${ROUNDS} round(s), load average ${loadavg().map((load) => fmt(load, 2)).join(' / ')}\n`);
  for (let round = 0; round < ROUNDS; round++) {
    for (const setup of SETUPS) {
      const output = execFileSync(process.execPath, ['--expose-gc', __filename, setup], { encoding: 'utf8', maxBuffer: 1 << 20 });
      const result = JSON.parse(output) as Sample;
      results.get(setup)?.push(result);
      process.stderr.write(
        `  round ${round + 1} ${setup}: schedule ${fmt(result.scheduleNs)} ns (CPU ${fmt(result.scheduleCpuNs)} ns), burst ${fmt(result.burstPerSecond)} runs/s (per CPU second ${fmt(result.burstPerCpuSecond)})\n`,
      );
    }
  }
  const summary = new Map(SETUPS.map((setup) => [setup, medianSample(results.get(setup) ?? [])] as const));
  const base = summary.get('base') as Sample;
  const cost = (value: number, baseline: number, higherIsWorse: boolean): string => {
    const percent = higherIsWorse ? (value / baseline - 1) * 100 : (1 - value / baseline) * 100;
    return `${percent >= 0 ? '+' : '-'}${fmt(Math.abs(percent), 1)}%`;
  };
  const label: Record<Setup, string> = {
    base: 'DelayModule alone',
    'no-sdk': 'with DelayTelemetryModule, no SDK',
    sdk: 'with the SDK, exporters that drop',
    'sdk-metrics': '  metrics only',
    'sdk-traces': '  traces only',
  };
  const lines = [
    `| set-up | schedule, wall (ns/call) | schedule, CPU (ns/call) | cost (CPU) | burst, wall (runs/s) | burst (runs per CPU s) | cost (CPU) |`,
    `| --- | ---: | ---: | ---: | ---: | ---: | ---: |`,
    ...SETUPS.map((setup) => {
      const value = summary.get(setup) as Sample;
      const scheduleCost = setup === 'base' ? '' : cost(value.scheduleCpuNs, base.scheduleCpuNs, true);
      const burstCost = setup === 'base' ? '' : cost(value.burstPerCpuSecond, base.burstPerCpuSecond, false);
      return `| ${label[setup]} | ${fmt(value.scheduleNs)} | ${fmt(value.scheduleCpuNs)} | ${scheduleCost} | ${fmt(value.burstPerSecond)} | ${fmt(value.burstPerCpuSecond)} | ${burstCost} |`;
    }),
    '',
    'cost: extra CPU per schedule, and fewer handler runs per CPU second, than DelayModule alone.',
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}

const setup = process.argv[2] as Setup | undefined;
if (setup === undefined) parent();
else
  child(setup).catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
