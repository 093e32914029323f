import { Injectable } from '@nestjs/common';
import { DelayContext, OnDelayExpired } from 'nestjs-delay';

/** The topics of the batching suite. */
export const BATCH_TOPIC = {
  /** One attempt: a failure dead-letters the batch at once. */
  plain: 'batching.plain',
  /** Two attempts, a fixed backoff of RETRY_BACKOFF_MS between them. */
  retry: 'batching.retry',
  /** One handler at a time in this process. */
  serial: 'batching.serial',
  /** The multi-instance fan-in. */
  fanIn: 'batching.fan-in',
} as const;

export const RETRY_ATTEMPTS = 2;
// Longer than the few calls a case makes between an attempt's failure and its retry, even on a busy machine.
export const RETRY_BACKOFF_MS = 1_000;

/** One handler run, as the handler saw it. */
export interface BatchRun {
  readonly topic: string;
  readonly key: string;
  readonly items: readonly unknown[];
  readonly attempt: number;
  readonly dueAt: number;
  readonly firedAt: number;
}

/** What a handler does for a key: resolve (the default), throw, or wait. */
export type Reaction = (run: BatchRun) => void | Promise<void>;

/** A promise a test resolves by hand, to keep a handler running. */
export class Latch {
  readonly released: Promise<void>;
  private resolve: () => void = () => undefined;

  constructor() {
    this.released = new Promise<void>((resolve) => {
      this.resolve = resolve;
    });
  }

  release(): void {
    this.resolve();
  }
}

/**
 * The handlers of every batching topic. Each run is recorded when the handler
 * starts (before its reaction), so `runs` is in start order.
 */
@Injectable()
export class BatchRecorder {
  readonly runs: BatchRun[] = [];
  /** Runs that started and have not finished yet. */
  active = 0;
  private readonly reactions = new Map<string, Reaction>();
  private readonly latches: Latch[] = [];

  @OnDelayExpired(BATCH_TOPIC.plain, { attempts: 1 })
  onPlain(context: DelayContext): Promise<void> {
    return this.record(context);
  }

  @OnDelayExpired(BATCH_TOPIC.retry, { attempts: RETRY_ATTEMPTS, backoff: { type: 'fixed', delay: RETRY_BACKOFF_MS } })
  onRetry(context: DelayContext): Promise<void> {
    return this.record(context);
  }

  @OnDelayExpired(BATCH_TOPIC.serial, { attempts: 1, concurrency: 1 })
  onSerial(context: DelayContext): Promise<void> {
    return this.record(context);
  }

  @OnDelayExpired(BATCH_TOPIC.fanIn, { attempts: 1, concurrency: 4 })
  onFanIn(context: DelayContext): Promise<void> {
    return this.record(context);
  }

  /** Scripts the handler of (topic, key). */
  react(topic: string, key: string, reaction: Reaction): void {
    this.reactions.set(`${topic}\u0000${key}`, reaction);
  }

  /** A latch released at the latest when the app shuts down. */
  latch(): Latch {
    const latch = new Latch();
    this.latches.push(latch);
    return latch;
  }

  releaseAll(): void {
    for (const latch of this.latches) latch.release();
  }

  runsOf(topic: string, key?: string): BatchRun[] {
    return this.runs.filter((run) => run.topic === topic && (key === undefined || run.key === key));
  }

  /** The items of each run of (topic, key), in start order. */
  batchesOf(topic: string, key: string): Array<readonly unknown[]> {
    return this.runsOf(topic, key).map((run) => run.items);
  }

  private async record(context: DelayContext): Promise<void> {
    if (!context.items) throw new Error(`batching handler got a single action for "${context.key}", not a batch`);
    const run: BatchRun = {
      topic: context.topic,
      key: context.key,
      items: context.items,
      attempt: context.attempt,
      dueAt: context.dueAt.getTime(),
      firedAt: context.firedAt.getTime(),
    };
    this.runs.push(run);
    this.active++;
    try {
      await this.reactions.get(`${run.topic}\u0000${run.key}`)?.(run);
    } finally {
      this.active--;
    }
  }
}
