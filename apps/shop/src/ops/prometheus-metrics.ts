import { Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { metrics } from '@opentelemetry/api';
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import { defaultResource, detectResources, envDetector, Resource, resourceFromAttributes } from '@opentelemetry/resources';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { IncomingMessage, ServerResponse } from 'node:http';

/** The service name the metrics carry (`service_name` on target_info) unless OTEL_SERVICE_NAME says otherwise. */
export const SHOP_SERVICE_NAME = 'nestjs-delay-shop';

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
  private readonly provider = new MeterProvider({ readers: [this.exporter], resource: shopResource() });
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

/**
 * The SDK's defaults (SDK name and version), named as the shop, then what
 * the standard variables say: OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES,
 * read when the shop starts, win.
 */
function shopResource(): Resource {
  return defaultResource()
    .merge(resourceFromAttributes({ 'service.name': SHOP_SERVICE_NAME }))
    .merge(detectResources({ detectors: [envDetector] }));
}
