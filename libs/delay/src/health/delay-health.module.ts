import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { DelayHealthIndicator } from './delay-health.indicator';

/**
 * Provides DelayHealthIndicator for an app's terminus health controller.
 * Needs DelayModule in the app; brings TerminusModule and exports it, so
 * importing this module alone gives a controller HealthCheckService too.
 */
@Module({
  imports: [TerminusModule],
  providers: [DelayHealthIndicator],
  exports: [DelayHealthIndicator, TerminusModule],
})
export class DelayHealthModule {}
