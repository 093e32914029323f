import { Attributes, context, metrics, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { AggregationTemporality, DataPoint, Histogram, InMemoryMetricExporter, MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, InMemorySpanExporter, ReadableSpan, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';

/**
 * The OpenTelemetry SDK as an app would register it, with in-memory
 * exporters the test reads. Register before the app is created (the
 * telemetry module looks for an SDK at startup); dispose after the test so
 * the next one starts with no SDK.
 */
export class TestOpenTelemetry {
  private readonly metricExporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  private readonly reader = new PeriodicExportingMetricReader({ exporter: this.metricExporter, exportIntervalMillis: 3_600_000 });
  private readonly meterProvider = new MeterProvider({ readers: [this.reader] });
  private readonly spanExporter = new InMemorySpanExporter();
  private readonly tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(this.spanExporter)] });
  private readonly contextManager = new AsyncLocalStorageContextManager();

  static register(): TestOpenTelemetry {
    const sdk = new TestOpenTelemetry();
    context.setGlobalContextManager(sdk.contextManager.enable());
    metrics.setGlobalMeterProvider(sdk.meterProvider);
    trace.setGlobalTracerProvider(sdk.tracerProvider);
    return sdk;
  }

  async dispose(): Promise<void> {
    await this.meterProvider.shutdown();
    await this.tracerProvider.shutdown();
    metrics.disable();
    trace.disable();
    context.disable();
  }

  spans(): ReadableSpan[] {
    return this.spanExporter.getFinishedSpans();
  }

  /** Collects now and returns every data point of the named metric. */
  async points(name: string): Promise<Array<DataPoint<number | Histogram>>> {
    this.metricExporter.reset();
    await this.reader.forceFlush();
    const exported = this.metricExporter.getMetrics().at(-1);
    const metric = exported?.scopeMetrics.flatMap((scope) => scope.metrics).find((candidate) => candidate.descriptor.name === name);
    return (metric?.dataPoints ?? []) as Array<DataPoint<number | Histogram>>;
  }

  /** The value of a counter or gauge for the given attributes, 0 when it has none. */
  async value(name: string, attributes: Attributes): Promise<number> {
    const point = (await this.points(name)).find((candidate) => matches(candidate.attributes, attributes));
    return typeof point?.value === 'number' ? point.value : 0;
  }

  /** How many values a histogram recorded for the given attributes. */
  async count(name: string, attributes: Attributes): Promise<number> {
    const points = (await this.points(name)).filter((candidate) => matches(candidate.attributes, attributes));
    return points.reduce((sum, point) => sum + (typeof point.value === 'number' ? 0 : point.value.count), 0);
  }
}

function matches(actual: Attributes, expected: Attributes): boolean {
  return Object.entries(expected).every(([name, value]) => actual[name] === value);
}
