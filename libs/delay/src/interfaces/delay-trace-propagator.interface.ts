/**
 * Carries a trace from the code that schedules an action to its handler run,
 * possibly hours later on another instance. Provide one under the token
 * DELAY_TRACE_PROPAGATOR (the telemetry module does); without one, nothing
 * is carried and no tracing library is loaded.
 */
export interface DelayTracePropagator {
  /** The current trace context as a W3C traceparent, or undefined when there is none. */
  inject(): string | undefined;
}
