import { Controller, Get, Req, Res } from '@nestjs/common';
import { IncomingMessage, ServerResponse } from 'node:http';
import { PrometheusMetrics } from './prometheus-metrics';

/** Prometheus scrapes this: the delay module's counters, gauges and histograms. */
@Controller('metrics')
export class MetricsController {
  constructor(private readonly prometheus: PrometheusMetrics) {}

  @Get()
  metrics(@Req() request: IncomingMessage, @Res() response: ServerResponse): void {
    this.prometheus.serve(request, response);
  }
}
