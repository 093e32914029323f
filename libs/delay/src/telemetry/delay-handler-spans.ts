import { Inject, Injectable, OnModuleInit } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { ROOT_CONTEXT, Span, SpanKind, SpanStatusCode, trace, Tracer } from '@opentelemetry/api';
import { DelayHandlerRegistry, RegisteredHandler } from '../delay-handler.registry';
import { DelayContext } from '../interfaces/delay-context.interface';
import { describeError } from '../utils/describe-error';
import { DELAY_TELEMETRY_OPTIONS, TOPIC_ATTRIBUTE } from './delay-telemetry.constants';
import { ResolvedDelayTelemetryOptions } from './delay-telemetry-options.interface';
import { hasTracerProvider } from './sdk-presence';
import { parseTraceparent } from './traceparent';

/**
 * A span per handler run, a child of the span that scheduled the action
 * (its traceparent travels with the action), active while the handler runs
 * so the handler's own spans (HTTP calls, queries) nest under it.
 *
 * The handler registry belongs to DelayModule and offers no hook around a
 * run, so the registry this app uses is asked for its handlers through a
 * wrapper: each handler found is handed out with its run inside a span.
 * Without a TracerProvider nothing is wrapped.
 */
@Injectable()
export class DelayHandlerSpans implements OnModuleInit {
  constructor(
    private readonly moduleRef: ModuleRef,
    @Inject(DELAY_TELEMETRY_OPTIONS) private readonly options: ResolvedDelayTelemetryOptions,
  ) {}

  onModuleInit(): void {
    if (!this.options.traces || !hasTracerProvider()) return;
    const registry = this.moduleRef.get(DelayHandlerRegistry, { strict: false });
    const tracer = trace.getTracer(this.options.instrumentationName);
    const traced = new WeakMap<RegisteredHandler, RegisteredHandler>();
    const lookup = registry.get.bind(registry);
    registry.get = (topic: string): RegisteredHandler | undefined => {
      const handler = lookup(topic);
      if (!handler) return undefined;
      let wrapped = traced.get(handler);
      if (!wrapped) {
        wrapped = { ...handler, invoke: (context) => runInSpan(tracer, handler, context) };
        traced.set(handler, wrapped);
      }
      return wrapped;
    };
  }
}

function runInSpan(tracer: Tracer, handler: RegisteredHandler, context: DelayContext): Promise<unknown> {
  const parent = parseTraceparent(context.trace);
  // Without a carried trace the run starts its own: the timer that fired it is not part of any request.
  const parentContext = parent ? trace.setSpanContext(ROOT_CONTEXT, parent) : ROOT_CONTEXT;
  const attributes = {
    [TOPIC_ATTRIBUTE]: context.topic,
    'delay.key': context.key,
    'delay.attempt': context.attempt,
    'delay.due_at': context.dueAt.toISOString(),
    'delay.handler': handler.name,
    ...(context.items ? { 'delay.batch.size': context.items.length } : {}),
  };
  return tracer.startActiveSpan(`delay ${context.topic}`, { kind: SpanKind.CONSUMER, attributes }, parentContext, async (span) => {
    const finish = once(span);
    // A run given up on (timeout, shutdown) ends its span then, whether or not the handler ever settles.
    const onAbort = (): void => finish(SpanStatusCode.ERROR, describeError(context.signal.reason));
    context.signal.addEventListener('abort', onAbort, { once: true });
    try {
      const result = await handler.invoke(context);
      finish(SpanStatusCode.OK);
      return result;
    } catch (error) {
      if (error instanceof Error) span.recordException(error);
      finish(SpanStatusCode.ERROR, describeError(error));
      throw error;
    } finally {
      context.signal.removeEventListener('abort', onAbort);
    }
  });
}

function once(span: Span): (code: SpanStatusCode, message?: string) => void {
  let ended = false;
  return (code, message) => {
    if (ended) return;
    ended = true;
    span.setStatus(message === undefined ? { code } : { code, message });
    span.end();
  };
}
