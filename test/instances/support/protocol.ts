// The messages between a test (the parent) and its worker processes, over
// Node's IPC channel. Both sides import these types.
import type { IfExists, OverlapPolicy } from 'nestjs-delay';

export interface WorkerConfig {
  /** Shown in reports: 'c1', 'producer', ... */
  readonly name: string;
  /** Default 'redis'. With 'postgres', `url` is the connection string and `prefix` the schema. */
  readonly driver?: 'redis' | 'postgres';
  readonly url: string;
  readonly prefix: string;
  /** The one topic this worker schedules on and (when consuming) handles. */
  readonly topic: string;
  /** A second topic, for collect: its handler reports each batch's items (see BatchItem for holds). */
  readonly batchTopic?: string;
  readonly consume: boolean;
  readonly lease?: string;
  /** postgres: the driver's wakeCheck. */
  readonly wakeCheck?: string;
  readonly concurrency?: number;
  readonly shutdownTimeout?: string;
  /** Reconnect to Redis this long after losing it (ioredis retryStrategy); default: ioredis's own backoff. */
  readonly reconnectDelayMs?: number;
  /** Run every action at once, whatever its payload's holdMs says. */
  readonly ignoreHolds?: boolean;
  /**
   * Default true: the worker exits as soon as app.close() resolved. False: it only lets go of its IPC channel,
   * and must then end by itself (nothing of the library may keep a closed application's process alive).
   */
  readonly exitAfterClose?: boolean;
  /** Spread the topics over this many shards (driver option `shards`). Default 1. */
  readonly shards?: number;
  /** Connect to a Redis Cluster through these nodes (an ioredis Cluster client) instead of `url`. */
  readonly cluster?: ReadonlyArray<{ readonly host: string; readonly port: number }>;
  /** The worker exits on its own after this long, whatever happens to the parent. Default 120 s. */
  readonly maxLifetimeMs?: number;
  /** A topic handled by @OnRecurring: its occurrences are reported as starts (key: the schedule's, armId: the scheduled instant). */
  readonly recurringTopic?: string;
  /** Schedules declared with @Recurring, one topic each (reported like recurringTopic's). */
  readonly declared?: ReadonlyArray<{ readonly topic: string; readonly every: number }>;
  /** Read by test/postgres/support/ledger-worker.ts only (a Fleet given that entry): its handler's ledger. */
  readonly ledger?: LedgerConfig;
}

/** The ledger worker's handler: one ledger row and one follow-up action per run, in the run's transaction or not. */
export interface LedgerConfig {
  /** The ledger table (key, attempt, pid, run), no unique key. */
  readonly table: string;
  /** The follow-up actions' topic (no handler: they stay pending). */
  readonly followUpTopic: string;
  /** The handler's option `transactional`. */
  readonly transactional: boolean;
  /** The handler's option `timeout`. */
  readonly timeout: string;
  /** Seeds the handler's sleep after its writes (0-200 ms). */
  readonly seed: number;
}

/** What the tests put in an action's payload. */
export interface ActionPayload {
  /** Identifies one arming (one schedule call); reschedule keeps it. */
  readonly armId?: string;
  /** The handler waits this long before it returns... */
  readonly holdMs?: number;
  /** ...on attempts up to this one (default: every attempt). */
  readonly holdAttempts?: number;
}

/** What the tests collect: a batch's handler holds while any of its items asks it to. */
export interface BatchItem {
  readonly id: string;
  /** The batch's handler waits this long before it returns... */
  readonly holdMs?: number;
  /** ...on attempts up to this one (default: every attempt). */
  readonly holdAttempts?: number;
}

export interface DueArg {
  /** Absolute due time, epoch ms. */
  readonly at?: number;
  /** Or a delay in ms. */
  readonly delay?: number;
}

export interface ScheduleItem extends DueArg {
  readonly key: string;
  readonly payload?: ActionPayload;
  readonly ifExists?: IfExists;
}

export type WorkerRequest =
  | ({ readonly op: 'schedule' } & ScheduleItem)
  | { readonly op: 'scheduleMany'; readonly items: readonly ScheduleItem[]; readonly parallel: number }
  | { readonly op: 'cancel'; readonly key: string }
  | ({ readonly op: 'reschedule'; readonly key: string } & DueArg)
  /** Replies with the size of the key's batch after the item joined (1: it opened a new batch). */
  | { readonly op: 'collect'; readonly key: string; readonly item: BatchItem; readonly windowMs: number; readonly maxItems?: number }
  /** Pending actions of the worker's topic, or of its batchTopic with `batch`. */
  | { readonly op: 'count'; readonly batch?: boolean }
  /** Pauses or resumes the worker's topic for every instance. */
  | { readonly op: 'pause' | 'resume' }
  /** On recurringTopic: every `every` ms, missed 'all', overlap 'allow' unless given; each run takes `holdMs` if given. */
  | { readonly op: 'upsertRecurring'; readonly key: string; readonly every: number; readonly overlap?: OverlapPolicy; readonly holdMs?: number }
  | { readonly op: 'removeRecurring'; readonly key: string }
  | { readonly op: 'close' };

export type WorkerCommand = WorkerRequest & { readonly id: number };

/** A pending action as a reply carries it. */
export interface ActionSnapshot {
  readonly key: string;
  readonly dueAt: number;
  readonly attempt: number;
  readonly state: string;
  readonly armId: string | undefined;
}

export type ReplyValue = null | boolean | number | ActionSnapshot;

export type WorkerReply =
  | { readonly type: 'reply'; readonly id: number; readonly ok: true; readonly value: ReplyValue; readonly issuedAt: number; readonly returnedAt: number }
  | { readonly type: 'reply'; readonly id: number; readonly ok: false; readonly error: string; readonly issuedAt: number; readonly returnedAt: number };

/** A handler run began (`at`: the worker's Date.now() as the handler was entered). */
export interface StartEvent {
  readonly type: 'start';
  readonly instance: string;
  readonly key: string;
  readonly armId: string | undefined;
  readonly attempt: number;
  /** Due time and claim time, from the DelayContext: both on the Redis server's clock. */
  readonly dueAt: number;
  readonly firedAt: number;
  readonly at: number;
  /** A batch's items (batchTopic runs only), as the handler received them. */
  readonly items?: readonly BatchItem[];
}

/** A handler run returned. */
export interface EndEvent {
  readonly type: 'end';
  readonly instance: string;
  readonly key: string;
  readonly armId: string | undefined;
  readonly attempt: number;
  readonly at: number;
  /** A batch's items (batchTopic runs only). */
  readonly items?: readonly BatchItem[];
}

export type WorkerMessage =
  | { readonly type: 'ready'; readonly instance: string; readonly pid: number }
  | StartEvent
  | EndEvent
  | WorkerReply;
