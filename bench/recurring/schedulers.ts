// The two ways of creating a per-key recurring schedule that the recurring
// bench times: nestjs-delay's DelayService.upsertRecurring (through the Redis
// bench's DelayProducer: a real Nest application context, consume: false) and
// BullMQ's Queue.upsertJobScheduler.
import { Queue } from 'bullmq';
import { DelayProducer } from '../redis/producers';
import type { ContenderKind } from '../redis/protocol';
import { RECURRING_JOB, RECURRING_QUEUE, RECURRING_TOPIC } from './protocol';

export interface ScheduleSpec {
  /** A 5-field cron expression, UTC. */
  readonly cron: string;
  /** nestjs-delay's per-schedule jitter, ms (0: none, the library's default). BullMQ has none. */
  readonly jitterMs: number;
}

export interface RecurringScheduler {
  readonly kind: ContenderKind;
  readonly label: string;
  upsert(key: string, spec: ScheduleSpec): Promise<void>;
  close(): Promise<void>;
}

/** The occurrences' payload, the same for both: which user the schedule is for. */
function payloadOf(key: string): { userId: string } {
  return { userId: key };
}

export class DelayRecurringScheduler implements RecurringScheduler {
  readonly kind = 'delay';
  readonly label = 'nestjs-delay upsertRecurring';

  private constructor(private readonly producer: DelayProducer) {}

  static async create(url: string): Promise<DelayRecurringScheduler> {
    return new DelayRecurringScheduler(await DelayProducer.create(url));
  }

  async upsert(key: string, { cron, jitterMs }: ScheduleSpec): Promise<void> {
    await this.producer.service.upsertRecurring(RECURRING_TOPIC, key, { cron, payload: payloadOf(key), ...(jitterMs > 0 ? { jitter: jitterMs } : {}) });
  }

  async close(): Promise<void> {
    await this.producer.close();
  }
}

export class BullmqRecurringScheduler implements RecurringScheduler {
  readonly kind = 'bullmq';
  readonly label = 'BullMQ upsertJobScheduler';
  private readonly queue: Queue;

  constructor(url: string) {
    const { hostname, port } = new URL(url);
    this.queue = new Queue(RECURRING_QUEUE, { connection: { host: hostname, port: Number(port) } });
  }

  async upsert(key: string, { cron, jitterMs }: ScheduleSpec): Promise<void> {
    if (jitterMs > 0) throw new Error('BullMQ job schedulers have no per-schedule jitter');
    await this.queue.upsertJobScheduler(key, { pattern: cron, tz: 'UTC' }, { name: RECURRING_JOB, data: payloadOf(key) });
  }

  async close(): Promise<void> {
    await this.queue.close();
  }
}
