import { Inject, Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { Attributes, BatchObservableResult, Counter, Histogram, metrics, ObservableGauge, ValueType } from '@opentelemetry/api';
import { Subscription } from 'rxjs';
import { DelayService } from '../delay.service';
import { DelayEvent, DelayEventType } from '../interfaces/delay-event.interface';
import { describeError } from '../utils/describe-error';
import { DELAY_TELEMETRY_OPTIONS, TOPIC_ATTRIBUTE } from './delay-telemetry.constants';
import { ResolvedDelayTelemetryOptions } from './delay-telemetry-options.interface';
import { hasMeterProvider } from './sdk-presence';

/** Which event bumps which counter; the counter is named `delay.actions.<name>`. */
const COUNTED: Partial<Record<DelayEventType, string>> = {
  scheduled: 'scheduled',
  cancelled: 'cancelled',
  fired: 'fired',
  completed: 'completed',
  failed: 'failed',
  retrying: 'retried',
  dead: 'dead',
  timedOut: 'timed_out',
  redriven: 'redriven',
};

/** Recurring events count occurrences (their `size`), not events. */
const COUNTED_RECURRING: Partial<Record<DelayEventType, string>> = {
  recurringFired: 'fired',
  recurringMissed: 'missed',
  recurringSkipped: 'skipped_overlap',
};

/** Separates the parts of a run's identity in one map key; U+001F is reserved in keys and topics. */
const SEP = '\u001f';

interface TopicAttributes {
  readonly topic: Attributes;
  readonly completed: Attributes;
  readonly failed: Attributes;
}

function runId(event: DelayEvent): string {
  return `${event.topic}${SEP}${event.key}${SEP}${event.attempt ?? 0}`;
}

/**
 * The library's metrics, through the OpenTelemetry API:
 *
 * - counters per topic (`delay.actions.scheduled`, `.cancelled`, `.fired`,
 *   `.completed`, `.failed`, `.retried`, `.dead`, `.timed_out`,
 *   `.redriven`), counted by this process from DelayService.events$;
 * - gauges per topic (`delay.store.waiting`, `.running`, `.dead`,
 *   `delay.topic.paused`, `delay.topic.lag`), read from the store when the
 *   SDK collects, so they are the same on every instance of a fleet;
 * - histograms `delay.action.lateness` (fired minus due) and
 *   `delay.handler.duration`, in seconds.
 */
@Injectable()
export class DelayMetrics implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger(DelayMetrics.name);
  private subscription: Subscription | undefined;
  private readonly counters = new Map<DelayEventType, Counter>();
  private lateness: Histogram | undefined;
  private duration: Histogram | undefined;
  /** Start of each handler run in flight (real time: handlers run in real time even under a VirtualClock). */
  private readonly started = new Map<string, number>();
  private readonly attributes = new Map<string, TopicAttributes>();
  private gauges: ObservableGauge[] = [];
  private readonly observe = (result: BatchObservableResult): Promise<void> => this.observeStore(result);

  constructor(
    private readonly delay: DelayService,
    @Inject(DELAY_TELEMETRY_OPTIONS) private readonly options: ResolvedDelayTelemetryOptions,
  ) {}

  onModuleInit(): void {
    if (!this.options.metrics || !hasMeterProvider()) return;
    const meter = metrics.getMeter(this.options.instrumentationName);
    for (const [type, name] of Object.entries(COUNTED) as Array<[DelayEventType, string]>) {
      this.counters.set(type, meter.createCounter(`delay.actions.${name}`, { description: `Actions ${name.replace('_', ' ')}, per topic, counted by this process`, valueType: ValueType.INT }));
    }
    for (const [type, name] of Object.entries(COUNTED_RECURRING) as Array<[DelayEventType, string]>) {
      const description = `Occurrences of recurring schedules ${name.replace('_', ' by ')}, per topic, counted by this process`;
      this.counters.set(type, meter.createCounter(`delay.recurring.${name}`, { description, valueType: ValueType.INT }));
    }
    this.lateness = meter.createHistogram('delay.action.lateness', { description: 'How long after its due time an action started running', unit: 's' });
    this.duration = meter.createHistogram('delay.handler.duration', { description: 'How long a handler run took, until it settled or timed out', unit: 's' });
    this.gauges = [
      meter.createObservableGauge('delay.store.waiting', { description: 'Pending actions not running, per topic, in the store', valueType: ValueType.INT }),
      meter.createObservableGauge('delay.store.running', { description: 'Actions whose handler runs now, per topic, in the store', valueType: ValueType.INT }),
      meter.createObservableGauge('delay.store.dead', { description: 'Dead actions waiting for a redrive, per topic, in the store', valueType: ValueType.INT }),
      meter.createObservableGauge('delay.topic.paused', { description: '1 while the topic is paused', valueType: ValueType.INT }),
      meter.createObservableGauge('delay.topic.lag', { description: 'How long the earliest due action has waited unclaimed', unit: 's' }),
    ];
    meter.addBatchObservableCallback(this.observe, this.gauges);
    this.subscription = this.delay.events$.subscribe((event) => this.count(event));
  }

  onApplicationShutdown(): void {
    this.subscription?.unsubscribe();
    if (this.gauges.length > 0) metrics.getMeter(this.options.instrumentationName).removeBatchObservableCallback(this.observe, this.gauges);
  }

  private count(event: DelayEvent): void {
    const attributes = this.attributesOf(event.topic);
    this.counters.get(event.type)?.add(event.size !== undefined && event.type.startsWith('recurring') ? event.size : 1, attributes.topic);
    if (event.type === 'fired') {
      if (event.dueAt) this.lateness?.record(Math.max(0, event.at.getTime() - event.dueAt.getTime()) / 1000, attributes.topic);
      this.started.set(runId(event), performance.now());
    } else if (event.type === 'completed' || event.type === 'failed') {
      const run = runId(event);
      const start = this.started.get(run);
      if (start === undefined) return;
      this.started.delete(run);
      this.duration?.record((performance.now() - start) / 1000, event.type === 'completed' ? attributes.completed : attributes.failed);
    }
  }

  /** One set of attribute objects per topic, made once: an event then allocates none. */
  private attributesOf(topic: string): TopicAttributes {
    let attributes = this.attributes.get(topic);
    if (!attributes) {
      attributes = {
        topic: { [TOPIC_ATTRIBUTE]: topic },
        completed: { [TOPIC_ATTRIBUTE]: topic, 'delay.outcome': 'completed' },
        failed: { [TOPIC_ATTRIBUTE]: topic, 'delay.outcome': 'failed' },
      };
      this.attributes.set(topic, attributes);
    }
    return attributes;
  }

  /** One read of the store per collection for every gauge; a store that does not answer reports nothing this time. */
  private async observeStore(result: BatchObservableResult): Promise<void> {
    const [waiting, running, dead, paused, lag] = this.gauges as [ObservableGauge, ObservableGauge, ObservableGauge, ObservableGauge, ObservableGauge];
    const [topics, health] = await Promise.allSettled([this.delay.topics(), this.delay.health()]);
    if (topics.status === 'fulfilled') {
      for (const topic of topics.value) {
        const attributes = { [TOPIC_ATTRIBUTE]: topic.topic };
        result.observe(waiting, topic.waiting, attributes);
        result.observe(running, topic.running, attributes);
        result.observe(dead, topic.dead, attributes);
        result.observe(paused, topic.paused ? 1 : 0, attributes);
      }
    } else {
      this.logger.warn(`Delay gauges not read: ${describeError(topics.reason)}`);
    }
    if (health.status === 'fulfilled') {
      for (const topic of health.value.topics) result.observe(lag, topic.lagMs / 1000, { [TOPIC_ATTRIBUTE]: topic.topic });
    }
  }
}
