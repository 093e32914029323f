// nestjs-delay/health: a @nestjs/terminus health indicator (an optional peer dependency).
export { DelayHealthModule } from './delay-health.module';
export { DelayHealthIndicator } from './delay-health.indicator';
export type { DelayHealthCheckOptions } from './delay-health-check-options.interface';
