import { Controller, Get } from '@nestjs/common';
import { HealthCheck, HealthCheckResult, HealthCheckService, TypeOrmHealthIndicator } from '@nestjs/terminus';
import { DelayHealthIndicator } from 'nestjs-delay/health';

/**
 * 200 when the shop's database answers a ping within a second, the delay
 * driver answers within a second, Redis (if used) in under 250 ms, every
 * topic's consumer runs and no due action has waited unclaimed for over a
 * minute; 503 with the reason otherwise.
 */
@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly database: TypeOrmHealthIndicator,
    private readonly delay: DelayHealthIndicator,
  ) {}

  @Get()
  @HealthCheck()
  check(): Promise<HealthCheckResult> {
    return this.health.check([
      () => this.database.pingCheck('database', { timeout: 1_000 }),
      () => this.delay.isHealthy('delay', { timeout: '1s', maxRoundTrip: '250ms', maxLag: '1m' }),
    ]);
  }
}
