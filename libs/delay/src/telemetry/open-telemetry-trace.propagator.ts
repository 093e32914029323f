import { Injectable } from '@nestjs/common';
import { context, trace } from '@opentelemetry/api';
import { DelayTracePropagator } from '../interfaces/delay-trace-propagator.interface';
import { formatTraceparent } from './traceparent';

/**
 * Gives DelayService the active span of the code that schedules, as a
 * traceparent stored with the action. Read straight from the active span
 * rather than through the global propagator, so it works whichever
 * propagator (or none) the app configured.
 */
@Injectable()
export class OpenTelemetryTracePropagator implements DelayTracePropagator {
  inject(): string | undefined {
    const span = trace.getSpan(context.active());
    return span === undefined ? undefined : formatTraceparent(span.spanContext());
  }
}
