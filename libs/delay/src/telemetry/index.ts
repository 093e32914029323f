// nestjs-delay/telemetry: metrics and traces through @opentelemetry/api (an optional peer dependency).
export { DelayTelemetryModule } from './delay-telemetry.module';
export type { DelayTelemetryOptions } from './delay-telemetry-options.interface';
export { OpenTelemetryTracePropagator } from './open-telemetry-trace.propagator';
