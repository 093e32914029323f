import { TraceFlags } from '@opentelemetry/api';
import { formatTraceparent, parseTraceparent } from './traceparent';

describe('traceparent', () => {
  const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
  const spanId = '00f067aa0ba902b7';

  it('formats a span context and reads it back as a remote parent', () => {
    const header = formatTraceparent({ traceId, spanId, traceFlags: TraceFlags.SAMPLED });
    expect(header).toBe(`00-${traceId}-${spanId}-01`);
    expect(parseTraceparent(header)).toEqual({ traceId, spanId, traceFlags: TraceFlags.SAMPLED, isRemote: true });
  });

  it('gives nothing for an invalid context or a malformed header', () => {
    expect(formatTraceparent({ traceId: '0'.repeat(32), spanId, traceFlags: 0 })).toBeUndefined();
    for (const bad of [undefined, '', `01-${traceId}-${spanId}-01`, `00-${traceId}-${spanId}`, `00-${'0'.repeat(32)}-${spanId}-01`, `00-${traceId.toUpperCase()}-${spanId}-01`]) {
      expect(parseTraceparent(bad)).toBeUndefined();
    }
  });
});
