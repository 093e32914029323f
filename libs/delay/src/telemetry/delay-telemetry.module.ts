import { DynamicModule, Global, Module } from '@nestjs/common';
import { DELAY_TRACE_PROPAGATOR } from '../delay.constants';
import { InvalidDelayOptionsError } from '../errors/invalid-delay-options.error';
import { DelayHandlerSpans } from './delay-handler-spans';
import { DelayMetrics } from './delay-metrics';
import { DELAY_TELEMETRY_OPTIONS } from './delay-telemetry.constants';
import { DelayTelemetryOptions, ResolvedDelayTelemetryOptions } from './delay-telemetry-options.interface';
import { OpenTelemetryTracePropagator } from './open-telemetry-trace.propagator';
import { hasTracerProvider } from './sdk-presence';
import { quoteInput } from '../utils/quote-input';

/**
 * Metrics and traces of DelayModule through the OpenTelemetry API. Import it
 * next to DelayModule; register your OpenTelemetry SDK before the app is
 * created (the module looks for it once, at startup, and does nothing
 * without one):
 *
 *     imports: [DelayModule.forRoot({...}), DelayTelemetryModule.forRoot()]
 *
 * Global, so DelayService finds the trace propagator it provides.
 */
@Global()
@Module({})
export class DelayTelemetryModule {
  static forRoot(options: DelayTelemetryOptions = {}): DynamicModule {
    const resolved = resolveTelemetryOptions(options);
    // Decided when the app is created, after the SDK has been registered: without a TracerProvider
    // DelayService gets no propagator, so a schedule does not even look for an active span.
    const propagator = resolved.traces
      ? [{ provide: DELAY_TRACE_PROPAGATOR, useFactory: (): OpenTelemetryTracePropagator | null => (hasTracerProvider() ? new OpenTelemetryTracePropagator() : null) }]
      : [];
    return {
      module: DelayTelemetryModule,
      providers: [{ provide: DELAY_TELEMETRY_OPTIONS, useValue: resolved }, DelayMetrics, DelayHandlerSpans, ...propagator],
      exports: propagator.length > 0 ? [DELAY_TRACE_PROPAGATOR] : [],
    };
  }
}

function resolveTelemetryOptions(options: DelayTelemetryOptions): ResolvedDelayTelemetryOptions {
  const problems: string[] = [];
  if (typeof options !== 'object' || options === null) throw new InvalidDelayOptionsError('DelayTelemetryModule options', ['options must be an object']);
  for (const flag of ['metrics', 'traces'] as const) {
    if (options[flag] !== undefined && typeof options[flag] !== 'boolean') problems.push(`${flag} must be true or false, got ${quoteInput(options[flag])}`);
  }
  const name = options.instrumentationName ?? 'nestjs-delay';
  if (typeof name !== 'string' || name.trim() === '') problems.push('instrumentationName must be a non-empty string');
  if (problems.length > 0) throw new InvalidDelayOptionsError('DelayTelemetryModule options', problems);
  return { metrics: options.metrics ?? true, traces: options.traces ?? true, instrumentationName: name };
}
