import { Injectable, INestApplication, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { SpanContext, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { DelayContext, DelayModule, DelayModuleOptions, DelayService, OnDelayExpired } from 'nestjs-delay';
import { DelayTelemetryModule } from 'nestjs-delay/telemetry';
import { TestRedisServer } from '../support/redis-server';
import { TestOpenTelemetry } from './support/otel-sdk';

const TOPIC = 'order.unpaid';

/** Records what each run saw: its context's trace and the span active while it ran. */
@Injectable()
class TracedHandler {
  readonly runs: Array<{ key: string; trace: string | undefined; active: SpanContext | undefined }> = [];

  @OnDelayExpired(TOPIC, { attempts: 1 })
  cancelUnpaid({ key, trace: carried }: DelayContext): void {
    this.runs.push({ key, trace: carried, active: trace.getActiveSpan()?.spanContext() });
    if (key === 'broken') throw new Error('payment service said no');
  }
}

async function eventually(what: string, check: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe.each<['wheel' | 'redis']>([['wheel'], ['redis']])('traces on %s', (driver) => {
  let redis: TestRedisServer | undefined;
  let sdk: TestOpenTelemetry;
  let app: INestApplication;
  let delay: DelayService;
  let handler: TracedHandler;

  beforeAll(async () => {
    if (driver === 'redis') redis = await TestRedisServer.start();
  });

  afterAll(async () => {
    await redis?.dispose();
  });

  beforeEach(async () => {
    sdk = TestOpenTelemetry.register();
    const options: DelayModuleOptions =
      driver === 'redis' ? { driver: { type: 'redis', url: (redis as TestRedisServer).url, prefix: `t${Date.now()}` } } : { driver: { type: 'wheel', tickMs: 5 } };
    @Module({ imports: [DelayModule.forRoot(options), DelayTelemetryModule.forRoot()], providers: [TracedHandler] })
    class TracesTestModule {}
    const moduleRef = await Test.createTestingModule({ imports: [TracesTestModule] }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    delay = app.get(DelayService);
    handler = app.get(TracedHandler);
  });

  afterEach(async () => {
    await app.close();
    await sdk.dispose();
  });

  /** Schedules inside a span, as an instrumented HTTP request would; returns that span's context. */
  async function scheduleInRequest(key: string): Promise<SpanContext> {
    return trace.getTracer('test').startActiveSpan('POST /orders', async (span) => {
      await delay.schedule(TOPIC, key, { delay: '50ms' });
      span.end();
      return span.spanContext();
    });
  }

  it("runs the handler in a span that is a child of the scheduling request's span", async () => {
    const request = await scheduleInRequest('order-1');
    await eventually('the handler ran', () => handler.runs.length === 1);
    await eventually('its span ended', () => sdk.spans().some((span) => span.name === `delay ${TOPIC}`));

    const run = sdk.spans().find((span) => span.name === `delay ${TOPIC}`);
    expect(run?.spanContext().traceId).toBe(request.traceId);
    expect(run?.parentSpanContext?.spanId).toBe(request.spanId);
    expect(run?.kind).toBe(SpanKind.CONSUMER);
    expect(run?.status.code).toBe(SpanStatusCode.OK);
    expect(run?.attributes).toMatchObject({ 'delay.topic': TOPIC, 'delay.key': 'order-1', 'delay.attempt': 1 });
    // The handler got the traceparent, and ran with the run's span active (its own spans nest under it).
    expect(handler.runs[0]?.trace).toBe(`00-${request.traceId}-${request.spanId}-01`);
    expect(handler.runs[0]?.active?.spanId).toBe(run?.spanContext().spanId);
  });

  it('marks a failed run as an error, with the exception', async () => {
    const request = await scheduleInRequest('broken');
    await eventually('its span ended', () => sdk.spans().some((span) => span.name === `delay ${TOPIC}`));
    const run = sdk.spans().find((span) => span.name === `delay ${TOPIC}`);
    expect(run?.spanContext().traceId).toBe(request.traceId);
    expect(run?.status).toEqual({ code: SpanStatusCode.ERROR, message: 'payment service said no' });
    expect(run?.events.map((event) => event.name)).toContain('exception');
  });

  it('starts a trace of its own for an action scheduled outside any span', async () => {
    await delay.schedule(TOPIC, 'order-2', { delay: '50ms' });
    await eventually('its span ended', () => sdk.spans().some((span) => span.name === `delay ${TOPIC}`));
    const run = sdk.spans().find((span) => span.name === `delay ${TOPIC}`);
    expect(run?.parentSpanContext).toBeUndefined();
    expect(handler.runs[0]?.trace).toBeUndefined();
  });
});

describe('traces without an SDK', () => {
  it('carries nothing and wraps nothing: the handler runs as it would without the module', async () => {
    @Module({ imports: [DelayModule.forRoot({ driver: { type: 'wheel', tickMs: 5 } }), DelayTelemetryModule.forRoot()], providers: [TracedHandler] })
    class NoSdkModule {}
    const moduleRef = await Test.createTestingModule({ imports: [NoSdkModule] }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    try {
      const handler = app.get(TracedHandler);
      await trace.getTracer('test').startActiveSpan('POST /orders', async (span) => {
        await app.get(DelayService).schedule(TOPIC, 'order-3', { delay: '10ms' });
        span.end();
      });
      await eventually('the handler ran', () => handler.runs.length === 1);
      expect(handler.runs[0]).toEqual({ key: 'order-3', trace: undefined, active: undefined });
    } finally {
      await app.close();
    }
  });
});

/** Never settles by itself: only its timeout ends the run. */
@Injectable()
class HungHandler {
  @OnDelayExpired('report.build', { attempts: 1, timeout: 50 })
  build({ signal }: DelayContext): Promise<void> {
    return new Promise((resolve) => signal.addEventListener('abort', () => setTimeout(resolve, 10_000).unref()));
  }
}

describe('a handler span when the run times out', () => {
  it('ends at the timeout with an error status, though the handler has not settled', async () => {
    const sdk = TestOpenTelemetry.register();
    @Module({ imports: [DelayModule.forRoot({ driver: { type: 'wheel', tickMs: 5 } }), DelayTelemetryModule.forRoot()], providers: [HungHandler] })
    class TimeoutModule {}
    const moduleRef = await Test.createTestingModule({ imports: [TimeoutModule] }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    try {
      await app.get(DelayService).schedule('report.build', 'r1', { delay: 0 });
      await eventually('the span ended', () => sdk.spans().some((span) => span.name === 'delay report.build'));
      const run = sdk.spans().find((span) => span.name === 'delay report.build');
      expect(run?.status.code).toBe(SpanStatusCode.ERROR);
      expect(run?.status.message).toMatch(/timed out after 50 ms/);
    } finally {
      await app.close();
      await sdk.dispose();
    }
  });
});
