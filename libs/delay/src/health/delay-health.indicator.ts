import { Injectable } from '@nestjs/common';
import { HealthIndicatorResult, HealthIndicatorService } from '@nestjs/terminus';
import { DelayService } from '../delay.service';
import { DelayError } from '../errors/delay.error';
import { InvalidDelayOptionsError } from '../errors/invalid-delay-options.error';
import { DelayHealth } from '../interfaces/delay-health.interface';
import { Duration, parseDuration } from '../time/duration';
import { describeError } from '../utils/describe-error';
import { settleWithin } from '../utils/settle-within';
import { DelayHealthCheckOptions } from './delay-health-check-options.interface';

interface Thresholds {
  readonly timeoutMs: number;
  readonly maxRoundTripMs: number | undefined;
  readonly maxLagMs: number | undefined;
  readonly topics: ReadonlySet<string> | undefined;
  readonly requireConsumers: boolean;
}

/** What the check reports per topic, under `topics` in the indicator's details. */
interface TopicReport {
  readonly consuming: boolean;
  readonly consumerAlive: boolean;
  readonly lagMs: number;
  readonly paused: boolean;
}

/**
 * A @nestjs/terminus health indicator for DelayModule: the driver's store
 * answers (within `timeout`), its round trip, each consumed topic's consumer
 * is alive, and each topic's lag, against the thresholds given.
 *
 *     @Get('health') @HealthCheck()
 *     check() {
 *       return this.health.check([() => this.delay.isHealthy('delay', { maxLag: '30s', maxRoundTrip: '100ms' })]);
 *     }
 */
@Injectable()
export class DelayHealthIndicator {
  constructor(
    private readonly delay: DelayService,
    private readonly indicator: HealthIndicatorService,
  ) {}

  async isHealthy<const Key extends string = 'delay'>(key: Key = 'delay' as Key, options: DelayHealthCheckOptions = {}): Promise<HealthIndicatorResult<Key>> {
    const thresholds = resolveThresholds(options);
    const session = this.indicator.check(key);
    let health: DelayHealth;
    try {
      health = await settleWithin(this.delay.health(), thresholds.timeoutMs, () => new Error(`no answer from the delay driver within ${thresholds.timeoutMs} ms`));
    } catch (error) {
      return session.down({ reason: describeError(error) });
    }
    const problems: string[] = [];
    const topics: Record<string, TopicReport> = {};
    if (!health.up) problems.push(`the ${health.driver} driver's store does not answer`);
    if (thresholds.maxRoundTripMs !== undefined && health.roundTripMs > thresholds.maxRoundTripMs) {
      problems.push(`round trip ${health.roundTripMs} ms is over ${thresholds.maxRoundTripMs} ms`);
    }
    for (const topic of health.topics) {
      if (thresholds.topics && !thresholds.topics.has(topic.topic)) continue;
      topics[topic.topic] = { consuming: topic.consuming, consumerAlive: topic.consumerAlive, lagMs: topic.lagMs, paused: topic.paused };
      if (thresholds.requireConsumers && topic.consuming && !topic.consumerAlive) problems.push(`${topic.topic}: its consumer in this process is not running`);
      if (thresholds.maxLagMs !== undefined && !topic.paused && topic.lagMs > thresholds.maxLagMs) {
        problems.push(`${topic.topic}: lag ${topic.lagMs} ms is over ${thresholds.maxLagMs} ms`);
      }
    }
    const details = { driver: health.driver, roundTripMs: health.roundTripMs, topics, ...(health.warnings?.length ? { warnings: health.warnings } : {}) };
    return problems.length === 0 ? session.up(details) : session.down({ ...details, reason: problems.join('; ') });
  }
}

function resolveThresholds(options: DelayHealthCheckOptions): Thresholds {
  const problems: string[] = [];
  const duration = (value: Duration | undefined, name: string): number | undefined => {
    if (value === undefined) return undefined;
    try {
      return parseDuration(value);
    } catch (error) {
      problems.push(`${name}: ${error instanceof DelayError ? error.message : String(error)}`);
      return undefined;
    }
  };
  if (typeof options !== 'object' || options === null) throw new InvalidDelayOptionsError('delay health check options', ['options must be an object']);
  const timeoutMs = duration(options.timeout, 'timeout') ?? 1_000;
  if (timeoutMs < 1) problems.push('timeout must be at least 1ms');
  const topics = options.topics;
  if (topics !== undefined && (!Array.isArray(topics) || topics.some((topic) => typeof topic !== 'string'))) problems.push('topics must be an array of topic names');
  if (options.requireConsumers !== undefined && typeof options.requireConsumers !== 'boolean') problems.push('requireConsumers must be true or false');
  const thresholds: Thresholds = {
    timeoutMs,
    maxRoundTripMs: duration(options.maxRoundTrip, 'maxRoundTrip'),
    maxLagMs: duration(options.maxLag, 'maxLag'),
    topics: topics === undefined ? undefined : new Set(topics),
    requireConsumers: options.requireConsumers ?? true,
  };
  if (problems.length > 0) throw new InvalidDelayOptionsError('delay health check options', problems);
  return thresholds;
}
