/** What DelayTelemetryModule.forRoot turns on. */
export interface DelayTelemetryOptions {
  /** Counters, gauges and histograms through the global MeterProvider. Default true. */
  readonly metrics?: boolean;
  /** The trace carried from schedule to handler, and a span per handler run. Default true. */
  readonly traces?: boolean;
  /** Name of the meter and tracer, as exporters show it. Default 'nestjs-delay'. */
  readonly instrumentationName?: string;
}

export interface ResolvedDelayTelemetryOptions {
  readonly metrics: boolean;
  readonly traces: boolean;
  readonly instrumentationName: string;
}
