import { Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { metrics } from '@opentelemetry/api';
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { IncomingMessage, ServerResponse } from 'node:http';

/**
 * The OpenTelemetry metrics SDK with a Prometheus reader, registered as the
 * global MeterProvider when this provider is built: before any module's
 * init, which is when DelayTelemetryModule looks for an SDK. The exporter's
 * own HTTP server stays off; GET /metrics serves its text instead.
 */
@Injectable()
export class PrometheusMetrics implements OnApplicationShutdown {
  private readonly logger = new Logger(PrometheusMetrics.name);
  private readonly exporter = new PrometheusExporter({ preventServerStart: true });
  private readonly provider = new MeterProvider({ readers: [this.exporter] });
  private readonly registered: boolean;

  constructor() {
    this.registered = metrics.setGlobalMeterProvider(this.provider);
    if (!this.registered) this.logger.warn('Another MeterProvider is registered in this process; /metrics shows only what is recorded through it');
  }

  /** Writes the current metrics in Prometheus's text format. */
  serve(request: IncomingMessage, response: ServerResponse): void {
    this.exporter.getMetricsRequestHandler(request, response);
  }

  async onApplicationShutdown(): Promise<void> {
    await this.provider.shutdown();
    if (this.registered) metrics.disable();
  }
}
