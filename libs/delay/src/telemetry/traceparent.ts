import { isSpanContextValid, SpanContext, TraceFlags } from '@opentelemetry/api';

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** A span context as a W3C traceparent header value (version 00). */
export function formatTraceparent(context: SpanContext): string | undefined {
  if (!isSpanContextValid(context)) return undefined;
  const flags = (context.traceFlags & 0xff).toString(16).padStart(2, '0');
  return `00-${context.traceId}-${context.spanId}-${flags}`;
}

/** The span context a traceparent names, marked remote; undefined for anything malformed. */
export function parseTraceparent(value: string | undefined): SpanContext | undefined {
  if (typeof value !== 'string') return undefined;
  const match = TRACEPARENT.exec(value);
  if (!match) return undefined;
  const context: SpanContext = {
    traceId: match[1] as string,
    spanId: match[2] as string,
    traceFlags: parseInt(match[3] as string, 16) & TraceFlags.SAMPLED,
    isRemote: true,
  };
  return isSpanContextValid(context) ? context : undefined;
}
