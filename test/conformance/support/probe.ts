import { Injectable } from '@nestjs/common';
import { DelayContext, OnDelayExpired } from 'nestjs-delay';

/** The topics the conformance cases use, each with the handler options it needs. */
export const TOPIC = {
  /** Default handler options. */
  basic: 'conf.basic',
  /** 3 attempts, exponential backoff from 40 ms (40, then 80). */
  retry: 'conf.retry',
  /** One handler at a time. */
  serial: 'conf.serial',
  /** Two handlers at a time. */
  limited: 'conf.limited',
} as const;

export const RETRY_BACKOFF_MS = 40;
export const RETRY_ATTEMPTS = 3;
export const LIMITED_CONCURRENCY = 2;

/** One handler run, as the handler saw it. */
export interface Call {
  readonly topic: string;
  readonly key: string;
  readonly payload: unknown;
  readonly dueAt: number;
  readonly firedAt: number;
  readonly attempt: number;
  /** The driver's clock when the handler started (the virtual clock, or the system clock for Redis). */
  readonly seenAt: number;
}

export interface Settled extends Call {
  readonly outcome: 'resolved' | 'threw';
}

/** What a handler does for one key; by default it resolves at once. */
export type Behaviour = (call: Call) => Promise<void> | void;

/** A promise the test opens by hand, to hold a handler while it runs. */
export class Gate {
  readonly opened: Promise<void>;
  private release: () => void = () => undefined;

  constructor() {
    this.opened = new Promise<void>((resolve) => {
      this.release = resolve;
    });
  }

  open(): void {
    this.release();
  }
}

/**
 * The handlers of every conformance topic. It records each run, counts the
 * runs going on per topic, and lets a test script what the handler does per
 * (topic, key): throw, or wait on a gate.
 */
@Injectable()
export class Probe {
  readonly calls: Call[] = [];
  readonly settled: Settled[] = [];
  readonly maxRunning = new Map<string, number>();
  readonly gates: Gate[] = [];
  /** The driver's clock, set by the fixture. */
  now: () => number = () => Date.now();
  private readonly running = new Map<string, number>();
  private readonly behaviours = new Map<string, Behaviour>();

  @OnDelayExpired(TOPIC.basic)
  onBasic(context: DelayContext): Promise<void> {
    return this.run(context);
  }

  @OnDelayExpired(TOPIC.retry, { attempts: RETRY_ATTEMPTS, backoff: { type: 'exponential', delay: RETRY_BACKOFF_MS } })
  onRetry(context: DelayContext): Promise<void> {
    return this.run(context);
  }

  @OnDelayExpired(TOPIC.serial, { concurrency: 1 })
  onSerial(context: DelayContext): Promise<void> {
    return this.run(context);
  }

  @OnDelayExpired(TOPIC.limited, { concurrency: LIMITED_CONCURRENCY })
  onLimited(context: DelayContext): Promise<void> {
    return this.run(context);
  }

  /** Scripts the handler of (topic, key); replaces an earlier script. */
  when(topic: string, key: string, behaviour: Behaviour): void {
    this.behaviours.set(`${topic}\u0000${key}`, behaviour);
  }

  /** A gate that afterEach opens, so no handler is left hanging at shutdown. */
  gate(): Gate {
    const gate = new Gate();
    this.gates.push(gate);
    return gate;
  }

  openAllGates(): void {
    for (const gate of this.gates) gate.open();
  }

  callsOf(topic: string, key?: string): Call[] {
    return this.calls.filter((call) => call.topic === topic && (key === undefined || call.key === key));
  }

  settledOf(topic: string, key?: string): Settled[] {
    return this.settled.filter((call) => call.topic === topic && (key === undefined || call.key === key));
  }

  runningOf(topic: string): number {
    return this.running.get(topic) ?? 0;
  }

  private async run(context: DelayContext): Promise<void> {
    const call: Call = {
      topic: context.topic,
      key: context.key,
      payload: context.payload,
      dueAt: context.dueAt.getTime(),
      firedAt: context.firedAt.getTime(),
      attempt: context.attempt,
      seenAt: this.now(),
    };
    this.calls.push(call);
    const running = this.runningOf(call.topic) + 1;
    this.running.set(call.topic, running);
    this.maxRunning.set(call.topic, Math.max(running, this.maxRunning.get(call.topic) ?? 0));
    let outcome: Settled['outcome'] = 'threw';
    try {
      await this.behaviours.get(`${call.topic}\u0000${call.key}`)?.(call);
      outcome = 'resolved';
    } finally {
      this.running.set(call.topic, this.runningOf(call.topic) - 1);
      this.settled.push({ ...call, outcome });
    }
  }
}
