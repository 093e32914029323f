import { Module } from '@nestjs/common';
import { DelayAdminModule } from 'nestjs-delay/admin';
import { DelayHealthModule } from 'nestjs-delay/health';
import { DelayTelemetryModule } from 'nestjs-delay/telemetry';
import { AdminTokenGuard } from './admin-token.guard';
import { HealthController } from './health.controller';
import { MetricsController } from './metrics.controller';
import { PrometheusMetrics } from './prometheus-metrics';

/** Running the shop in production: GET /health, GET /metrics and the delay admin page at /admin/delays. */
@Module({
  imports: [
    DelayHealthModule,
    DelayTelemetryModule.forRoot(),
    DelayAdminModule.register({ path: 'admin/delays', title: 'Shop: delayed actions', writable: true, guards: [AdminTokenGuard] }),
  ],
  controllers: [HealthController, MetricsController],
  providers: [PrometheusMetrics],
})
export class OpsModule {}
